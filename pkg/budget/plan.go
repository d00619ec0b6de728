package budget

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Input is everything Plan needs; nothing else is read.
type Input struct {
	Session *transcript.Session
	// Window is the context window in tokens; WindowSource says where it
	// came from (models.Window.SourceText).
	Window       int
	WindowSource string
	Config       Config

	// SystemPrompt is the system prompt text (--system-prompt); when
	// HaveSystemPrompt is false, Overhead stands in for it (the system
	// prompt + tools the calibrated estimator learnt from usage records).
	SystemPrompt     string
	HaveSystemPrompt bool
	Overhead         int
	// OverheadSource says where Overhead came from (for the report).
	OverheadSource string

	// Workspace is the agent's workspace directory ("" = no bootstrap).
	Workspace string
	// Searcher feeds semantic history (nil: none); SessionPath is the
	// session's absolute path, to recognise its own hits.
	Searcher    Searcher
	SessionPath string

	// Summarizer, when set, runs the rolling summary if it triggers;
	// otherwise the report only says what it would cover.
	Summarizer compaction.Summarizer
	// KeepSecrets sends the rolling summary's request unredacted
	// (recall.redact: false).
	KeepSecrets bool

	// Logf receives VS7's verification log lines (nil: none).
	Logf func(format string, args ...any)
}

// Report is what `ctxtool budget` prints for one session.
type Report struct {
	File          string `json:"file"`
	ContextWindow int    `json:"contextWindow"`
	WindowSource  string `json:"windowSource,omitempty"`
	// Budget is the allocation by ratios; Actual what each region costs.
	Budget Allocation `json:"budget"`
	Actual Actual     `json:"actual"`
	// Reclaimed is unused system-prompt and bootstrap budget given to
	// history; HistoryBudget = Budget.History + Reclaimed + Budget.Reserve.
	Reclaimed     int `json:"reclaimed"`
	HistoryBudget int `json:"historyBudget"`
	// SystemPromptSource: "file", "learnt overhead" or "none".
	SystemPromptSource string `json:"systemPromptSource"`

	BootstrapMaxChars int             `json:"bootstrapMaxChars"`
	Bootstrap         []BootstrapFile `json:"bootstrapFiles"`
	MemoryNotes       []MemoryNote    `json:"memoryNotes,omitempty"`
	Semantic          Semantic        `json:"semanticHistory"`
	Rolling           Rolling         `json:"rollingSummary"`
	History           History         `json:"history"`

	// TotalTokens is what the request carries (every region, without the
	// response); EmittedTokens the part in Messages (all of it unless the
	// system prompt is a learnt overhead, which has no text).
	TotalTokens   int `json:"totalTokens"`
	EmittedTokens int `json:"emittedTokens"`
	// Free is the window left after the request and the response budget.
	Free     int      `json:"free"`
	Warnings []string `json:"warnings,omitempty"`

	// Messages is the assembled context, in order.
	Messages []ContextMessage `json:"-"`
}

// Actual is each region's measured size (chars/4).
type Actual struct {
	SystemPrompt int `json:"systemPrompt"`
	// SemanticHistory is the part of SystemPrompt that is the
	// <relevant-prior-context> block.
	SemanticHistory int `json:"semanticHistory"`
	Bootstrap       int `json:"bootstrap"`
	Summary         int `json:"summary"`
	History         int `json:"history"`
}

// History describes the history limiting.
type History struct {
	MessagesIn  int `json:"messagesIn"`
	MessagesOut int `json:"messagesOut"`
	TokensIn    int `json:"tokensIn"`
	TokensOut   int `json:"tokensOut"`
	// Budget is what the kept history may use (the history budget minus
	// an injected summary).
	Budget           int    `json:"budget"`
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
	FirstKeptLine    int    `json:"firstKeptLine,omitempty"`
	// PreservedTurns user turns from PreservedFromLine on are always kept
	// (unless they alone exceed the budget: RecentCut).
	PreservedTurns    int  `json:"preservedTurns"`
	PreservedFromLine int  `json:"preservedFromLine,omitempty"`
	PreservedTokens   int  `json:"preservedTokens"`
	RecentCut         bool `json:"recentCut,omitempty"`
}

// Rolling describes the rolling summary.
type Rolling struct {
	Enabled bool `json:"enabled"`
	// Triggered: HistoryTokens > Threshold = min(triggerThreshold,
	// 80% of the history budget).
	Triggered     bool `json:"triggered"`
	Threshold     int  `json:"threshold"`
	HistoryTokens int  `json:"historyTokens"`
	WindowSize    int  `json:"windowSize"`
	// Covers is what a summary replaces: the messages before the last
	// WindowSize user turns.
	CoversMessages int `json:"coversMessages"`
	CoversTokens   int `json:"coversTokens"`
	FromLine       int `json:"fromLine,omitempty"`
	ToLine         int `json:"toLine,omitempty"`
	// Ran: a summary was made and injected.
	Ran           bool   `json:"ran"`
	Summarizer    string `json:"summarizer,omitempty"`
	SummaryTokens int    `json:"summaryTokens,omitempty"`
	Fallback      string `json:"fallback,omitempty"`
	Note          string `json:"note,omitempty"`
}

// ContextMessage is one message of the assembled context: a system text,
// the bootstrap region, the injected summary, or a history message as pi
// sends it (its agentMessage JSON).
type ContextMessage struct {
	Region  string          `json:"region"`
	Tokens  int             `json:"tokens"`
	EntryID string          `json:"entryId,omitempty"`
	Line    int             `json:"line,omitempty"`
	Message json.RawMessage `json:"message"`
}

// Regions of ContextMessage.
const (
	RegionSystemPrompt = "systemPrompt"
	RegionBootstrap    = "bootstrap"
	RegionSummary      = "summary"
	RegionHistory      = "history"
)

// SummaryPreamble and the <prior-conversation-summary> tags wrap an
// injected rolling summary (VS7).
const SummaryPreamble = "[Prior conversation summary - for context only, do not respond to this]"

// summaryInstructions ask for what a rolling summary must keep.
const summaryInstructions = "Summarize this conversation, preserving: key decisions made, open questions, user preferences discovered, important context mentioned, and any pending tasks or TODOs. Be concise but complete."

// Plan assembles the next request of a session under the VS7 budget, in
// VS7's order: allocation, bootstrap files at the per-file limit,
// semantic history for the last user prompt, reclaim, rolling summary, and
// token-limited history with the recent turns preserved.
func Plan(ctx context.Context, in Input) (*Report, error) {
	if err := in.Config.Validate(); err != nil {
		return nil, err
	}
	p := newPlanner(in)
	bootstrapText, err := p.bootstrap()
	if err != nil {
		return nil, err
	}

	// The history as pi rebuilds it.
	p.pctx = in.Session.Context()
	p.msgs = make([]Msg, len(p.pctx.Messages))
	for i, m := range p.pctx.Messages {
		p.msgs[i] = Msg{Role: m.Role, Tokens: m.Tokens()}
	}
	p.historyTokens = sumTokens(p.msgs)
	preservedStart := recentTurnsStart(p.msgs, p.windowSize)

	if err := p.semanticHistory(ctx, preservedStart); err != nil {
		return nil, err
	}
	systemText := p.measureSystemPrompt(bootstrapText)
	summaryMsg, recentStart := p.rollingSummary(ctx)
	start := p.limitHistory(summaryMsg, recentStart, preservedStart)
	if err := p.assemble(systemText, bootstrapText, summaryMsg, start); err != nil {
		return nil, err
	}
	return p.r, nil
}

// planner carries one Plan's values from step to step; each step fills
// its part of the report.
type planner struct {
	in         Input
	cfg        Config
	alloc      Allocation
	logf       func(format string, args ...any)
	windowSize int
	r          *Report

	// The history as pi rebuilds it, set after the bootstrap step.
	pctx          *transcript.Context
	msgs          []Msg
	historyTokens int
}

// newPlanner makes the allocation and the report's first fields.
func newPlanner(in Input) *planner {
	logf := in.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg := in.Config
	alloc := Allocate(in.Window, cfg)
	r := &Report{File: in.Session.File, ContextWindow: alloc.Total, WindowSource: in.WindowSource, Budget: alloc, BootstrapMaxChars: alloc.BootstrapMaxChars(),
		Bootstrap: []BootstrapFile{}}
	if !cfg.Enabled {
		r.Warnings = append(r.Warnings, "contextManagement.enabled is false: OpenClaw would limit history by turns (VS6); this is the VS7 budget it would use if enabled")
	}
	logf("context management: bootstrap budget=%d tokens, maxChars=%d", alloc.Bootstrap, alloc.BootstrapMaxChars())
	return &planner{in: in, cfg: cfg, alloc: alloc, logf: logf, windowSize: cfg.RollingSummary.WindowSize, r: r}
}

// bootstrap loads the workspace's bootstrap files at the per-file limit and
// returns their rendered text ("" without a workspace).
func (p *planner) bootstrap() (string, error) {
	if p.in.Workspace == "" {
		return "", nil
	}
	r := p.r
	files, notes, err := LoadWorkspace(p.in.Workspace)
	if err != nil {
		return "", err
	}
	r.Bootstrap = BuildBootstrap(files, p.alloc.BootstrapMaxChars(), 0)
	r.MemoryNotes = notes
	for _, f := range r.Bootstrap {
		if f.Truncated {
			r.Warnings = append(r.Warnings, fmt.Sprintf("workspace bootstrap file %s is %d chars (limit %d); truncating in injected context", f.Name, f.Chars, f.MaxChars))
		}
	}
	return renderBootstrap(r.Bootstrap), nil
}

// semanticHistory retrieves semantic history for the last user prompt,
// leaving out the preserved recent turns (from preservedStart on).
func (p *planner) semanticHistory(ctx context.Context, preservedStart int) error {
	r, cfg := p.r, p.cfg
	r.Semantic = Semantic{Enabled: cfg.SemanticHistory.Enabled, BudgetTokens: p.alloc.SemanticBudget(), Chunks: []Chunk{}}
	if !cfg.SemanticHistory.Enabled {
		return nil
	}
	query, err := lastUserText(p.in.Session, p.pctx)
	if err != nil {
		return err
	}
	exclude := map[string]bool{}
	for _, m := range p.pctx.Messages[preservedStart:] {
		exclude[m.Entry.ID()] = true
	}
	r.Semantic = Retrieve(ctx, p.in.Searcher, query, cfg.SemanticHistory, p.alloc.SemanticBudget(), p.in.SessionPath, exclude)
	if r.Semantic.Note != "" {
		r.Warnings = append(r.Warnings, r.Semantic.Note)
	}
	p.logf("semantic history: retrieved %d chunks, %d tokens", len(r.Semantic.Chunks), r.Semantic.Tokens)
	return nil
}

// measureSystemPrompt measures the system prompt (with the semantic block,
// injected there as VS7's extraSystemPrompt) and the bootstrap, reclaims
// their unused budget, and returns the system text.
func (p *planner) measureSystemPrompt(bootstrapText string) string {
	in, r := p.in, p.r
	systemText := joinNonEmpty(in.SystemPrompt, r.Semantic.Block)
	r.Actual.SemanticHistory = r.Semantic.Tokens
	switch {
	case in.HaveSystemPrompt:
		r.SystemPromptSource = "file"
		r.Actual.SystemPrompt = transcript.TextTokens(systemText)
	case in.Overhead > 0:
		r.SystemPromptSource = "learnt overhead"
		if in.OverheadSource != "" {
			r.SystemPromptSource = in.OverheadSource
		}
		r.Actual.SystemPrompt = in.Overhead + transcript.TextTokens(systemText)
	default:
		r.SystemPromptSource = "none"
		r.Actual.SystemPrompt = transcript.TextTokens(systemText)
		r.Warnings = append(r.Warnings, "no system prompt given (--system-prompt FILE) and none learnt from usage records: the system prompt region counts as empty")
	}
	r.Actual.Bootstrap = transcript.TextTokens(bootstrapText)
	r.HistoryBudget, r.Reclaimed = p.alloc.Reclaim(r.Actual.SystemPrompt, r.Actual.Bootstrap)
	return systemText
}

// rollingSummary decides whether the rolling summary triggers and, with a
// Summarizer, makes it. It returns the summary message (nil: none) and
// where the recent turns, which a summary does not cover, start.
func (p *planner) rollingSummary(ctx context.Context) (*ContextMessage, int) {
	r, msgs := p.r, p.msgs
	rs := &r.Rolling
	rs.Enabled, rs.WindowSize, rs.HistoryTokens = p.cfg.RollingSummary.Enabled, p.windowSize, p.historyTokens
	rs.Threshold = SummaryTrigger(p.cfg.RollingSummary.TriggerThreshold, r.HistoryBudget)
	recentStart := SplitTurns(msgs, p.windowSize)
	rs.CoversMessages, rs.CoversTokens = recentStart, sumTokens(msgs[:recentStart])
	if recentStart > 0 {
		rs.FromLine, rs.ToLine = p.pctx.Messages[0].Entry.Line, p.pctx.Messages[recentStart-1].Entry.Line
	}
	rs.Triggered = rs.Enabled && p.historyTokens > rs.Threshold
	if !rs.Triggered {
		return nil, recentStart
	}
	p.logf("rolling summary: triggering summarization for %d messages", len(msgs))
	switch {
	case recentStart == 0:
		rs.Note = fmt.Sprintf("nothing is older than the last %d user turns: no summary", p.windowSize)
	case p.in.Summarizer == nil:
		rs.Note = "not run (pass --summarize to make and inject the summary); the history is truncated instead"
	default:
		return p.summarize(ctx, recentStart), recentStart
	}
	return nil, recentStart
}

// summarize runs the Summarizer over the messages before recentStart; on
// failure it records the fallback and returns nil.
func (p *planner) summarize(ctx context.Context, recentStart int) *ContextMessage {
	r, msgs := p.r, p.msgs
	rs := &r.Rolling
	recentTokens := sumTokens(msgs[recentStart:])
	maxTokens := min(p.cfg.RollingSummary.SummaryMaxTokens, max(500, r.HistoryBudget-recentTokens-1000))
	rs.Summarizer = p.in.Summarizer.Name()
	entries := make([]*transcript.Entry, recentStart)
	for i := range entries {
		entries[i] = p.pctx.Messages[i].Entry
	}
	text, err := compaction.SummarizeRegion(ctx, p.in.Session, entries, p.in.Summarizer,
		compaction.RegionRequest{Instructions: summaryInstructions, MaxOutputTokens: maxTokens, MaxChars: maxTokens * 4, KeepSecrets: p.in.KeepSecrets})
	if err != nil {
		rs.Fallback = err.Error()
		r.Warnings = append(r.Warnings, "rolling summary failed: "+err.Error()+"; falling back to truncation without a summary")
		return nil
	}
	if transcript.TextTokens(text) > maxTokens {
		text = transcript.PrefixUTF16(text, maxTokens*4-1) + "…"
	}
	m := summaryMessage(text)
	rs.Ran, rs.SummaryTokens = true, m.Tokens
	p.logf("rolling summary: summarized %d messages, kept %d, totalTokens=%d", recentStart, len(msgs)-recentStart, recentTokens+m.Tokens)
	return &m
}

// limitHistory limits the history by tokens, the recent turns (from
// preservedStart on) preserved, after an injected summary which replaces
// the messages before recentStart. It returns the first kept message.
func (p *planner) limitHistory(summaryMsg *ContextMessage, recentStart, preservedStart int) int {
	r, msgs := p.r, p.msgs
	offset := 0
	r.History.Budget = r.HistoryBudget
	if summaryMsg != nil {
		offset = recentStart
		r.Actual.Summary = summaryMsg.Tokens
		r.History.Budget = max(0, r.HistoryBudget-summaryMsg.Tokens)
	}
	lim := LimitHistory(msgs[offset:], r.History.Budget, p.windowSize)
	start := offset + lim.Start
	h := &r.History
	h.MessagesIn, h.TokensIn = len(msgs), p.historyTokens
	h.MessagesOut, h.TokensOut = len(msgs)-start, lim.Tokens
	h.PreservedTurns, h.PreservedTokens, h.RecentCut = p.windowSize, sumTokens(msgs[preservedStart:]), lim.RecentCut
	if preservedStart < len(msgs) {
		h.PreservedFromLine = p.pctx.Messages[preservedStart].Entry.Line
	}
	if start < len(msgs) {
		h.FirstKeptEntryID, h.FirstKeptLine = p.pctx.Messages[start].Entry.ID(), p.pctx.Messages[start].Entry.Line
	}
	if h.RecentCut {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the last %d user turns alone (%d tokens) exceed the history budget (%d): they are cut too", p.windowSize, lim.RecentTokens, h.Budget))
	}
	r.Actual.History = lim.Tokens
	if summaryMsg != nil {
		p.logf("rolling summary: injected summary as leading context message")
	}
	with := ""
	if summaryMsg != nil {
		with = " (with rolling summary)"
	}
	p.logf("context management: contextWindow=%d systemPrompt=%d bootstrap=%d historyBudget=%d messagesIn=%d messagesOut=%d%s",
		p.alloc.Total, r.Actual.SystemPrompt, r.Actual.Bootstrap, r.HistoryBudget, h.MessagesIn, h.MessagesOut, with)
	return start
}

// assemble puts the regions in order (system prompt, bootstrap, summary,
// the history from start on) and totals them.
func (p *planner) assemble(systemText, bootstrapText string, summaryMsg *ContextMessage, start int) error {
	r, alloc := p.r, p.alloc
	if systemText != "" {
		r.Messages = append(r.Messages, textMessage(RegionSystemPrompt, "system", systemText))
	}
	if bootstrapText != "" {
		r.Messages = append(r.Messages, textMessage(RegionBootstrap, "system", bootstrapText))
	}
	if summaryMsg != nil {
		r.Messages = append(r.Messages, *summaryMsg)
	}
	for _, m := range p.pctx.Messages[start:] {
		raw, err := agentMessage(p.in.Session, m.Entry)
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, ContextMessage{Region: RegionHistory, Tokens: m.Tokens(), EntryID: m.Entry.ID(), Line: m.Entry.Line, Message: raw})
	}
	for _, m := range r.Messages {
		r.EmittedTokens += m.Tokens
	}
	r.TotalTokens = r.Actual.SystemPrompt + r.Actual.Bootstrap + r.Actual.Summary + r.Actual.History
	r.Free = alloc.Total - r.TotalTokens - alloc.Response
	if r.Free < 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the request (%d tokens) plus the response budget (%d) exceed the window (%d) by %d tokens", r.TotalTokens, alloc.Response, alloc.Total, -r.Free))
	}
	return nil
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

func textMessage(region, role, text string) ContextMessage {
	raw, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{role, text})
	return ContextMessage{Region: region, Tokens: transcript.TextTokens(text), Message: raw}
}

// summaryMessage is the injected rolling summary: a user message, so pi's
// estimate of it is chars/4 of its text.
func summaryMessage(summary string) ContextMessage {
	text := SummaryPreamble + "\n\n<prior-conversation-summary>\n" + summary + "\n</prior-conversation-summary>"
	m := textMessage(RegionSummary, "user", text)
	return m
}

// lastUserText is the text of the last user message of the context: the
// prompt semantic history searches for.
func lastUserText(s *transcript.Session, ctx *transcript.Context) (string, error) {
	for i := len(ctx.Messages) - 1; i >= 0; i-- {
		if ctx.Messages[i].Role != "user" {
			continue
		}
		m, err := s.Message(ctx.Messages[i].Entry)
		if err != nil {
			return "", err
		}
		if m != nil {
			return m.Text(), nil
		}
	}
	return "", nil
}

// agentMessage is the message an entry puts in pi's context, as pi holds it
// (buildSessionContext): a message entry's own message object verbatim; a
// custom_message as role "custom"; the compaction in force as
// "compactionSummary"; a branch summary as "branchSummary".
func agentMessage(s *transcript.Session, e *transcript.Entry) (json.RawMessage, error) {
	line, err := s.Raw(e)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", s.File, e.Line, err)
	}
	ts := e.Time()
	if e.Type() != "message" {
		if t, ok := e.TimestampTime(); ok {
			ts = t
		}
	}
	ms := ts.UnixMilli()
	if ts.IsZero() {
		ms = 0
	}
	out := map[string]any{"timestamp": ms}
	switch e.Type() {
	case "message":
		if m, ok := raw["message"]; ok {
			return m, nil
		}
		if m, ok := raw["systemMessage"]; ok && e.Role() == "system" {
			return m, nil // the system message a pi 1.6.0 compaction replays
		}
		return nil, fmt.Errorf("%s:%d: message entry without a message", s.File, e.Line)
	case "custom_message":
		out["role"] = "custom"
		for _, k := range []string{"customType", "content", "display", "details"} {
			if v, ok := raw[k]; ok {
				out[k] = v
			}
		}
	case "compaction":
		out["role"] = "compactionSummary"
		out["summary"] = raw["summary"]
		out["tokensBefore"] = raw["tokensBefore"]
	case "branch_summary":
		out["role"] = "branchSummary"
		out["summary"] = raw["summary"]
		out["fromId"] = raw["fromId"]
	default:
		return nil, fmt.Errorf("%s:%d: a %s entry puts no message in the context", s.File, e.Line, e.Type())
	}
	return json.Marshal(out)
}

// LearntOverhead is the system prompt + tool definitions the calibrated
// estimator learnt from the session's usage records (0 when it has too few
// to trust).
func LearntOverhead(s *transcript.Session) int {
	c, err := estimate.NewCounter(s, estimate.Calibrated)
	if err != nil || c.Calibration() == nil || !c.Calibration().Usable {
		return 0
	}
	return c.Calibration().Overhead
}
