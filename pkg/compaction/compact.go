package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/secrets"
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
	// Audit lists the facts of the region the summary (with the kept
	// messages) dropped.
	Audit *Audit
}

// Compact summarises what a preparation says to summarise. It reads message
// content from the session but writes nothing.
func Compact(ctx context.Context, s *transcript.Session, p *Preparation, set Settings, sum Summarizer) (*Outcome, error) {
	set = set.withDefaults()
	if set.Count == nil {
		set.Count = heuristic
	}
	sum = withRedaction(sum, set.KeepSecrets)
	msgs, err := loadMsgs(s, p.Summarize)
	if err != nil {
		return nil, err
	}
	prefix, err := loadMsgs(s, p.TurnPrefix)
	if err != nil {
		return nil, err
	}
	if !set.KeepSecrets {
		redactMsgs(msgs)
		redactMsgs(prefix)
	}
	g := &region{msgs: msgs, prefix: prefix, ops: NewFileOps()}
	mergePrevFiles(p.prevDetails, g.ops)
	for _, m := range msgs {
		g.ops.AddMessage(m.M)
	}
	for _, m := range prefix {
		g.ops.AddMessage(m.M)
	}
	g.base.ReadFiles, g.base.ModifiedFiles = g.ops.Lists()
	g.base.Failures, g.base.FailuresTotal = collectFailures(append(append([]*Msg{}, msgs...), prefix...))

	out, err := g.summarize(ctx, s, p, set, sum)
	if err != nil {
		return nil, err
	}
	found := regionFacts(p, msgs, prefix)
	kept, err := keptText(s, p)
	if err != nil {
		return nil, err
	}
	out.Audit = audit(found, out.Summary, kept)
	// The identifier guard: a summariser that Retries (a model) and dropped
	// identifiers gets one more try with the list (a deterministic one, such
	// as the extractive summariser, keeps what its budget allows and would
	// only repeat itself).
	if ids := out.Audit.droppedIdentifiers(); len(ids) > 0 && set.IdentifierRetry && sum.Capabilities().Retries && out.Fallback == "" {
		retry := set
		retry.CustomInstructions = strings.TrimSpace(set.CustomInstructions + "\n" + identifierRetryInstruction(ids))
		again, err := g.summarize(ctx, s, p, retry, sum)
		if err != nil {
			return nil, fmt.Errorf("identifier retry: %w", err)
		}
		again.Audit = audit(found, again.Summary, kept)
		again.QualityRetries = out.QualityRetries + 1
		if len(again.Audit.droppedIdentifiers()) <= len(ids) {
			out = again
		} else {
			out.QualityRetries = again.QualityRetries
		}
		out.QualityIssues = append(out.QualityIssues, fmt.Sprintf("%d identifiers still missing after the retry", len(out.Audit.droppedIdentifiers())))
	}
	return out, nil
}

// region is what a compaction summarises: the messages, the turn
// prefix, the cumulative file operations and the outcome fields every
// attempt shares.
type region struct {
	msgs, prefix []*Msg
	ops          *FileOps
	base         Outcome
}

// summarize makes one summary of the region with set: the strategy's
// summariser calls, or one call of a summariser that takes the whole
// preparation (exec).
func (g *region) summarize(ctx context.Context, s *transcript.Session, p *Preparation, set Settings, sum Summarizer) (*Outcome, error) {
	out := g.base
	var err error
	if whole := sum.Capabilities().Whole; whole != nil {
		// an external summariser owns the whole summary; pi's file lists
		// are appended as pi appends them to its own
		out.Summary, err = whole(ctx, s, p, set, g.msgs, g.prefix, g.ops)
		fl := formatFileLists(out.ReadFiles, out.ModifiedFiles, 0, 0)
		if err == nil && fl != "" && !strings.Contains(out.Summary, "<read-files>") && !strings.Contains(out.Summary, "<modified-files>") {
			out.Summary += "\n\n" + fl
		}
	} else {
		r := &run{ctx: ctx, s: s, p: p, set: set, sum: sum, out: &out}
		err = r.strategy(g.msgs, g.prefix)
	}
	if err != nil {
		return nil, err
	}
	if !set.KeepSecrets {
		// The first request, file lists and failures are quoted, not summarised.
		out.Summary = secrets.Redact(out.Summary)
	}
	if strings.TrimSpace(out.Summary) == "" {
		return nil, fmt.Errorf("the %s summariser produced an empty summary", sum.Name())
	}
	return &out, nil
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

// strategy runs the configured strategy's summariser calls.
func (r *run) strategy(msgs, prefix []*Msg) error {
	run := strategyRun(r.set.Strategy)
	if run == nil {
		return r.set.Validate()
	}
	return run(r, msgs, prefix)
}

// strategyRun dispatches a strategy to its summariser calls; nil for one
// this package does not implement (Validate refuses it).
func strategyRun(strategy string) func(r *run, msgs, prefix []*Msg) error {
	switch strategy {
	case StrategyDefault:
		return (*run).pi
	case StrategySafeguard:
		return (*run).safeguard
	case StrategySummarize:
		return func(r *run, msgs, _ []*Msg) error { return r.summarize(msgs) }
	}
	return nil
}

func implemented(strategy string) bool { return strategyRun(strategy) != nil }

func (r *run) call(req *Request) (string, error) {
	if req.BudgetTokens == 0 {
		req.BudgetTokens = r.set.SummaryBudget()
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
	// A Budgeted summary as a whole (history, split-turn prefix, file
	// lists) stays within the budget: the file lists are capped at about a
	// third of it, the prefix gets a quarter, the history the rest. (A
	// model's summary is bounded by MaxOutputTokens; its lists stay whole,
	// as pi writes them.)
	budget := r.set.SummaryBudget()
	files := formatFileLists(r.out.ReadFiles, r.out.ModifiedFiles, 0, 0)
	if r.sum.Capabilities().Budgeted {
		files = formatFileLists(r.out.ReadFiles, r.out.ModifiedFiles, budget/2, budget)
	}
	histBudget := budget - countTokens(files) - 8
	prefixBudget := 0
	if len(prefix) > 0 {
		prefixBudget = budget / 4
		histBudget -= prefixBudget + countTokens(splitTurnJoin)
	}
	if len(msgs) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			history, herr = r.call(&Request{Kind: KindHistory, Layout: LayoutCheckpoint, Messages: msgs,
				Transcript: serialize(msgs, headPreview(2000), 4000), PreviousSummary: prev,
				Instructions: r.set.CustomInstructions, MaxOutputTokens: reserve * 8 / 10, BudgetTokens: histBudget})
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
				MaxOutputTokens: reserve / 2, BudgetTokens: prefixBudget})
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
	if files != "" {
		summary += "\n\n" + files
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
		// No fallback when asked not to, when an Offline summariser (the
		// extractive one, say) itself failed, or when the user cancelled.
		if r.set.SummarizeFallback != "trim" || r.sum.Capabilities().Offline || errors.Is(r.ctx.Err(), context.Canceled) {
			return err
		}
		r.out.Fallback = err.Error()
		ext, xerr := Extractive{}.Summarize(r.ctx, &Request{Kind: KindHistory, Layout: LayoutCheckpoint, Messages: msgs,
			PreviousSummary: prev, BudgetTokens: r.set.SummaryBudget()})
		if xerr != nil {
			return fmt.Errorf("%w; the trim fallback failed too: %w", err, xerr)
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
		if e.Type() == "message" && e.Role() == "user" {
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

var reBoring = lazyre.New(`(?i)^(no_reply|heartbeat_ok|heartbeat)$`)

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
			if t != "" && !reBoring().MatchString(t) {
				return true
			}
		case "toolResult":
			return true
		}
	}
	return false
}
