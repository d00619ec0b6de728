package compaction

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// safeguard is OpenClaw's safeguard extension: required sections, history
// pruning at maxHistoryShare, the last user turns kept verbatim, adaptive
// staged chunk summaries merged into one (tool-call groups never split),
// oversized messages noted and left out, an optional quality guard, tool
// failures and file lists appended, all capped at 16,000 characters with the
// appended sections kept whole.
func (r *run) safeguard(msgs, prefix []*Msg) error {
	prev := stripFileBlocks(r.p.PreviousSummary)
	tail := safeguardTail{failures: formatFailures(r.out.Failures, r.out.FailuresTotal),
		files: formatFileLists(r.out.ReadFiles, r.out.ModifiedFiles, 900, 2000)}

	if !meaningful(msgs) && !meaningful(prefix) {
		// A boundary compaction: nothing real to summarise, but the entry
		// stops the next trigger from firing on the same history.
		dec := prev
		if dec == "" {
			dec = "No prior history."
		}
		r.out.Summary = tail.with("## Decisions\n" + dec + "\n\n## Open TODOs\nNone.\n\n## Constraints/Rules\nNone.\n\n## Pending user asks\nNone.\n\n## Exact identifiers\nNone captured.")
		return nil
	}

	instr := r.safeguardInstructions("")
	mainPrev, msgs, err := r.pruneToShare(msgs, prev, instr)
	if err != nil {
		return err
	}
	// The last user turns stay verbatim (in the summary, since a compaction
	// can only keep a contiguous tail).
	msgs, recent := splitRecentTurns(msgs, r.set.RecentTurnsPreserve)
	r.out.Preserved = len(recent)
	preserved := formatRecentTurns(recent)

	// Before the history goroutine starts: dropOversized counts into r.out.
	prefix, prefixNotes := r.dropOversized(prefix)
	history, turn, err := r.safeguardParts(msgs, prefix, mainPrev, instr)
	if err != nil {
		return err
	}
	if history == "" {
		history = "## Decisions\nNo prior history.\n\n## Open TODOs\nNone.\n\n## Constraints/Rules\nNone.\n\n## Pending user asks\nNone.\n\n## Exact identifiers\nNone captured."
	}
	if len(prefixNotes) > 0 {
		turn = strings.TrimSpace(turn + "\n\n## Omitted from this summary\n" + strings.Join(prefixNotes, "\n"))
	}
	splitSec := ""
	if turn != "" {
		splitSec = strings.TrimPrefix(splitTurnJoin, "\n\n") + turn
	}
	tail.turns = splitSec + joinNonEmpty(preserved)
	summary := tail.with(history)

	if r.set.QualityGuard {
		all := append(append([]*Msg{}, msgs...), recent...)
		all = append(all, prefix...)
		if summary, err = r.guardQuality(summary, msgs, all, mainPrev, tail); err != nil {
			return err
		}
	}
	r.out.Summary = summary
	return nil
}

// safeguardTail is what follows the history in a safeguard summary: the
// split turn and the preserved turns, the tool failures, the file lists.
type safeguardTail struct {
	turns, failures, files string
}

// with assembles the summary of history followed by the tail.
func (t safeguardTail) with(history string) string {
	return assemble(history, t.turns, t.failures, t.files)
}

// pruneToShare prunes the history msgs to maxHistoryShare of the window.
// It returns the previous summary for the main pass (prev, or the summary
// of prev and the pruned messages) and the messages left.
func (r *run) pruneToShare(msgs []*Msg, prev, instr string) (string, []*Msg, error) {
	// History pruning: a history larger than maxHistoryShare of the window
	// cannot be summarised in one go; its oldest chunks are summarised
	// first and that summary becomes the main pass's previous summary, so
	// nothing is dropped.
	budget := int(math.Floor(float64(r.set.ContextWindow) * r.set.MaxHistoryShare))
	kept, dropped := pruneHistory(msgs, budget, r.count)
	if len(dropped) == 0 {
		return prev, msgs, nil
	}
	r.out.Pruned = len(dropped)
	s, err := r.inStages(dropped, prev, instr)
	if err != nil {
		return "", nil, fmt.Errorf("summarising the pruned history: %w", err)
	}
	return s, kept, nil
}

// safeguardParts summarises the history msgs (after mainPrev) and the
// split turn's prefix at the same time.
func (r *run) safeguardParts(msgs, prefix []*Msg, mainPrev, instr string) (history, turn string, err error) {
	var herr, terr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if len(msgs) == 0 {
			history = mainPrev
			return
		}
		history, herr = r.inStages(msgs, mainPrev, instr)
	}()
	if len(prefix) > 0 && meaningful(prefix) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn, terr = r.call(&Request{Kind: KindTurnPrefix, Layout: LayoutTurnPrefix, Messages: prefix,
				Transcript: serialize(prefix, headPreview(2000), 4000), Instructions: r.safeguardInstructions(""),
				MaxOutputTokens: r.p.ReserveTokens / 2, MaxChars: MaxSummaryChars / 4})
		}()
	}
	wg.Wait()
	if herr != nil {
		return "", "", herr
	}
	if terr != nil {
		return "", "", fmt.Errorf("split-turn prefix: %w", terr)
	}
	return history, turn, nil
}

// guardQuality is the quality guard: while summary misses what all (every
// summarised message) holds, it summarises msgs again with the issues as
// feedback, up to QualityGuardRetries times.
func (r *run) guardQuality(summary string, msgs, all []*Msg, mainPrev string, tail safeguardTail) (string, error) {
	issues := qualityIssues(summary, all, r.set.IdentifierPolicy == "strict")
	for try := 0; len(issues) > 0 && try < r.set.QualityGuardRetries && len(msgs) > 0; try++ {
		r.out.QualityRetries++
		h, err := r.inStages(msgs, mainPrev, r.safeguardInstructions("The previous attempt was rejected because: "+strings.Join(issues, "; ")+". Fix that."))
		if err != nil {
			return "", err
		}
		cand := tail.with(h)
		issues = qualityIssues(cand, all, r.set.IdentifierPolicy == "strict")
		summary = cand
	}
	r.out.QualityIssues = issues
	return summary, nil
}

func joinNonEmpty(s string) string {
	if s == "" {
		return ""
	}
	return "\n\n" + s
}

func (r *run) count(m *Msg) int { return r.set.Count(m.E) }

func (r *run) safeguardInstructions(feedback string) string {
	var parts []string
	parts = append(parts, "Use exactly the five headings ## Decisions, ## Open TODOs, ## Constraints/Rules, ## Pending user asks, ## Exact identifiers. Keep every user ask that is not fully resolved.")
	switch r.set.IdentifierPolicy {
	case "strict":
		parts = append(parts, identifierRule)
	case "custom":
		if r.set.IdentifierInstructions != "" {
			parts = append(parts, r.set.IdentifierInstructions)
		}
	}
	parts = append(parts, languageRule)
	if r.set.CustomInstructions != "" {
		parts = append(parts, r.set.CustomInstructions)
	}
	if feedback != "" {
		parts = append(parts, feedback)
	}
	return strings.Join(parts, "\n")
}

// inStages summarises msgs into prev: oversized messages are noted and left
// out; a history that fits one chunk goes in one (chunked) pass, a larger
// one is split in two by token share, each half summarised on its own and
// the halves merged into the previous summary.
func (r *run) inStages(msgs []*Msg, prev, instr string) (string, error) {
	window := r.set.ContextWindow
	msgs, notes := r.dropOversized(msgs)
	maxChunk := int(math.Floor(float64(window)*adaptiveChunkRatio(msgs, window, r.count))) - summaryOverhead
	if maxChunk < 1 {
		maxChunk = 1
	}
	total := sumTokens(msgs, r.count)
	var out string
	var err error
	switch {
	case len(msgs) == 0:
		out = prev
	case len(msgs) < 4 || total <= maxChunk:
		out, err = r.chunked(msgs, prev, instr, maxChunk)
	default:
		parts := splitByTokenShare(msgs, 2, r.count)
		var partials []string
		for _, part := range parts {
			s, err := r.chunked(part, "", instr, maxChunk)
			if err != nil {
				return "", err
			}
			partials = append(partials, s)
		}
		if len(partials) == 1 && prev == "" {
			out = partials[0]
		} else {
			r.out.Chunks++
			out, err = r.call(&Request{Kind: KindMerge, Layout: LayoutSafeguard, Partials: partials, PreviousSummary: prev,
				Instructions: instr, MaxOutputTokens: r.p.ReserveTokens * 8 / 10, MaxChars: MaxSummaryChars})
		}
	}
	if err != nil {
		return "", err
	}
	if len(notes) > 0 {
		out = strings.TrimSpace(out + "\n\n## Omitted from this summary\n" + strings.Join(notes, "\n"))
	}
	return out, nil
}

// dropOversized leaves out messages whose estimate (with the safety
// margin) exceeds half the window, with one note line each.
func (r *run) dropOversized(msgs []*Msg) ([]*Msg, []string) {
	var notes []string
	var keep []*Msg
	for _, m := range msgs {
		if float64(r.count(m))*safetyMargin > 0.5*float64(r.set.ContextWindow) {
			notes = append(notes, fmt.Sprintf("- A %s message (line %d, ~%dK tokens) was too large to summarise and is omitted.", m.Role(), m.E.Line, (r.count(m)+500)/1000))
			r.out.Omitted++
			continue
		}
		keep = append(keep, m)
	}
	return keep, notes
}

// chunked summarises msgs in chunks of at most maxChunk/1.2 tokens, each
// chunk's summary becoming the next one's previous summary.
func (r *run) chunked(msgs []*Msg, prev, instr string, maxChunk int) (string, error) {
	sum := prev
	for _, ch := range chunkByMaxTokens(msgs, maxChunk, r.count) {
		r.out.Chunks++
		s, err := r.call(&Request{Kind: KindHistory, Layout: LayoutSafeguard, Messages: ch,
			Transcript: serialize(ch, headPreview(2000), 4000), PreviousSummary: sum, Instructions: instr,
			MaxOutputTokens: r.p.ReserveTokens * 8 / 10, MaxChars: MaxSummaryChars})
		if err != nil {
			return "", err
		}
		sum = s
	}
	return sum, nil
}

// adaptiveChunkRatio shrinks chunks when messages are large on average
// (OpenClaw's computeAdaptiveChunkRatio).
func adaptiveChunkRatio(msgs []*Msg, window int, count func(*Msg) int) float64 {
	if len(msgs) == 0 || window <= 0 {
		return baseChunkRatio
	}
	total := sumTokens(msgs, count)
	avg := float64(total) / float64(len(msgs)) * safetyMargin / float64(window)
	if avg > 0.1 {
		return math.Max(minChunkRatio, baseChunkRatio-math.Min(2*avg, baseChunkRatio-minChunkRatio))
	}
	return baseChunkRatio
}

// sumTokens is the size of msgs by count.
func sumTokens(msgs []*Msg, count func(*Msg) int) int {
	n := 0
	for _, m := range msgs {
		n += count(m)
	}
	return n
}

// toolGroups splits messages into atomic groups: an assistant that calls
// tools together with the results of those calls (pi appends them right
// after it); every other message alone. Chunk and split boundaries only
// fall between groups, so no chunk holds a call without its result.
func toolGroups(msgs []*Msg) [][]*Msg {
	var out [][]*Msg
	pending := map[string]bool{}
	for _, m := range msgs {
		if len(pending) > 0 && m.Role() == "toolResult" && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], m)
			delete(pending, m.E.ToolCallID)
			continue
		}
		pending = map[string]bool{}
		out = append(out, []*Msg{m})
		if m.Role() == "assistant" && m.M.StopReason != "aborted" && m.M.StopReason != "error" {
			for _, id := range m.E.ToolCallIDs {
				pending[id] = true
			}
		}
	}
	return out
}

// splitByTokenShare cuts msgs into at most parts chunks of about equal
// tokens, at group boundaries.
func splitByTokenShare(msgs []*Msg, parts int, count func(*Msg) int) [][]*Msg {
	if parts <= 1 || len(msgs) == 0 {
		return [][]*Msg{msgs}
	}
	total := sumTokens(msgs, count)
	target := float64(total) / float64(parts)
	return packGroups(msgs, count, func(chunks, curTok, groupTok int) bool {
		return chunks < parts-1 && float64(curTok+groupTok) > target
	})
}

// chunkByMaxTokens packs groups greedily up to maxTokens/1.2; a group above
// that becomes its own chunk.
func chunkByMaxTokens(msgs []*Msg, maxTokens int, count func(*Msg) int) [][]*Msg {
	limit := int(float64(maxTokens) / safetyMargin)
	if limit < 1 {
		limit = 1
	}
	return packGroups(msgs, count, func(_, curTok, groupTok int) bool { return curTok+groupTok > limit })
}

// packGroups packs the tool groups of msgs, in order, into chunks: a group
// goes into the current chunk unless full says that chunk (curTok tokens,
// after the chunks already closed) cannot take a group of groupTok tokens;
// then a new chunk starts with it. full is asked only about a chunk holding
// something, so a group too large for any chunk is a chunk of its own.
func packGroups(msgs []*Msg, count func(*Msg) int, full func(chunks, curTok, groupTok int) bool) [][]*Msg {
	var out [][]*Msg
	var cur []*Msg
	curTok := 0
	for _, g := range toolGroups(msgs) {
		gt := sumTokens(g, count)
		if len(cur) > 0 && full(len(out), curTok, gt) {
			out = append(out, cur)
			cur, curTok = nil, 0
		}
		cur = append(cur, g...)
		curTok += gt
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// pruneHistory drops the oldest token-share halves until the rest fits
// budget; it returns what is kept and what was dropped (to be summarised
// separately). Group boundaries keep tool pairs together.
func pruneHistory(msgs []*Msg, budget int, count func(*Msg) int) (kept, dropped []*Msg) {
	kept = msgs
	for {
		total := sumTokens(kept, count)
		if total <= budget || len(kept) < 2 {
			return kept, dropped
		}
		parts := splitByTokenShare(kept, 2, count)
		if len(parts) < 2 {
			return kept, dropped
		}
		dropped = append(dropped, parts[0]...)
		kept = parts[1]
	}
}

// splitRecentTurns takes the last n user turns (a user message and
// everything after it) out of msgs.
func splitRecentTurns(msgs []*Msg, n int) (rest, recent []*Msg) {
	if n <= 0 {
		return msgs, nil
	}
	seen := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role() == "user" {
			seen++
			if seen == n {
				return msgs[:i], msgs[i:]
			}
		}
	}
	// fewer turns than n: keep them all verbatim only if there is a user
	// turn at all, else summarise everything
	for i, m := range msgs {
		if m.Role() == "user" {
			return msgs[:i], msgs[i:]
		}
	}
	return msgs, nil
}

// formatRecentTurns renders preserved turns, each line cut to 600 chars.
func formatRecentTurns(msgs []*Msg) string {
	if len(msgs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Recent turns preserved verbatim\n")
	for _, m := range msgs {
		var label, text string
		switch m.Role() {
		case "user":
			label, text = "User", msgText(m.M)
		case "assistant":
			label, text = "Assistant", assistantText(m.M)
			if text == "" && len(m.M.ToolCalls()) > 0 {
				var calls []string
				for _, c := range m.M.ToolCalls() {
					calls = append(calls, c.Name)
				}
				text = "[called " + strings.Join(calls, ", ") + "]"
			}
		case "toolResult":
			label, text = "Tool result ("+m.M.ToolName+")", msgText(m.M)
		default:
			label, text = m.Role(), msgText(m.M)
		}
		if m.E.Images > 0 {
			text += fmt.Sprintf(" [non-text content: image x%d]", m.E.Images)
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if u16len(text) > maxRecentTurnLen {
			text = cutUnits(text, maxRecentTurnLen) + "..."
		}
		fmt.Fprintf(&b, "- %s: %s\n", label, text)
	}
	return strings.TrimRight(b.String(), "\n")
}

const truncationMarker = "[Compaction summary truncated to fit budget]"

// assemble joins the body and the appended sections; the sections are kept
// whole and the body is cut so the total stays within 16,000 characters.
func assemble(body, extra, failures, files string) string {
	var suffix strings.Builder
	suffix.WriteString(extra)
	for _, s := range []string{failures, files} {
		if s != "" {
			suffix.WriteString("\n\n" + s)
		}
	}
	suf := suffix.String()
	room := MaxSummaryChars - u16len(suf)
	if u16len(body) > room {
		keep := room - u16len(truncationMarker) - 2
		if keep < 0 {
			keep = 0
		}
		body = strings.TrimSpace(cutUnits(body, keep)) + "\n\n" + truncationMarker
	}
	out := body + suf
	if u16len(out) > MaxSummaryChars {
		// the sections alone exceed the cap: cut the tail (only possible
		// with pathological preserved turns)
		out = cutUnits(out, MaxSummaryChars)
	}
	return out
}

var reWords = lazyre.New(`[\p{L}\p{N}_]{4,}`)

var stopWords = map[string]bool{"this": true, "that": true, "with": true, "from": true, "have": true, "what": true,
	"please": true, "could": true, "would": true, "should": true, "there": true, "then": true, "them": true,
	"they": true, "your": true, "about": true, "into": true, "just": true, "also": true, "make": true, "sure": true}

// qualityIssues checks a safeguard summary: required headings, identifiers
// from the last 10 messages (strict policy), and the latest user ask.
func qualityIssues(summary string, msgs []*Msg, strictIDs bool) []string {
	var issues []string
	for _, h := range LayoutSafeguard.Headings() {
		if !strings.Contains(summary, h) {
			issues = append(issues, "missing heading "+h)
		}
	}
	if strictIDs {
		from := len(msgs) - 10
		if from < 0 {
			from = 0
		}
		var srcs []facts.Source
		for _, m := range msgs[from:] {
			srcs = append(srcs, facts.FromMessage(m.E, m.M)...)
		}
		var ids []facts.Fact
		for _, f := range facts.Detect(srcs) {
			if f.Class == facts.Identifier {
				ids = append(ids, f)
			}
		}
		// the most recent first, as OpenClaw checks up to 12
		sort.SliceStable(ids, func(i, j int) bool { return ids[i].Seq > ids[j].Seq })
		var missing []string
		for i, id := range ids {
			if i >= 12 {
				break
			}
			if !strings.Contains(summary, id.Value) {
				missing = append(missing, id.Value)
			}
		}
		if len(missing) > 0 {
			issues = append(issues, "identifiers not copied exactly: "+strings.Join(missing, ", "))
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role() != "user" {
			continue
		}
		var kws []string
		seen := map[string]bool{}
		for _, w := range reWords().FindAllString(strings.ToLower(msgText(msgs[i].M)), -1) {
			if !stopWords[w] && !seen[w] {
				seen[w] = true
				kws = append(kws, w)
			}
		}
		if len(kws) >= 3 {
			low := strings.ToLower(summary)
			hits := 0
			for _, k := range kws {
				if strings.Contains(low, k) {
					hits++
				}
			}
			if hits < 2 {
				issues = append(issues, "the latest user ask is not reflected")
			}
		}
		break
	}
	return issues
}
