package compaction

import (
	"encoding/json"
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Counter sizes one context message in provider tokens. The planner uses it
// for keepRecentTokens and chunking; nil means pi's chars/4 heuristic.
type Counter func(e *transcript.Entry) int

// heuristic is pi's estimateTokens.
func heuristic(e *transcript.Entry) int { return e.Tokens() }

// Preparation is the plan of a compaction before anything is summarised:
// which path entries are summarised, which are kept, and why. All indexes
// are into Path (root → leaf).
type Preparation struct {
	Strategy string
	Path     []*transcript.Entry
	Before   *transcript.Context

	// PrevCompaction is the compaction in force on the path (nil if none)
	// and PreviousSummary its summary, carried into the new one.
	PrevCompaction  *transcript.Entry
	PreviousSummary string
	// prevDetails is its `details` (the cumulative file lists), decoded
	// with the summary.
	prevDetails json.RawMessage

	// BoundaryStart is where summarising may begin: the previous
	// compaction's first kept entry, so the entries it kept are summarised or
	// kept again and never dropped (pi 0.58 started after the compaction and
	// lost them).
	BoundaryStart int
	// Cut is the path index of the first kept entry.
	Cut       int
	FirstKept *transcript.Entry
	// SplitTurn is true when the cut falls inside a turn; TurnStart is then
	// the index of the user message that opened it, and the turn's prefix
	// [TurnStart, Cut) is summarised on its own.
	SplitTurn bool
	TurnStart int

	// Summarize are the entries whose messages are summarised (the history),
	// TurnPrefix those of a split turn's prefix, Kept those whose messages
	// stay verbatim after the compaction.
	Summarize  []*transcript.Entry
	TurnPrefix []*transcript.Entry
	Kept       []*transcript.Entry

	// TokensBefore is pi's heuristic of the current context; UsageBefore is
	// pi's usage-anchored estimateContextTokens (what pi stores as the
	// entry's tokensBefore), or the heuristic when that anchor is stale.
	TokensBefore int
	UsageBefore  int
	// KeptEstimate is the best estimator's size of the kept messages, the
	// number compared with KeepRecentTokens.
	KeptEstimate int
	// Trigger: the context size compared with Threshold (window − reserve).
	ContextTokens, Threshold, ContextWindow, ReserveTokens int
	// Moved counts how often the cut moved back to keep a tool call with its
	// result (a result whose call would be summarised).
	Moved int

	// Reason is set when there is nothing to do; the fields above are then
	// only partly filled.
	Reason string
	// BelowTrigger is true when the context is under the strategy's trigger
	// (compaction then needs Force).
	BelowTrigger bool

	keepCount Counter          // the estimator the plan was sized with
	measured  *estimate.Result // the measure it was planned on (nil: none)
}

// validCut reports whether a kept region may start at e (pi's rules: any
// message but a tool result, plus branch summaries and custom messages).
func validCut(e *transcript.Entry) bool {
	switch e.Type() {
	case "message":
		return e.Role() != "toolResult" && e.Role() != ""
	case "branch_summary", "custom_message":
		return true
	}
	return false
}

// turnStartAt is the nearest entry at or before i (not before start) that
// opens a turn: a user or bashExecution message, a branch summary or a
// custom message. -1 if none.
func turnStartAt(path []*transcript.Entry, i, start int) int {
	for ; i >= start; i-- {
		e := path[i]
		if e.Type() == "branch_summary" || e.Type() == "custom_message" {
			return i
		}
		if e.Type() == "message" && (e.Role() == "user" || e.Role() == "bashExecution") {
			return i
		}
	}
	return -1
}

// Prepare plans a compaction of the session's active branch. It never
// fails on a session that loads: when there is nothing to do it returns a
// Preparation with Reason set.
func Prepare(s *transcript.Session, set Settings) (*Preparation, error) {
	return prepare(s, s.Context(), set)
}

// prepare is Prepare on the session's context, already rebuilt from its
// branch (s.Context()): the context the plan starts from.
func prepare(s *transcript.Session, ctx *transcript.Context, set Settings) (*Preparation, error) {
	set = set.withDefaults()
	count := set.Count
	if count == nil {
		count = heuristic
	}
	p := &Preparation{Strategy: set.Strategy, Path: ctx.Path, Before: ctx, TurnStart: -1, Cut: -1, keepCount: count}
	path := p.Path
	p.measure(set)

	if len(path) == 0 {
		p.Reason = "nothing to compact: the session has no entries"
		return p, nil
	}
	if last := path[len(path)-1]; last.Type() == "compaction" {
		p.Reason = fmt.Sprintf("already compacted: the last entry (line %d) is a compaction", last.Line)
		return p, nil
	}
	if c := ctx.Compaction; c != nil && ctx.CompactionIndex == 0 && nothingSince(path) {
		p.Reason = fmt.Sprintf("already compacted: the compaction on line %d is the file's root and every entry after it is the tail it kept (compact --truncate); nothing was added since", c.Line)
		return p, nil
	}
	if err := p.findBoundary(s); err != nil {
		return nil, err
	}
	start, end := p.BoundaryStart, len(path)

	cut, ok := p.placeCut(set, start, end)
	if !ok {
		p.Reason = "nothing to compact: no message can start a kept region"
		return p, nil
	}
	p.Cut = cut
	p.FirstKept = path[cut]
	p.splitAtCut(set, start, end)
	n := len(p.Summarize) + len(p.TurnPrefix)
	switch {
	case n == 0:
		p.Reason = fmt.Sprintf("nothing to compact: the context (%d messages) fits in the kept tail", len(p.Kept))
		if set.Strategy != StrategySummarize {
			p.Reason = fmt.Sprintf("nothing to compact: the context fits in keepRecentTokens (%d)", set.KeepRecentTokens)
		}
	case set.Strategy == StrategySummarize && n < 2:
		p.Reason = "nothing to compact: fewer than 2 messages outside the protected tail"
	}
	return p, nil
}

// measure sizes the current context and sets the trigger: the context
// size, the threshold it is compared with, and whether it is below it.
func (p *Preparation) measure(set Settings) {
	p.TokensBefore = p.Before.HeuristicTokens()
	p.UsageBefore = p.Before.EstimateContextTokens().Tokens
	if p.Before.UsageStale() {
		p.UsageBefore = p.TokensBefore
	}
	p.ContextWindow = set.ContextWindow
	p.ReserveTokens = set.effectiveReserve()
	p.ContextTokens = p.UsageBefore
	if set.Strategy == StrategySummarize {
		p.Threshold = set.SummarizeThreshold
		// the single pass triggers on its own chars/4 estimate of the messages
		p.ContextTokens = p.TokensBefore
	}
	if set.ContextTokens > 0 {
		p.ContextTokens = set.ContextTokens
	}
	if set.Strategy != StrategySummarize {
		p.Threshold = set.ContextWindow - p.ReserveTokens
	}
	p.BelowTrigger = p.ContextTokens <= p.Threshold
}

// findBoundary finds the compaction in force on the path, reads its
// summary and details, and sets BoundaryStart.
func (p *Preparation) findBoundary(s *transcript.Session) error {
	path := p.Path
	prev := -1
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type() == "compaction" {
			prev = i
			break
		}
	}
	p.BoundaryStart = 0
	if prev < 0 {
		return nil
	}
	p.PrevCompaction = path[prev]
	m, err := s.Message(path[prev])
	if err != nil {
		return fmt.Errorf("%s:%d: previous compaction: %w", s.File, path[prev].Line, err)
	}
	if m != nil {
		p.PreviousSummary, p.prevDetails = m.Summary, m.Details
	}
	p.BoundaryStart = prev + 1
	if c := p.Before; c.CompactionIndex == prev && c.KeptStart >= 0 {
		// The context found the first kept entry already: the first
		// before the compaction with the id it names.
		p.BoundaryStart = c.KeptStart
	} else if id := path[prev].FirstKeptEntryID(); id != "" {
		for i := 0; i < prev; i++ {
			if path[i].ID() == id {
				p.BoundaryStart = i
				break
			}
		}
	}
	return nil
}

// placeCut chooses the first kept entry in path[start:end] by the
// strategy's rule, then moves it back to keep tool calls with their
// results and non-message entries with what follows them. ok is false
// when no message can start a kept region.
func (p *Preparation) placeCut(set Settings, start, end int) (cut int, ok bool) {
	path := p.Path
	if set.Strategy == StrategySummarize {
		cut, ok = tailCut(path, start, end, set.ProtectedTail)
	} else {
		cut, ok = tokenCut(path, start, end, set.KeepRecentTokens, p.keepCount)
	}
	if !ok {
		return cut, false
	}
	cut, p.Moved = keepToolPairs(path, start, cut)
	// Move the cut back over entries that produce no message (model and
	// thinking changes, labels…) so they stay with what follows them.
	for cut > start {
		prevE := path[cut-1]
		if prevE.Type() == "message" || prevE.Type() == "compaction" || prevE.ProducesMessage() {
			break
		}
		cut--
	}
	return cut, true
}

// splitAtCut sorts the messages of path[start:end] around Cut into
// Summarize, TurnPrefix (when the cut splits a turn) and Kept.
func (p *Preparation) splitAtCut(set Settings, start, end int) {
	path, cut := p.Path, p.Cut
	// A turn is split when the first kept message is not a user message
	// and a turn start lies before it. pi decides on the cut entry itself,
	// so a cut moved back over a model change counts as split with the whole
	// previous turn as "prefix"; we look at the first kept message instead.
	firstMsg := -1
	for i := cut; i < end; i++ {
		if path[i].ProducesMessage() {
			firstMsg = i
			break
		}
	}
	historyEnd := cut
	if set.Strategy != StrategySummarize && firstMsg >= 0 && !(path[firstMsg].Type() == "message" && path[firstMsg].Role() == "user") {
		if ts := turnStartAt(path, firstMsg, start); ts >= 0 && ts < cut {
			p.SplitTurn, p.TurnStart = true, ts
			historyEnd = ts
		}
	}
	for i := start; i < historyEnd; i++ {
		if path[i].ProducesMessage() {
			p.Summarize = append(p.Summarize, path[i])
		}
	}
	if p.SplitTurn {
		for i := p.TurnStart; i < cut; i++ {
			if path[i].ProducesMessage() {
				p.TurnPrefix = append(p.TurnPrefix, path[i])
			}
		}
	}
	for i := cut; i < end; i++ {
		if path[i].ProducesMessage() {
			p.Kept = append(p.Kept, path[i])
			p.KeptEstimate += p.keepCount(path[i])
		}
	}
}

// tokenCut is pi's findCutPoint with a better estimator: walk back from the
// newest entry adding message sizes until keep tokens are reached. pi then
// cuts at the first valid cut point at or after that entry, which keeps
// less than asked whenever a run of tool results follows it; we take
// whichever valid cut point next to it — the first at or after, or the
// last before — keeps a tail closest to keep. When the budget is never
// reached nothing is summarised: the cut is the first valid cut point.
func tokenCut(path []*transcript.Entry, start, end, keep int, count Counter) (int, bool) {
	var cuts []int
	for i := start; i < end; i++ {
		if validCut(path[i]) {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) == 0 {
		return 0, false
	}
	// suffix[i] = estimated tokens of the messages in path[i:end]
	suffix := make([]int, end-start+1)
	for i := end - 1; i >= start; i-- {
		suffix[i-start] = suffix[i-start+1]
		if path[i].ProducesMessage() {
			suffix[i-start] += count(path[i])
		}
	}
	kept := func(c int) int { return suffix[c-start] }
	reached := -1
	for i := end - 1; i >= start; i-- {
		if path[i].ProducesMessage() && kept(i) >= keep {
			reached = i
			break
		}
	}
	if reached < 0 {
		return cuts[0], true
	}
	after, before := -1, -1
	for _, c := range cuts {
		if c >= reached {
			after = c
			break
		}
		before = c
	}
	switch {
	case after < 0:
		return before, true
	case before < 0:
		return after, true
	}
	if keep-kept(after) > kept(before)-keep {
		return before, true
	}
	return after, true
}

// tailCut keeps the last n messages (the single pass's protected tail), moving the
// boundary back to a valid cut point so no tool result starts the tail.
func tailCut(path []*transcript.Entry, start, end, n int) (int, bool) {
	seen := 0
	i := end
	for i > start && seen < n {
		i--
		if path[i].ProducesMessage() {
			seen++
		}
	}
	for ; i >= start; i-- {
		if validCut(path[i]) {
			return i, true
		}
	}
	return 0, false
}

// keepToolPairs moves the cut back until every tool result in the kept
// region has its call in the kept region too. A result whose call is not on
// the path at all (already orphaned in the file) cannot be repaired by
// moving the cut and is left alone. It returns the new cut and how often it
// moved.
func keepToolPairs(path []*transcript.Entry, start, cut int) (int, int) {
	callAt := firstCalls(path, start)
	moved := 0
	for {
		earliest := cut
		for i := cut; i < len(path); i++ {
			e := path[i]
			if !isToolResult(e) {
				continue
			}
			if at, ok := callAt[e.ToolCallID]; ok && at < cut && at >= start && at < earliest {
				earliest = at
			}
		}
		if earliest == cut {
			return cut, moved
		}
		// the latest valid cut point at or before the call
		next := -1
		for i := earliest; i >= start; i-- {
			if validCut(path[i]) {
				next = i
				break
			}
		}
		if next < 0 {
			next = start
		}
		cut = next
		moved++
	}
}

// isToolResult reports whether e is a tool result naming its call.
func isToolResult(e *transcript.Entry) bool {
	return e.Role() == "toolResult" && e.Type() == "message" && e.ToolCallID != ""
}

// firstCalls maps the call id of every tool result in path[start:] (the
// cut never goes before start) to the path index of the first entry making
// that call (-1 when none does, which is below any start). Only those ids are looked for: a map of every
// call on the path was 27 MB at 1 GB, where the region holds a few hundred.
func firstCalls(path []*transcript.Entry, start int) map[string]int {
	callAt := map[string]int{}
	for _, e := range path[start:] {
		if isToolResult(e) {
			callAt[e.ToolCallID] = -1
		}
	}
	for i, e := range path {
		for _, id := range e.ToolCallIDs {
			if at, ok := callAt[id]; ok && at < 0 {
				callAt[id] = i
			}
		}
	}
	return callAt
}

// nothingSince reports whether every entry after a root compaction
// (path[0]) was written before it: the kept tail compact --truncate
// rewrote the file to, with nothing appended since. An entry without a
// time counts as new.
func nothingSince(path []*transcript.Entry) bool {
	at := path[0].Time()
	if at.IsZero() {
		return false
	}
	for _, e := range path[1:] {
		if t := e.Time(); t.IsZero() || t.After(at) {
			return false
		}
	}
	return true
}
