package compaction

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/tokenizer"
)

// Extractive is the built-in summariser: deterministic, offline, free. It
// keeps, under the headings of the requested layout, every fact the fact
// detector (pkg/facts) finds in the region — constraints, open requests,
// decisions, errors, numbers with their context, identifiers — each once,
// in the shortest sentence that carries it, plus the goal, the latest ask
// and what the agent was doing. The previous summary's lines are carried
// forward. When the token budget binds, items are kept in the order a
// resumed agent needs them (see itemTier) and the rest is counted in one
// closing line. It cannot understand; it can only not forget.
type Extractive struct{}

// Name implements Summarizer.
func (Extractive) Name() string { return "extractive" }

// Summarize implements Summarizer.
func (Extractive) Summarize(_ context.Context, r *Request) (string, error) {
	layout := r.Layout
	if layout == LayoutNarrative || layout == "" {
		layout = LayoutCheckpoint
	}
	var items []item
	if r.PreviousSummary != "" && r.Kind != KindTurnPrefix {
		items = append(items, summaryItems(r.PreviousSummary, -1)...)
	}
	switch r.Kind {
	case KindMerge:
		for i, p := range r.Partials {
			items = append(items, summaryItems(p, i)...)
		}
	default:
		region := regionItems(r.Messages)
		if hasSlot(items, slotGoal) {
			// the earlier summary states the goal; the region's first ask
			// is one more ask
			for i := range region {
				if region[i].slot == slotGoal {
					region[i].slot = slotAsk
				}
			}
		}
		items = append(items, region...)
	}
	out := renderItems(layout, items, extractiveBudget(r))
	if strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("extractive summariser found no text to summarise")
	}
	return out, nil
}

func hasSlot(items []item, s slot) bool {
	for _, it := range items {
		if it.slot == s {
			return true
		}
	}
	return false
}

// extractiveBudget is the request's budget in o200k tokens: BudgetTokens,
// bounded by MaxChars (about 4 characters a token) when that is set.
func extractiveBudget(r *Request) int {
	b := r.BudgetTokens
	if b <= 0 {
		b = DefaultSummaryBudgetTokens
	}
	if r.MaxChars > 0 && r.MaxChars/4 < b {
		b = r.MaxChars / 4
	}
	return b
}

// slot is where an item goes; each layout maps slots to its headings.
type slot int

const (
	slotGoal slot = iota
	slotConstraint
	slotDone
	slotInProgress
	slotBlocked
	slotDecision
	slotNext
	slotAsk // a user's ask (Next Steps, or Pending user asks)
	slotContext
	slotEarlier
	nSlots
)

// item is one line of the summary.
type item struct {
	slot slot
	text string
	// tier orders items when the budget binds (lower first), seq within a
	// tier (higher = more recent = first) and, inside a section, on output
	// (lower first).
	tier, seq int
	// fact is the detected fact the item carries (nil for goal, progress
	// and carried lines): an item whose fact an earlier item already
	// carries is left out, so every fact appears once.
	fact *facts.Fact
}

// Tiers: the user's constraints first, then open requests, decisions,
// errors, numbers, identifiers; facts seen only in tool output a step
// lower per level, so a README's "must" does not push out the user's own
// words.
func factTier(f facts.Fact) int {
	t := f.Class.Rank()
	switch facts.OriginRank(f.Origin) {
	case 2: // tool-call arguments
		t += 2
	case 3: // tool output
		t += 4
	}
	return t
}

const (
	tierGoal     = -2 // the goal and the latest ask come first
	tierProgress = 3  // what was done / being done
	tierDone     = 7  // finished work in the agent's own words
)

// itemChars bounds a goal or progress line.
const itemChars = 400

// regionItems turns the region's messages into items.
func regionItems(msgs []*Msg) []item {
	var users []*Msg
	var lastAssistant string
	var finals []item
	tools := map[string]int{}
	ops := NewFileOps()
	for i, mm := range msgs {
		switch mm.Role() {
		case "user":
			t := strings.TrimSpace(msgText(mm.M))
			if t != "" && !(strings.HasPrefix(t, "/") && len(t) < 16 && !strings.Contains(t, " ")) {
				users = append(users, mm)
			}
		case "assistant":
			ops.AddMessage(mm.M)
			for _, b := range mm.M.ToolCalls() {
				tools[b.Name]++
			}
			t := strings.TrimSpace(assistantText(mm.M))
			if t == "" {
				continue
			}
			lastAssistant = t
			if mm.M.StopReason == "stop" || mm.M.StopReason == "length" {
				if ss := facts.Sentences(t); len(ss) > 0 {
					finals = append(finals, item{slot: slotDone, text: oneLine(ss[0], 220), tier: tierDone, seq: i})
				}
			}
		}
	}
	var out []item
	if len(users) > 0 {
		out = append(out, item{slot: slotGoal, text: oneLine(msgText(users[0].M), 600), tier: tierGoal, seq: 0})
		if last := users[len(users)-1]; last != users[0] {
			out = append(out, item{slot: slotAsk, text: fmt.Sprintf("Latest user message (line %d): %s", last.E.Line, oneLine(msgText(last.M), itemChars)),
				tier: tierGoal, seq: len(msgs)})
		}
	}
	if lastAssistant != "" {
		out = append(out, item{slot: slotInProgress, text: "Last agent message: " + oneLine(lastAssistant, itemChars), tier: tierGoal + 1, seq: len(msgs)})
	}
	if tl := toolLine(tools); tl != "" {
		out = append(out, item{slot: slotDone, text: tl, tier: tierProgress, seq: -1})
	}
	if _, modified := ops.Lists(); len(modified) > 0 {
		out = append(out, item{slot: slotDone, text: "Modified " + joinCap(modified, 600), tier: tierProgress, seq: 0})
	}
	if len(finals) > 8 {
		finals = finals[len(finals)-8:]
	}
	out = append(out, finals...)
	for _, f := range facts.Merge(msgFacts(msgs)) {
		f := f
		out = append(out, factItem(&f))
	}
	return out
}

// factItem places a fact: statements under their own headings, numbers in
// their sentence, identifiers bare when they come from tool output (the
// sentence around them is usually a log line) and in their sentence when
// someone said them.
func factItem(f *facts.Fact) item {
	it := item{text: f.Sentence, tier: factTier(*f), seq: f.Seq, fact: f}
	switch f.Class {
	case facts.Constraint:
		it.slot = slotConstraint
	case facts.Request:
		it.slot = slotNext
		if f.Origin == "user" {
			it.slot = slotAsk
		}
	case facts.Decision:
		it.slot = slotDecision
	case facts.Error:
		it.slot = slotBlocked
		it.text = fmt.Sprintf("line %d: %s", f.Line, f.Sentence)
	case facts.Number:
		it.slot = slotContext
	default:
		it.slot = slotContext
		if facts.OriginRank(f.Origin) >= 2 || u16len(f.Sentence) > 200 {
			it.text = f.Value
		}
	}
	it.text = oneLine(it.text, facts.MaxSentence+20)
	return it
}

func toolLine(tools map[string]int) string {
	if len(tools) == 0 {
		return ""
	}
	names := make([]string, 0, len(tools))
	total := 0
	for n, c := range tools {
		names = append(names, n)
		total += c
	}
	sort.Slice(names, func(i, j int) bool {
		if tools[names[i]] != tools[names[j]] {
			return tools[names[i]] > tools[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s ×%d", n, tools[n])
	}
	return fmt.Sprintf("%d tool calls: %s", total, strings.Join(parts, ", "))
}

func joinCap(items []string, max int) string {
	var b strings.Builder
	for i, it := range items {
		if b.Len()+len(it)+2 > max {
			fmt.Fprintf(&b, " …and %d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it)
	}
	return b.String()
}

// headingSlots maps the headings of every layout (ours, pi's, OpenClaw's,
// the single-pass summary's) to slots, so a previous summary written by any of them is
// carried forward under the right heading.
var headingSlots = map[string]slot{
	"## Goal": slotGoal, "## Original request (verbatim)": slotGoal, "## Original Request": slotGoal, "## Request": slotGoal,
	"## Constraints & Preferences": slotConstraint, "## Constraints/Rules": slotConstraint,
	"## Key Decisions": slotDecision, "## Decisions": slotDecision,
	"## Next Steps": slotNext, "## Open TODOs": slotNext, "## Pending user asks": slotAsk,
	"## Critical Context": slotContext, "## Exact identifiers": slotContext, "## Needed for what follows": slotContext,
	"## Context for Suffix": slotContext,
	"## Work so far":        slotDone, "## Early Progress": slotDone, "## Tool Failures": slotBlocked,
}

var subSlots = map[string]slot{"### Done": slotDone, "### In Progress": slotInProgress, "### Blocked": slotBlocked}

// carriedTier ranks a previous summary's lines by where they stood.
var carriedTier = [nSlots]int{slotGoal: tierGoal, slotConstraint: 0, slotAsk: 1, slotNext: 1, slotDecision: 2, slotBlocked: 3,
	slotContext: 4, slotInProgress: 6, slotDone: 6, slotEarlier: 6}

var (
	reListMark = regexp.MustCompile(`^\s*(?:[-*•]\s+)?(?:\d+[.)]\s+)?(?:\[[ xX]\]\s+)?`)
	reNoneLine = regexp.MustCompile(`(?i)^(?:none\.?|none captured\.?|no prior history\.?|no earlier history\.?)$`)
)

// summaryItems turns an earlier summary (or a partial one) into items: one
// per line, list markers and numbering stripped (they are rendered again),
// placed by heading.
func summaryItems(summary string, part int) []item {
	var out []item
	n := 0
	for _, sec := range parseSections(summary) {
		s, ok := headingSlots[sec.Heading]
		if !ok {
			s = slotEarlier
			if sec.Heading != "" {
				out = append(out, item{slot: slotEarlier, text: "(" + strings.TrimPrefix(sec.Heading, "## ") + ")", tier: carriedTier[slotEarlier], seq: part*100000 + n})
				n++
			}
		}
		cur := s
		for _, line := range sec.Lines {
			t := strings.TrimSpace(line)
			if sub, ok := subSlots[t]; ok && s != slotEarlier {
				cur = sub
				continue
			}
			if t == "---" || t == "**Turn Context (split turn):**" || strings.HasPrefix(t, "[… ") {
				continue
			}
			t = strings.TrimSpace(reListMark.ReplaceAllString(t, ""))
			if t == "" || reNoneLine.MatchString(t) || strings.HasPrefix(t, "…and ") {
				continue
			}
			out = append(out, item{slot: cur, text: t, tier: carriedTier[cur], seq: part*100000 + n})
			n++
		}
	}
	return out
}

// layoutSections says, per layout, which slots go under which heading.
type layoutSection struct {
	heading string
	slots   []slot
	// sub are ### sub-headings, one per slot (checkpoint progress).
	sub []string
	// numbered renders the lines as 1., 2., …
	numbered bool
	// checkbox prefixes lines with [x] (done) or [ ] (in progress).
	checkbox bool
}

func layoutOf(l Layout) []layoutSection {
	switch l {
	case LayoutSafeguard:
		return []layoutSection{
			{heading: "## Decisions", slots: []slot{slotGoal, slotDecision}},
			{heading: "## Open TODOs", slots: []slot{slotInProgress, slotNext, slotBlocked, slotDone}},
			{heading: "## Constraints/Rules", slots: []slot{slotConstraint}},
			{heading: "## Pending user asks", slots: []slot{slotAsk}},
			{heading: "## Exact identifiers", slots: []slot{slotContext, slotEarlier}},
		}
	case LayoutTurnPrefix:
		return []layoutSection{
			{heading: "## Request", slots: []slot{slotGoal, slotAsk, slotConstraint, slotNext}},
			{heading: "## Work so far", slots: []slot{slotDone, slotDecision, slotBlocked, slotInProgress}},
			{heading: "## Needed for what follows", slots: []slot{slotContext, slotEarlier}},
		}
	}
	return []layoutSection{
		{heading: "## Goal", slots: []slot{slotGoal}},
		{heading: "## Constraints & Preferences", slots: []slot{slotConstraint}},
		{heading: "## Progress", slots: []slot{slotDone, slotInProgress, slotBlocked}, sub: []string{"### Done", "### In Progress", "### Blocked"}, checkbox: true},
		{heading: "## Key Decisions", slots: []slot{slotDecision}},
		{heading: "## Next Steps", slots: []slot{slotAsk, slotNext}, numbered: true},
		{heading: "## Critical Context", slots: []slot{slotContext}},
		{heading: "## Earlier context", slots: []slot{slotEarlier}},
	}
}

// renderItems chooses the items that fit budget o200k tokens, in tier
// order, leaving out items whose fact (or text) is already carried, and
// renders them under the layout's headings in the order they happened.
func renderItems(l Layout, items []item, budget int) string {
	secs := layoutOf(l)
	// fixed cost: headings, sub-headings, "- None." lines, the closing note
	const noteReserve = 24
	c := chooseItems(items, budget-layoutCost(secs)-noteReserve)

	bySlot := make([][]item, nSlots)
	for i, it := range items {
		if c.chosen[i] {
			bySlot[it.slot] = append(bySlot[it.slot], it)
		}
	}
	for s := range bySlot {
		sort.SliceStable(bySlot[s], func(a, b int) bool { return bySlot[s][a].seq < bySlot[s][b].seq })
	}
	var blocks []sectionBlock
	for _, sec := range secs {
		if lines, ok := sectionLines(sec, bySlot); ok {
			blocks = append(blocks, sectionBlock{sec.heading, lines})
		}
	}
	if c.left > 0 && len(blocks) > 0 {
		last := &blocks[len(blocks)-1]
		last.lines = append(last.lines, fmt.Sprintf("- …and %d more items not kept (summary budget %d tokens; the first from line %d)", c.left, budget, minInt(c.leftLines)))
	}
	parts := make([]string, len(blocks))
	for i, bl := range blocks {
		parts[i] = bl.heading + "\n" + strings.Join(bl.lines, "\n")
	}
	return strings.Join(parts, "\n\n")
}

// sectionBlock is one rendered section of a summary.
type sectionBlock struct {
	heading string
	lines   []string
}

// layoutCost is what a layout's headings and sub-headings cost, each with
// a "- None." line.
func layoutCost(secs []layoutSection) int {
	fixed := 0
	for _, s := range secs {
		fixed += countTokens(s.heading) + 4
		for _, h := range s.sub {
			fixed += countTokens(h) + 4
		}
	}
	return fixed
}

// itemChoice is what chooseItems kept (chosen, by item index) and how many
// items it left out for lack of room, with the lines of their facts.
type itemChoice struct {
	chosen    []bool
	left      int
	leftLines []int
}

// chooseItems picks items in tier order, newest first within a tier, while
// they fit room tokens, skipping an item whose text or fact an item
// already chosen carries.
func chooseItems(items []item, room int) itemChoice {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := items[order[a]], items[order[b]]
		if x.tier != y.tier {
			return x.tier < y.tier
		}
		return x.seq > y.seq
	})
	c := itemChoice{chosen: make([]bool, len(items))}
	carried := facts.NewCorpus()
	seenText := map[string]bool{}
	for _, i := range order {
		it := items[i]
		key := strings.ToLower(strings.Join(strings.Fields(it.text), " "))
		if seenText[key] {
			continue
		}
		if it.fact != nil && carried.Has(*it.fact) {
			continue // an item already chosen says it
		}
		cost := countTokens(it.text) + 3
		if cost > room {
			c.left++
			if it.fact != nil {
				c.leftLines = append(c.leftLines, it.fact.Line)
			}
			continue
		}
		room -= cost
		c.chosen[i] = true
		seenText[key] = true
		carried.Add(it.text)
	}
	return c
}

// sectionLines renders a section from the chosen items by slot; ok is
// false when the section is left out.
func sectionLines(sec layoutSection, bySlot [][]item) (lines []string, ok bool) {
	for k, s := range sec.slots {
		sub := slotLines(sec, s, bySlot[s])
		if len(sec.sub) > 0 {
			if k > 0 {
				lines = append(lines, "")
			}
			lines = append(lines, sec.sub[k])
			lines = append(lines, listLines(sub, false)...)
			if len(sub) == 0 {
				lines = append(lines, "- None.")
			}
			continue
		}
		lines = append(lines, sub...)
	}
	if len(sec.sub) == 0 {
		if sec.slots[0] == slotEarlier && len(lines) == 0 {
			return nil, false // no earlier context: no heading
		}
		lines = listLines(lines, sec.numbered)
		if len(lines) == 0 {
			lines = []string{"- None."}
		}
	}
	return lines, true
}

// slotLines are the lines of one slot's items: ticked or not in a checkbox
// section, bare identifiers grouped in the context slot.
func slotLines(sec layoutSection, s slot, items []item) []string {
	if s == slotContext {
		return groupBareIdentifiers(items)
	}
	var sub []string
	for _, it := range items {
		line := it.text
		if sec.checkbox {
			switch s {
			case slotDone:
				line = "[x] " + line
			case slotInProgress:
				line = "[ ] " + line
			}
		}
		sub = append(sub, line)
	}
	return sub
}

// identifierGroups labels the lines bare identifiers are grouped on, by
// facts' identifier kinds.
var identifierGroups = map[string]string{"path": "Files", "url": "URLs", "hash": "Hashes", "uuid": "UUIDs",
	"hostport": "Hosts", "ticket": "Tickets", "issue": "Issues", "id": "Ids"}

// groupBareIdentifiers renders context items. Identifiers found without a
// sentence worth keeping (commit hashes, paths, ids) go on one line per
// kind — "Hashes: 5a3eb40, 6838135" — instead of a line each: the same
// values verbatim, readable by a resumed agent, and fewer tokens than the
// budget charged for them. Everything else stays a line of its own, in
// order.
func groupBareIdentifiers(items []item) []string {
	var lines, kinds []string
	groups := map[string][]string{}
	for _, it := range items {
		label := ""
		switch {
		case it.fact != nil && it.fact.Class == facts.Identifier && it.text == it.fact.Value:
			label = identifierGroups[it.fact.Kind]
		case it.fact == nil && !strings.ContainsAny(it.text, " \t") && len(it.text) <= 120:
			label = "Other identifiers" // carried from an earlier summary's list
		}
		if label == "" {
			lines = append(lines, it.text)
			continue
		}
		if groups[label] == nil {
			kinds = append(kinds, label)
		}
		groups[label] = append(groups[label], it.text)
	}
	for _, k := range kinds {
		if len(groups[k]) == 1 {
			lines = append(lines, groups[k][0])
			continue
		}
		lines = append(lines, k+": "+strings.Join(groups[k], ", "))
	}
	return lines
}

func listLines(lines []string, numbered bool) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if numbered {
			out[i] = fmt.Sprintf("%d. %s", i+1, l)
		} else {
			out[i] = "- " + l
		}
	}
	return out
}

func minInt(xs []int) int {
	m := 0
	for _, x := range xs {
		if x > 0 && (m == 0 || x < m) {
			m = x
		}
	}
	return m
}

var (
	o200kOnce sync.Once
	o200k     *tokenizer.Tokenizer
)

// countTokens is the o200k size of s, the unit of the summary budget (pi's
// chars/4 when the tokenizer cannot load).
func countTokens(s string) int {
	o200kOnce.Do(func() { o200k, _ = tokenizer.Get(string(tokenizer.O200k)) })
	if o200k == nil {
		return (u16len(s) + 3) / 4
	}
	return o200k.Count(s)
}

// parseSections splits a summary into its "## " sections; text before the
// first heading has an empty heading. File-list blocks are dropped: the new
// summary carries fresh cumulative lists.
func parseSections(s string) []section {
	s = stripFileBlocks(s)
	var out []section
	cur := section{}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "## ") {
			if cur.Heading != "" || strings.TrimSpace(strings.Join(cur.Lines, "")) != "" {
				out = append(out, cur)
			}
			cur = section{Heading: strings.TrimSpace(line)}
			continue
		}
		cur.Lines = append(cur.Lines, line)
	}
	if cur.Heading != "" || strings.TrimSpace(strings.Join(cur.Lines, "")) != "" {
		out = append(out, cur)
	}
	for i := range out {
		out[i].Lines = trimBlank(out[i].Lines)
	}
	return out
}

// section is one "## heading" block; Lines are its body lines.
type section struct {
	Heading string
	Lines   []string
}

var reFileBlock = regexp.MustCompile(`(?s)<(read-files|modified-files)>.*?</(read-files|modified-files)>`)

func stripFileBlocks(s string) string { return strings.TrimSpace(reFileBlock.ReplaceAllString(s, "")) }

func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
