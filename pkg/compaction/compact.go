package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Outcome is a finished summary and what went into it.
type Outcome struct {
	Summary       string
	ReadFiles     []string
	ModifiedFiles []string
	Failures      []ToolFailure
	FailuresTotal int
	// Chunks is how many summariser calls the history took (safeguard).
	Chunks int
	// Omitted counts messages too large to summarise (noted, left out).
	Omitted int
	// Pruned counts messages summarised separately because the history
	// exceeded maxHistoryShare of the window (safeguard).
	Pruned int
	// Preserved counts messages of the last user turns copied verbatim.
	Preserved int
	// QualityRetries counts quality-guard re-asks; QualityIssues lists what
	// the last check still found missing.
	QualityRetries int
	QualityIssues  []string
	// Fallback is set when the summarize strategy fell back to a
	// mechanical extract; it holds the summariser's error.
	Fallback string
}

// Compact summarises what a preparation says to summarise. It reads message
// content from the session but writes nothing.
func Compact(ctx context.Context, s *transcript.Session, p *Preparation, set Settings, sum Summarizer) (*Outcome, error) {
	set = set.withDefaults()
	if set.Count == nil {
		set.Count = Heuristic
	}
	msgs, err := loadMsgs(s, p.Summarize)
	if err != nil {
		return nil, err
	}
	prefix, err := loadMsgs(s, p.TurnPrefix)
	if err != nil {
		return nil, err
	}
	out := &Outcome{}
	ops := newFileOps()
	mergePrevFiles(p.prevDetails, ops)
	for _, m := range msgs {
		ops.addMessage(m.M)
	}
	for _, m := range prefix {
		ops.addMessage(m.M)
	}
	out.ReadFiles, out.ModifiedFiles = ops.Lists()
	out.Failures, out.FailuresTotal = collectFailures(append(append([]*Msg{}, msgs...), prefix...))

	r := &run{ctx: ctx, s: s, p: p, set: set, sum: sum, out: out}
	switch set.Strategy {
	case StrategySafeguard:
		err = r.safeguard(msgs, prefix)
	case StrategySummarize:
		err = r.summarize(msgs)
	default:
		err = r.pi(msgs, prefix)
	}
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(out.Summary) == "" {
		return nil, fmt.Errorf("the %s summariser produced an empty summary", sum.Name())
	}
	return out, nil
}

// mergePrevFiles adds the previous compaction's cumulative file lists
// (its details, as Prepare decoded them). pi skips them when the compaction
// came from an extension (fromHook); we merge them whatever wrote them, so
// the lists stay cumulative.
func mergePrevFiles(details json.RawMessage, ops *FileOps) {
	var d struct {
		ReadFiles     []any `json:"readFiles"`
		ModifiedFiles []any `json:"modifiedFiles"`
	}
	if len(details) == 0 || json.Unmarshal(details, &d) != nil {
		return
	}
	for _, f := range d.ReadFiles {
		if p, ok := f.(string); ok && p != "" {
			ops.Read[p] = true
		}
	}
	for _, f := range d.ModifiedFiles {
		if p, ok := f.(string); ok && p != "" {
			ops.Edited[p] = true
		}
	}
}

type run struct {
	ctx context.Context
	s   *transcript.Session
	p   *Preparation
	set Settings
	sum Summarizer
	out *Outcome
}

func (r *run) call(req *Request) (string, error) {
	if req.MaxChars == 0 {
		req.MaxChars = r.set.ExtractiveMaxChars
	}
	text, err := r.sum.Summarize(r.ctx, req)
	if err != nil {
		return "", err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "", fmt.Errorf("the %s summariser returned an empty summary", r.sum.Name())
	}
	return text, nil
}

const splitTurnJoin = "\n\n---\n\n**Turn Context (split turn):**\n\n"

// pi is the default strategy: pi's compaction. One history summary
// (updating the previous one) and, for a split turn, a prefix summary made
// in parallel; the cumulative file lists appended.
func (r *run) pi(msgs, prefix []*Msg) error {
	reserve := r.set.ReserveTokens
	var history, turn string
	var herr, terr error
	var wg sync.WaitGroup
	prev := stripFileBlocks(r.p.PreviousSummary)
	if len(msgs) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			history, herr = r.call(&Request{Kind: KindHistory, Layout: LayoutCheckpoint, Messages: msgs,
				Transcript: serialize(msgs, headPreview(2000), 4000), PreviousSummary: prev,
				Instructions: r.set.CustomInstructions, MaxOutputTokens: reserve * 8 / 10})
		}()
	} else {
		// Nothing new before the turn: the previous summary stands as is
		// (pi sends "No prior history." here and loses it).
		history = prev
	}
	if len(prefix) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn, terr = r.call(&Request{Kind: KindTurnPrefix, Layout: LayoutTurnPrefix, Messages: prefix,
				Transcript: serialize(prefix, headPreview(2000), 4000), Instructions: r.set.CustomInstructions,
				MaxOutputTokens: reserve / 2, MaxChars: r.set.ExtractiveMaxChars / 2})
		}()
	}
	wg.Wait()
	if herr != nil {
		return herr
	}
	if terr != nil {
		return fmt.Errorf("split-turn prefix: %w", terr)
	}
	summary := history
	if turn != "" {
		if summary == "" {
			summary = "No earlier history."
		}
		summary += splitTurnJoin + turn
	}
	if fl := formatFileLists(r.out.ReadFiles, r.out.ModifiedFiles, 0, 0); fl != "" {
		summary += "\n\n" + fl
	}
	r.out.Summary = summary
	return nil
}

// summarize is the single pass of docs/design/single-pass-summary.md: the first user message verbatim,
// the zone serialised with tool-result previews (first 500 + last 200
// characters), capped at 100,000 characters, one call at temperature 0 with
// at most 4,096 output tokens; on failure a mechanical extract marked as a
// fallback (or an error with compaction.summarize.fallback=fail).
func (r *run) summarize(msgs []*Msg) error {
	first := r.firstUserText()
	prev := stripSection(stripFileBlocks(r.p.PreviousSummary), originalHeading)
	tr := capMiddle(serialize(msgs, headTailPreview(500, 200), 0), r.set.MaxInputChars)
	body, err := r.call(&Request{Kind: KindHistory, Layout: LayoutNarrative, Messages: msgs, Transcript: tr,
		PreviousSummary: prev, Instructions: r.set.CustomInstructions, MaxOutputTokens: r.set.MaxOutputTokens})
	if err != nil {
		// No fallback when asked not to, when the extractive summariser
		// itself failed, or when the user cancelled.
		if r.set.SummarizeFallback != "trim" || r.sum.Name() == "extractive" || errors.Is(r.ctx.Err(), context.Canceled) {
			return err
		}
		r.out.Fallback = err.Error()
		ext, xerr := Extractive{}.Summarize(r.ctx, &Request{Kind: KindHistory, Layout: LayoutCheckpoint, Messages: msgs,
			PreviousSummary: prev, MaxChars: r.set.ExtractiveMaxChars})
		if xerr != nil {
			return fmt.Errorf("%v; the trim fallback failed too: %v", err, xerr)
		}
		body = fmt.Sprintf("[The summariser failed (%s). %d older messages were trimmed; this mechanical extract of them stands in for a summary.]\n\n%s",
			oneLine(err.Error(), 300), len(msgs), ext)
	}
	var b strings.Builder
	if first != "" {
		b.WriteString(originalHeading + "\n")
		b.WriteString(first)
		b.WriteString("\n\n## Summary\n")
	}
	b.WriteString(body)
	if fl := formatFileLists(r.out.ReadFiles, r.out.ModifiedFiles, 0, 0); fl != "" {
		b.WriteString("\n\n" + fl)
	}
	r.out.Summary = b.String()
	return nil
}

const originalHeading = "## Original request (verbatim)"

// firstUserText is the first user message on the path: the single pass always
// keeps it, and a compaction can only keep a contiguous tail, so it travels
// verbatim inside the summary.
func (r *run) firstUserText() string {
	for i, e := range r.p.Path {
		if e.Type == "message" && e.Role == "user" {
			if r.p.Cut >= 0 && i >= r.p.Cut {
				return "" // it is kept verbatim anyway
			}
			m, err := r.s.Message(e)
			if err != nil || m == nil {
				return ""
			}
			t := strings.TrimSpace(msgText(m))
			if u16len(t) > 4000 {
				t = cutUnits(t, 4000) + " […]"
			}
			return t
		}
	}
	return ""
}

// stripSection removes a "## " section (heading and body) from a summary.
func stripSection(s, heading string) string {
	if !strings.Contains(s, heading) {
		return s
	}
	var keep []string
	for _, sec := range parseSections(s) {
		if sec.Heading == heading {
			continue
		}
		if sec.Heading == "## Summary" {
			keep = append(keep, strings.Join(sec.Lines, "\n"))
			continue
		}
		if sec.Heading != "" {
			keep = append(keep, sec.Heading+"\n"+strings.Join(sec.Lines, "\n"))
		} else {
			keep = append(keep, strings.Join(sec.Lines, "\n"))
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n\n"))
}

var reBoring = regexp.MustCompile(`(?i)^(no_reply|heartbeat_ok|heartbeat)$`)

// meaningful reports whether there is anything real to summarise: a user
// or assistant message with text that is not a heartbeat, or a tool result.
func meaningful(msgs []*Msg) bool {
	for _, m := range msgs {
		switch m.Role() {
		case "user", "assistant", "custom", "bashExecution", "branchSummary":
			t := strings.TrimSpace(msgText(m.M))
			if m.Role() == "assistant" {
				t = strings.TrimSpace(assistantText(m.M))
				if len(m.M.ToolCalls()) > 0 {
					return true
				}
			}
			if t != "" && !reBoring.MatchString(t) {
				return true
			}
		case "toolResult":
			return true
		}
	}
	return false
}
