package rolling

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Details is what a rolling compaction entry stores in `details`. pi ignores
// everything but readFiles/modifiedFiles, which it merges into its file
// tracking at its next compaction (fromHook is false), so they carry the
// cumulative lists exactly as pi's own compaction would
// (docs/design/pi-baseline.md): files read or changed by the evicted tool
// calls plus the lists of the compaction this one replaces.
type Details struct {
	Mode                  string `json:"mode"` // "rolling"
	EvictedCount          int    `json:"evictedCount"`
	EvictedTokens         int    `json:"evictedTokens"`
	KeptTokens            int    `json:"keptTokens"`
	FirstEvictedTimestamp string `json:"firstEvictedTimestamp,omitempty"`
	LastEvictedTimestamp  string `json:"lastEvictedTimestamp,omitempty"`
	// Ranges lists every span of history that is outside the window, oldest
	// first, this roll's last: earlier rolls' ranges are carried over when
	// their note is evicted, and history an earlier (summarising) compaction
	// covered appears as one range with Summarized set.
	Ranges        []Range  `json:"ranges"`
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
}

// Range is one span of evicted history.
type Range struct {
	First     string `json:"first,omitempty"` // ISO-8601 UTC
	Last      string `json:"last,omitempty"`
	Messages  int    `json:"messages"`
	Tokens    int    `json:"tokens"`
	FirstLine int    `json:"firstLine,omitempty"`
	LastLine  int    `json:"lastLine,omitempty"`
	// Summarized: this history was summarised by a compaction (not a roll)
	// whose summary has now been evicted too.
	Summarized bool `json:"summarized,omitempty"`
	// Rolls counts rolls merged into this range (ranges are capped).
	Rolls int `json:"rolls,omitempty"`
}

// maxRanges caps the carried ranges so the note cannot grow without bound
// (summaries that grow at every compaction are a known failure,
// docs/design/pi-baseline.md); the oldest are merged.
const maxRanges = 20

// formatTime formats a time like pi's entry timestamps.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// previousRanges returns the ranges an evicted compaction summary stood for:
// a rolling note's own ranges, or for a summarising compaction one range
// spanning the messages it summarised (the path before its kept region).
func previousRanges(s *transcript.Session, c *transcript.Context, prev *Details) []Range {
	if prev != nil && prev.Mode == "rolling" {
		return append([]Range(nil), prev.Ranges...)
	}
	if c.Compaction == nil {
		return nil
	}
	end := c.CompactionIndex
	if c.KeptStart >= 0 {
		end = c.KeptStart
	}
	var sp rangeBuilder
	for _, e := range c.Path[:end] {
		if e.Role() == "" || e.Type() == "compaction" {
			continue
		}
		sp.add(e, e.Tokens())
	}
	if sp.Messages == 0 {
		return nil
	}
	r := sp.result()
	r.Summarized = true
	return []Range{r}
}

// rangeBuilder accumulates messages into a Range, bounding them in time.
type rangeBuilder struct {
	Range
	first, last time.Time
}

func (s *rangeBuilder) add(e *transcript.Entry, tokens int) {
	s.Messages++
	s.Tokens += tokens
	if s.FirstLine == 0 {
		s.FirstLine = e.Line
	}
	s.LastLine = e.Line
	if ts := e.Time(); !ts.IsZero() {
		if s.first.IsZero() || ts.Before(s.first) {
			s.first = ts
		}
		if ts.After(s.last) {
			s.last = ts
		}
	}
}

func (s *rangeBuilder) result() Range {
	r := s.Range
	r.First, r.Last = formatTime(s.first), formatTime(s.last)
	return r
}

// capRanges merges the oldest ranges until at most maxRanges remain.
func capRanges(rs []Range) []Range {
	for len(rs) > maxRanges {
		a, b := rs[0], rs[1]
		m := Range{First: a.First, Last: b.Last, Messages: a.Messages + b.Messages, Tokens: a.Tokens + b.Tokens,
			FirstLine: a.FirstLine, LastLine: b.LastLine, Summarized: a.Summarized || b.Summarized,
			Rolls: max(a.Rolls, 1) + max(b.Rolls, 1)}
		if m.First == "" {
			m.First = b.First
		}
		if m.Last == "" {
			m.Last = a.Last
		}
		rs = append([]Range{m}, rs[2:]...)
	}
	return rs
}

// decodeDetails reads a compaction's details leniently: unknown shapes give
// nil (pi's own details have only the file lists).
func decodeDetails(raw json.RawMessage) *Details {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var d Details
	if json.Unmarshal(raw, &d) != nil {
		// Fall back to the file lists alone.
		var f struct {
			ReadFiles     []string `json:"readFiles"`
			ModifiedFiles []string `json:"modifiedFiles"`
		}
		if json.Unmarshal(raw, &f) != nil {
			return nil
		}
		return &Details{ReadFiles: f.ReadFiles, ModifiedFiles: f.ModifiedFiles}
	}
	return &d
}

// fileOps computes pi's cumulative file lists (docs/design/pi-baseline.md) for
// the evicted messages: compaction.FileOps's rule for the tool calls, plus
// the previous compaction's lists when pi would merge them (fromHook false).
func fileOps(s *transcript.Session, evicted []Message, prev *Details, prevFromHook bool) (read, modified []string, err error) {
	ops := compaction.NewFileOps()
	if prev != nil && !prevFromHook {
		for _, f := range prev.ReadFiles {
			ops.Read[f] = true
		}
		for _, f := range prev.ModifiedFiles {
			ops.Edited[f] = true
		}
	}
	for _, m := range evicted {
		if m.Role != "assistant" || len(m.Entry.ToolCallIDs) == 0 {
			continue
		}
		msg, err := s.Message(m.Entry)
		if err != nil {
			return nil, nil, err
		}
		if msg != nil {
			ops.AddMessage(msg)
		}
	}
	read, modified = ops.Lists()
	return read, modified, nil
}

// noteInput is what the eviction note says.
type noteInput struct {
	File string
	// Project is the session's working directory (its header's cwd; ""
	// when it has none): the note's search hint for earlier sessions.
	Project       string
	ContextWindow int
	Target        float64
	This          Range
	Earlier       []Range
}

// renderNote writes the eviction note: what left the window, when, and how
// to get it back. It is read by the agent (wrapped in pi's compaction
// preamble), so it is short and concrete.
func renderNote(in noteInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Context rolled by ctxtool] To keep this conversation within about %d%% of the %s-token context window, its oldest messages were taken out of the context. They were not summarized; they are still in the session file and in the recall index.\n",
		int(in.Target*100+0.5), thousands(in.ContextWindow))
	fmt.Fprintf(&b, "Removed now: %s (about %s tokens)%s%s.\n", plural(in.This.Messages, "message"),
		thousands(in.This.Tokens), span(in.This), lines(in.This))
	var rolled, summarized Range
	rolls := 0
	for _, r := range in.Earlier {
		acc := &rolled
		if r.Summarized {
			acc = &summarized
		} else {
			rolls += max(r.Rolls, 1)
		}
		if acc.Messages == 0 && acc.First == "" {
			acc.First, acc.FirstLine = r.First, r.FirstLine
		}
		acc.Messages += r.Messages
		acc.Tokens += r.Tokens
		if r.Last != "" {
			acc.Last = r.Last
		}
		if r.LastLine > 0 {
			acc.LastLine = r.LastLine
		}
	}
	if summarized.Messages > 0 {
		fmt.Fprintf(&b, "Also out of the window: %s (%s) that an earlier compaction had summarized; that summary was removed now as well.\n",
			plural(summarized.Messages, "older message"), strings.TrimLeft(span(summarized)+lines(summarized), ", "))
	}
	if rolled.Messages > 0 {
		fmt.Fprintf(&b, "Removed by %s: %s (about %s tokens)%s%s.\n", plural(rolls, "earlier roll"),
			plural(rolled.Messages, "message"), thousands(rolled.Tokens), span(rolled), lines(rolled))
	}
	fmt.Fprintf(&b, "If you need anything from that time (a decision, a file, an error, what the user asked), search for it instead of guessing: ctxtool search \"<keywords>\" --session %s (in OpenClaw: memory_search).", in.File)
	if in.Project != "" {
		fmt.Fprintf(&b, " Earlier sessions of this project: ctxtool search \"<keywords>\" --project %s.", in.Project)
	}
	return b.String()
}

func span(r Range) string {
	switch {
	case r.First != "" && r.Last != "" && r.First != r.Last:
		return " from " + r.First + " to " + r.Last
	case r.First != "":
		return " at " + r.First
	case r.Last != "":
		return " until " + r.Last
	}
	return ""
}

func lines(r Range) string {
	if r.FirstLine <= 0 {
		return ""
	}
	if r.LastLine > r.FirstLine {
		return fmt.Sprintf(", file lines %d-%d", r.FirstLine, r.LastLine)
	}
	return fmt.Sprintf(", file line %d", r.FirstLine)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return thousands(n) + " " + word + "s"
}

// thousands formats 183616 as 183,616.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// heuristicTokens is pi's estimate of a text: ceil(UTF-16 units / 4).
func heuristicTokens(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return (n + 3) / 4
}
