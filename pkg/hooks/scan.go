package hooks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// The incremental scan: every hook reads only the transcript lines
// appended since the last hook of the same session (scan.json keeps the
// offset), turns them into facts with pkg/facts, and keeps the facts of
// the history since the agent's last compaction. When it meets the
// agent's compaction (Claude Code's compact_boundary and the summary
// message after it; Codex's `compacted` item) it audits that summary
// against the facts it replaced and keeps what the summary dropped until a
// SessionStart or UserPromptSubmit hands it back to the agent.

// maxFacts bounds the facts kept between compactions; the least needed
// (numbers and identifiers before sentences, older before newer) go first.
const maxFacts = 600

// A hook must answer fast whatever the transcript's size, so the scan is
// bounded: a session first seen when its transcript is over firstTail is
// read from its last firstTail bytes only (the older history is behind the
// agent's earlier compactions, or lost to this session's audit: Partial
// says so), and each hook scans for at most scanBudget, the rest waiting
// for the next hook (Behind).
const (
	firstTail  = 8 << 20
	scanBudget = 50 * time.Millisecond
)

// maxLine bounds one transcript line the scan parses (a pasted file or a
// huge tool result); longer lines are skipped whole, counted in Skipped.
const maxLine = 8 << 20

// scanState is scan.json.
type scanState struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Line   int    `json:"line"`
	// Facts are those of the history since the last compaction.
	Facts []facts.Fact `json:"facts"`
	// Cut are the facts of the history the last compaction summarized,
	// kept until its summary is seen and audited.
	Cut       []facts.Fact `json:"cut,omitempty"`
	CutLine   int          `json:"cutLine,omitempty"`
	CutTokens int          `json:"cutPreTokens,omitempty"`
	// Dropped are the facts the last summary left out (the audit).
	Dropped []facts.Fact `json:"dropped,omitempty"`
	// Audited counts the summaries audited in this session.
	Audited int `json:"audited,omitempty"`
	// Delivered: Dropped has been handed back to the agent since the
	// audit (SessionStart or UserPromptSubmit).
	Delivered bool `json:"delivered,omitempty"`
	// PreTokens are the preTokens of the agent's compactions (Claude
	// Code's compact_boundary), the evidence of its auto-compact point.
	PreTokens []PreTokens `json:"preTokens,omitempty"`
	// Usage is the last context size the agent reported (its last
	// answer's usage: input + cache read + cache creation).
	Usage int `json:"usage,omitempty"`
	// Window and Limit are Codex's model_context_window and auto-compact
	// limit when the rollout records them.
	Window int `json:"window,omitempty"`
	Limit  int `json:"limit,omitempty"`
	// PreAudited: PostCompact audited the summary before the transcript
	// held it; the summary line, when it comes, is not audited again.
	PreAudited bool `json:"preAudited,omitempty"`
	// CutPending: that audit took the facts so far as the cut; the
	// boundary, when it comes, only starts the facts afresh.
	CutPending bool `json:"cutPending,omitempty"`
	// Compacting: a PreCompact came and its summary is not audited yet.
	Compacting bool `json:"compacting,omitempty"`
	// Partial: the scan started at the transcript's tail (firstTail).
	Partial bool `json:"partial,omitempty"`
	// Behind: the last scan stopped at its time budget before the end.
	Behind bool `json:"behind,omitempty"`
	// Skipped counts lines too long or not JSON (the scan goes on).
	Skipped int `json:"skipped,omitempty"`
}

// PreTokens is one compaction's size when it started.
type PreTokens struct {
	Trigger string `json:"trigger"`
	Tokens  int    `json:"tokens"`
	Line    int    `json:"line"`
}

// line is the part of a Claude Code or Codex transcript line the scan reads.
type line struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Message          json.RawMessage `json:"message"`
	CompactMetadata  *struct {
		Trigger   string `json:"trigger"`
		PreTokens int    `json:"preTokens"`
	} `json:"compactMetadata"`
	Payload json.RawMessage `json:"payload"`
}

type ccMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *struct {
		Input         int `json:"input_tokens"`
		CacheRead     int `json:"cache_read_input_tokens"`
		CacheCreation int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

type codexPayload struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
	Message   string          `json:"message"`
	History   []codexPayload  `json:"replacement_history"`
	Info      *struct {
		Last *struct {
			Input int `json:"input_tokens"`
		} `json:"last_token_usage"`
		Window int `json:"model_context_window"`
	} `json:"info"`
	Window int `json:"model_context_window"`
	Limit  int `json:"model_auto_compact_token_limit"`
}

// advance reads the lines appended since st.Offset (complete lines only)
// and applies them to st. A file that shrank, or is another file, is read
// again from its start with the facts reset.
func advance(st *scanState, path string) error {
	return advanceFor(st, path, scanBudget)
}

func advanceFor(st *scanState, path string, budget time.Duration) error {
	began := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st.File != path || fi.Size() < st.Offset {
		*st = scanState{File: path}
	}
	if st.Offset == 0 && st.Line == 0 && fi.Size() > firstTail {
		st.Offset, st.Partial = fi.Size()-firstTail, true
	}
	if _, err := f.Seek(st.Offset, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 256<<10)
	if st.Partial && st.Line == 0 {
		// Started mid-file: skip to the next line's start.
		skip, err := r.ReadBytes('\n')
		if err != nil {
			return nil // no complete line yet
		}
		st.Offset += int64(len(skip))
	}
	st.Behind = false
	var groups [][]facts.Fact
	flush := func() {
		if len(groups) > 0 {
			st.Facts = capFacts(facts.Merge(append([][]facts.Fact{st.Facts}, groups...)))
			groups = nil
		}
	}
	for {
		raw, err := readLine(r)
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			break // still being written: the next hook reads it
		}
		if len(raw) > 0 {
			st.Offset += int64(len(raw))
			st.Line++
			if len(raw) > maxLine {
				st.Skipped++
			} else if cut := apply(st, bytes.TrimSpace(raw), &groups); cut {
				flush()
				if st.CutPending {
					st.CutPending, st.Facts = false, nil
				} else {
					st.Cut, st.CutLine, st.Facts = st.Facts, st.Line, nil
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if st.Line%64 == 0 && time.Since(began) > budget {
			st.Behind = true
			break
		}
	}
	flush()
	return nil
}

// readLine reads one line, newline included; a line over maxLine is read
// through but returned as maxLine+1 bytes (enough to count it).
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf) <= maxLine {
			buf = append(buf, chunk...)
		} else {
			buf = append(buf[:maxLine+1], chunk[len(chunk)-1:]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}

// apply applies one line; it reports true when the line is a compaction
// cut (the facts so far are the summarized history).
func apply(st *scanState, raw []byte, groups *[][]facts.Fact) bool {
	if len(raw) == 0 {
		return false
	}
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		st.Skipped++
		return false
	}
	add := func(text, role string, isErr bool) {
		if strings.TrimSpace(text) == "" {
			return
		}
		// Redacted before the facts are taken: they are cached in the
		// state dir and handed back to the agent.
		*groups = append(*groups, facts.Scan(facts.Source{Text: secrets.Redact(text), Line: st.Line, Role: role, IsError: isErr}))
	}
	switch l.Type {
	case "system":
		if l.Subtype == "compact_boundary" {
			if l.CompactMetadata != nil && l.CompactMetadata.PreTokens > 0 {
				st.PreTokens = append(st.PreTokens, PreTokens{Trigger: l.CompactMetadata.Trigger, Tokens: l.CompactMetadata.PreTokens, Line: st.Line})
				if len(st.PreTokens) > 20 {
					st.PreTokens = st.PreTokens[len(st.PreTokens)-20:]
				}
				st.CutTokens = l.CompactMetadata.PreTokens
			}
			return true
		}
	case "user", "assistant":
		var m ccMessage
		if json.Unmarshal(l.Message, &m) != nil {
			return false
		}
		if m.Usage != nil && l.Type == "assistant" {
			st.Usage = m.Usage.Input + m.Usage.CacheRead + m.Usage.CacheCreation
		}
		if l.IsCompactSummary {
			if st.PreAudited {
				st.PreAudited, st.Cut = false, nil
			} else {
				audit(st, contentText(m.Content))
			}
			return false
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			add(s, l.Type, false)
			return false
		}
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			return false
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				add(b.Text, l.Type, false)
			case "tool_use":
				add(string(b.Input), "toolCall", false)
			case "tool_result":
				add(contentText(b.Content), "toolResult", b.IsError)
			}
		}
	case "response_item":
		var p codexPayload
		if json.Unmarshal(l.Payload, &p) != nil {
			return false
		}
		switch p.Type {
		case "message":
			if p.Role == "user" || p.Role == "assistant" {
				t := contentText(p.Content)
				if p.Role == "user" && strings.HasPrefix(strings.TrimSpace(t), "<") {
					return false // environment_context, AGENTS.md: not the conversation
				}
				add(t, p.Role, false)
			}
		case "function_call":
			add(p.Arguments, "toolCall", false)
		case "custom_tool_call":
			add(p.Input, "toolCall", false)
		case "function_call_output", "custom_tool_call_output":
			add(contentText(p.Output), "toolResult", false)
		}
	case "event_msg":
		var p codexPayload
		if json.Unmarshal(l.Payload, &p) == nil && p.Type == "token_count" && p.Info != nil {
			if p.Info.Last != nil {
				st.Usage = p.Info.Last.Input
			}
			if p.Info.Window > 0 {
				st.Window = p.Info.Window
			}
		}
	case "turn_context":
		var p codexPayload
		if json.Unmarshal(l.Payload, &p) == nil {
			if p.Window > 0 {
				st.Window = p.Window
			}
			if p.Limit > 0 {
				st.Limit = p.Limit
			}
		}
	case "compacted":
		var p codexPayload
		if json.Unmarshal(l.Payload, &p) != nil {
			return false
		}
		// The summary is the message plus what Codex kept verbatim (the
		// user's messages): the facts of both are not dropped.
		var sb strings.Builder
		sb.WriteString(p.Message)
		for _, h := range p.History {
			sb.WriteString("\n")
			sb.WriteString(contentText(h.Content))
		}
		// Codex writes no boundary line: the cut is here.
		st.Cut, st.CutLine, st.Facts = st.Facts, st.Line, nil
		*groups = nil
		audit(st, sb.String())
		st.PreAudited, st.CutPending = false, false
		return false
	}
	return false
}

// audit records which facts of the last cut the agent's summary dropped.
func audit(st *scanState, summary string) {
	if len(st.Cut) == 0 && summary == "" {
		return
	}
	// The facts hold markers where secrets were: so must the summary.
	st.Dropped = facts.Missing(rank(st.Cut), secrets.Redact(summary))
	st.Cut, st.Compacting = nil, false
	st.Audited++
	st.Delivered = false
}

// contentText is the text of a content value: a string, or an array of
// blocks with text (text, input_text, output_text, nested tool_result
// content).
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Text != "" {
			parts = append(parts, b.Text)
		} else if len(b.Content) > 0 {
			parts = append(parts, contentText(b.Content))
		}
	}
	return strings.Join(parts, "\n")
}

// rank returns fs most needed first (a copy), in the summariser's ranking
// (facts.Tier), so the instructions ask first for what a summary keeps first.
func rank(fs []facts.Fact) []facts.Fact {
	out := append([]facts.Fact(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ta, tb := facts.Tier(a), facts.Tier(b); ta != tb {
			return ta < tb
		}
		return a.Line > b.Line
	})
	return out
}

// capFacts keeps at most maxFacts, the most needed, in their order.
func capFacts(fs []facts.Fact) []facts.Fact {
	if len(fs) <= maxFacts {
		return fs
	}
	keep := map[string]bool{}
	for _, f := range rank(fs)[:maxFacts] {
		keep[f.Key()] = true
	}
	out := fs[:0:0]
	for _, f := range fs {
		if keep[f.Key()] {
			out = append(out, f)
		}
	}
	return out
}

// describe is one fact as a list item: the sentence for the sentence
// classes, the value itself for identifiers and numbers (their sentence
// may be a whole tool call's JSON).
func describe(f facts.Fact) string {
	s := f.Sentence
	if s == "" || f.Class == facts.Identifier || f.Class == facts.Number {
		s = f.Value
	}
	return strings.Join(strings.Fields(s), " ")
}

// conversational reports whether a fact was said in the conversation
// (by the user or the assistant's prose), not only in tool output or a
// tool call's arguments: what a summary must keep word for word.
//
// Rules and requests count when the user said them (an assistant's "let me
// make sure the tests pass" is not a constraint); decisions when either
// side did; identifiers anywhere but in tool output (a path the agent
// read or wrote is one it needs again).
func conversational(f facts.Fact) bool {
	switch f.Class {
	case facts.Constraint, facts.Request:
		return f.Origin == "user"
	case facts.Identifier:
		return f.Origin == "user" || f.Origin == "assistant" || f.Origin == "toolCall"
	}
	return f.Origin == "user" || f.Origin == "assistant"
}

// LineText is the readable text of one transcript line (Claude Code, Codex
// or pi): its message's text blocks, tool input and results; the line
// itself when it has none.
func LineText(raw []byte) string {
	var l line
	if json.Unmarshal(bytes.TrimSpace(raw), &l) != nil {
		return string(raw)
	}
	var parts []string
	if len(l.Message) > 0 {
		var m ccMessage
		if json.Unmarshal(l.Message, &m) == nil {
			if t := contentText(m.Content); t != "" {
				parts = append(parts, t)
			}
			var blocks []block
			if json.Unmarshal(m.Content, &blocks) == nil {
				for _, b := range blocks {
					if len(b.Input) > 0 {
						parts = append(parts, string(b.Input))
					}
				}
			}
		}
	}
	if len(l.Payload) > 0 {
		var p codexPayload
		if json.Unmarshal(l.Payload, &p) == nil {
			for _, t := range []string{contentText(p.Content), p.Arguments, p.Input, contentText(p.Output), p.Message} {
				if t != "" {
					parts = append(parts, t)
				}
			}
		}
	}
	if len(parts) == 0 {
		return string(raw)
	}
	return strings.Join(parts, "\n")
}
