package compaction

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Extractive is the built-in summariser: deterministic, offline, free. It
// fills the same sections a model would, by mechanical extraction: the goal
// from the first user messages, stated constraints, decisions, finished
// work, failures, pending asks, next steps from the last messages, and every
// identifier (paths, URLs, ids, hashes, host:port) the region mentions, as
// many as fit the budget. It cannot understand; it can only not forget.
type Extractive struct{}

// Name implements Summarizer.
func (Extractive) Name() string { return "extractive" }

// Summarize implements Summarizer.
func (Extractive) Summarize(_ context.Context, r *Request) (string, error) {
	max := r.MaxChars
	if max <= 0 {
		max = DefaultExtractiveChars
	}
	layout := r.Layout
	if layout == LayoutNarrative || layout == "" {
		layout = LayoutCheckpoint
	}
	var secs []section
	switch r.Kind {
	case KindMerge:
		secs = mergeSummaries(layout, r.Partials)
	default:
		secs = extractFacts(r.Messages).sections(layout)
	}
	if r.PreviousSummary != "" && r.Kind != KindTurnPrefix {
		secs = carryForward(layout, r.PreviousSummary, secs, max*3/10)
	}
	out := render(secs, max)
	if strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("extractive summariser found no text to summarise")
	}
	return out, nil
}

// section is one "## heading" block; Lines are its body lines.
type section struct {
	Heading string
	Lines   []string
	// Fill marks the section that takes whatever budget is left
	// (identifiers), trimmed from the end with a count of what was left out.
	Fill bool
}

type facts struct {
	goal, constraints, done, inProgress, decisions, failures, asks, next []string
	ids                                                                  []string
	tools                                                                map[string]int
	read, modified                                                       []string
	lastAssistant                                                        string
}

const itemChars = 220

var (
	reDecision   = regexp.MustCompile(`(?i)\b(decided|decide to|decision|chose|choose|going with|go with|will use|we'll use|i'll use|let's use|instead of|rather than|switch(?:ed)? to|opt(?:ed)? for|the fix is|fixed by|root cause|the (?:problem|issue|bug) (?:is|was)|turns out|approach)\b`)
	reConstraint = regexp.MustCompile(`(?i)\b(must|never|always|don't|do not|should not|shouldn't|should|make sure|avoid|no need|prefer|required?|requirement|not allowed)\b`)
	reNext       = regexp.MustCompile(`(?i)\b(next|then|todo|to do|remaining|still need|need to|will now|i'll|let me|plan|afterwards|follow[- ]up)\b`)
)

// sentences splits text into trimmed sentences: at . ! ? followed by a
// space or the end (so paths like ~/.pi survive), at CJK full stops and at
// line breaks.
func sentences(s string) []string {
	var out []string
	rs := []rune(s)
	start := 0
	emit := func(end int) {
		m := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(string(rs[start:end])), "-*#> \t"))
		if len([]rune(m)) >= 12 {
			out = append(out, m)
		}
		start = end
	}
	for i, r := range rs {
		switch {
		case r == '\n':
			emit(i)
			start = i + 1
		case r == '。' || r == '！' || r == '？':
			emit(i + 1)
		case (r == '.' || r == '!' || r == '?') && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])):
			emit(i + 1)
		}
	}
	if start < len(rs) {
		emit(len(rs))
	}
	return out
}

// extractFacts reads the messages once and keeps what a successor needs.
func extractFacts(msgs []*Msg) *facts {
	f := &facts{tools: map[string]int{}}
	ops := newFileOps()
	var users []string
	var assistantFinal []string
	var decisions, constraints []string
	ids := newIDSet()
	lastN := len(msgs) - 10
	for i, mm := range msgs {
		m := mm.M
		recent := i >= lastN
		switch mm.Role() {
		case "user":
			t := strings.TrimSpace(msgText(m))
			if t == "" {
				continue
			}
			if !(strings.HasPrefix(t, "/") && len(t) < 16 && !strings.Contains(t, " ")) {
				users = append(users, t) // not a bare slash command
			}
			for _, s := range sentences(t) {
				if reConstraint.MatchString(s) {
					constraints = append(constraints, oneLine(s, itemChars))
				}
				if reDecision.MatchString(s) {
					decisions = append(decisions, "User: "+oneLine(s, itemChars))
				}
			}
			ids.scan(t, prioConversation, i, recent)
		case "assistant":
			ops.addMessage(m)
			t := strings.TrimSpace(assistantText(m))
			for _, b := range m.ToolCalls() {
				f.tools[b.Name]++
				ids.scan(argsText(b.Arguments), prioConversation, i, recent)
			}
			if t == "" {
				continue
			}
			f.lastAssistant = t
			for _, s := range sentences(t) {
				if reDecision.MatchString(s) {
					decisions = append(decisions, oneLine(s, itemChars))
				}
			}
			if m.StopReason == "stop" || m.StopReason == "length" {
				if ss := sentences(t); len(ss) > 0 {
					assistantFinal = append(assistantFinal, oneLine(ss[0], itemChars))
				}
			}
			ids.scan(t, prioConversation, i, recent)
		case "toolResult", "bashExecution", "custom", "branchSummary":
			t := msgText(m)
			if len(t) > 20000 {
				t = t[:20000]
			}
			p := prioToolOutput
			if mm.Role() == "custom" || mm.Role() == "branchSummary" {
				p = prioConversation
			}
			ids.scan(t, p, i, recent)
		}
	}
	if len(users) > 0 {
		f.goal = append(f.goal, oneLine(users[0], 600))
		if len(users) > 1 && users[1] != users[0] {
			f.goal = append(f.goal, oneLine(users[1], 300))
		}
		// The latest asks, oldest first, the last one marked.
		from := len(users) - 3
		if from < 1 {
			from = 1
		}
		if len(users) == 1 {
			from = 0
		}
		for _, u := range users[from:] {
			f.asks = append(f.asks, oneLine(u, 400))
		}
	}
	f.constraints = firstLast(dedupe(constraints), 4, 4)
	f.decisions = lastN_(dedupe(decisions), 10)
	f.done = lastN_(dedupe(assistantFinal), 8)
	if f.lastAssistant != "" {
		for _, s := range sentences(f.lastAssistant) {
			if reNext.MatchString(s) {
				f.next = append(f.next, oneLine(s, itemChars))
			}
		}
		f.next = lastN_(dedupe(f.next), 5)
		f.inProgress = []string{"Last agent message: " + oneLine(f.lastAssistant, 400)}
	}
	fails, total := collectFailures(msgs)
	for _, fl := range fails {
		f.failures = append(f.failures, fmt.Sprintf("%s (line %d): %s", fl.Tool, fl.Line, fl.Text))
	}
	if total > len(fails) {
		f.failures = append(f.failures, fmt.Sprintf("…and %d more failed tool calls", total-len(fails)))
	}
	f.read, f.modified = ops.Lists()
	f.ids = ids.list()
	return f
}

func argsText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var parts []string
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			parts = append(parts, t)
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(t[k])
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return strings.Join(parts, "\n")
}

func bullets(items []string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, "- "+it)
	}
	return out
}

func orNone(lines []string) []string {
	if len(lines) == 0 {
		return []string{"- None."}
	}
	return lines
}

func (f *facts) toolLine() string {
	if len(f.tools) == 0 {
		return ""
	}
	names := make([]string, 0, len(f.tools))
	for n := range f.tools {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if f.tools[names[i]] != f.tools[names[j]] {
			return f.tools[names[i]] > f.tools[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	total := 0
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s ×%d", n, f.tools[n]))
		total += f.tools[n]
	}
	return fmt.Sprintf("%d tool calls: %s", total, strings.Join(parts, ", "))
}

// sections lays the facts out under a layout's headings.
func (f *facts) sections(l Layout) []section {
	var done []string
	if tl := f.toolLine(); tl != "" {
		done = append(done, "- [x] "+tl)
	}
	if len(f.modified) > 0 {
		done = append(done, "- [x] Modified "+joinCap(f.modified, 600))
	}
	for _, d := range f.done {
		done = append(done, "- [x] "+d)
	}
	ids := bullets(f.ids)
	switch l {
	case LayoutSafeguard:
		dec := bullets(f.decisions)
		if len(f.goal) > 0 {
			dec = append([]string{"- Goal: " + f.goal[0]}, dec...)
		}
		todo := append(bullets(f.next), bullets(f.inProgress)...)
		for _, fl := range f.failures {
			todo = append(todo, "- Failed earlier: "+fl)
		}
		return []section{
			{Heading: "## Decisions", Lines: orNone(dec)},
			{Heading: "## Open TODOs", Lines: orNone(todo)},
			{Heading: "## Constraints/Rules", Lines: orNone(bullets(f.constraints))},
			{Heading: "## Pending user asks", Lines: orNone(bullets(f.asks))},
			{Heading: "## Exact identifiers", Lines: ids, Fill: true},
		}
	case LayoutTurnPrefix:
		req := bullets(f.goal)
		var work []string
		if tl := f.toolLine(); tl != "" {
			work = append(work, "- "+tl)
		}
		work = append(work, bullets(f.decisions)...)
		work = append(work, bullets(f.inProgress)...)
		for _, fl := range f.failures {
			work = append(work, "- Failed: "+fl)
		}
		return []section{
			{Heading: "## Request", Lines: orNone(req)},
			{Heading: "## Work so far", Lines: orNone(work)},
			{Heading: "## Needed for what follows", Lines: ids, Fill: true},
		}
	}
	progress := []string{"### Done"}
	progress = append(progress, orNone(done)...)
	progress = append(progress, "", "### In Progress")
	progress = append(progress, orNone(bullets(prefixAll("[ ] ", f.inProgress)))...)
	progress = append(progress, "", "### Blocked")
	progress = append(progress, orNone(bullets(f.failures))...)
	var crit []string
	for _, a := range f.asks {
		crit = append(crit, "- User asked: "+a)
	}
	crit = append(crit, ids...)
	next := make([]string, 0, len(f.next))
	for i, n := range f.next {
		next = append(next, fmt.Sprintf("%d. %s", i+1, n))
	}
	if len(next) == 0 && len(f.asks) > 0 {
		next = append(next, "1. Continue with the user's latest request: "+f.asks[len(f.asks)-1])
	}
	return []section{
		{Heading: "## Goal", Lines: orNone(bullets(f.goal))},
		{Heading: "## Constraints & Preferences", Lines: orNone(bullets(f.constraints))},
		{Heading: "## Progress", Lines: progress},
		{Heading: "## Key Decisions", Lines: orNone(bullets(f.decisions))},
		{Heading: "## Next Steps", Lines: orNone(next)},
		{Heading: "## Critical Context", Lines: orNone(crit), Fill: true},
	}
}

func prefixAll(p string, items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = p + s
	}
	return out
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

// carryForward folds a previous summary into new sections: lines under a
// heading the new summary also has go first (older facts before newer),
// everything else is kept under "## Earlier context", capped at max units.
func carryForward(l Layout, prev string, secs []section, max int) []section {
	old := parseSections(prev)
	idx := map[string]int{}
	for i, s := range secs {
		idx[s.Heading] = i
	}
	var earlier []string
	for _, o := range old {
		i, ok := idx[o.Heading]
		if !ok || o.Heading == "" {
			if o.Heading != "" {
				earlier = append(earlier, o.Heading)
			}
			earlier = append(earlier, o.Lines...)
			continue
		}
		if secs[i].Heading == "## Progress" {
			// sub-headings make a line-wise merge meaningless
			earlier = append(earlier, "Earlier progress:")
			earlier = append(earlier, o.Lines...)
			continue
		}
		secs[i].Lines = dedupe(append(dropNone(o.Lines), dropNone(secs[i].Lines)...))
		if len(secs[i].Lines) == 0 {
			secs[i].Lines = []string{"- None."}
		}
	}
	earlier = trimBlank(earlier)
	if len(earlier) == 0 {
		return secs
	}
	text := strings.Join(earlier, "\n")
	// Summaries written by other tools nest "## " headings; demote them so
	// the section structure of the new summary stays flat.
	text = strings.ReplaceAll(text, "\n## ", "\n### ")
	if u16len(text) > max {
		text = cutUnits(text, max) + "\n[… earlier summary shortened to fit]"
	}
	return append([]section{{Heading: "## Earlier context", Lines: strings.Split(text, "\n")}}, secs...)
}

func dropNone(lines []string) []string {
	out := lines[:0:0]
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "- None." || t == "- None captured." || t == "" {
			continue
		}
		out = append(out, l)
	}
	return out
}

// mergeSummaries merges partial summaries section by section.
func mergeSummaries(l Layout, parts []string) []section {
	var out []section
	idx := map[string]int{}
	for _, h := range l.Headings() {
		idx[h] = len(out)
		out = append(out, section{Heading: h, Fill: h == "## Exact identifiers" || h == "## Critical Context" || h == "## Needed for what follows"})
	}
	for _, p := range parts {
		for _, s := range parseSections(p) {
			i, ok := idx[s.Heading]
			if !ok {
				idx[s.Heading] = len(out)
				i = len(out)
				out = append(out, section{Heading: s.Heading})
			}
			out[i].Lines = append(out[i].Lines, s.Lines...)
		}
	}
	for i := range out {
		if out[i].Heading == "## Progress" {
			continue
		}
		out[i].Lines = dedupe(dropNone(out[i].Lines))
		if len(out[i].Lines) == 0 {
			out[i].Lines = []string{"- None."}
		}
	}
	// identifiers: most recent part first (they were listed newest-first)
	return out
}

// render writes sections within max units: the Fill section gets what the
// others leave, trimmed from the end with a count of what did not fit.
func render(secs []section, max int) string {
	var fixed strings.Builder
	fill := -1
	for i, s := range secs {
		if s.Fill && fill < 0 {
			fill = i
			continue
		}
		fixed.WriteString(s.Heading + "\n" + strings.Join(s.Lines, "\n") + "\n\n")
	}
	var b strings.Builder
	room := max - u16len(fixed.String())
	for i, s := range secs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if s.Heading != "" {
			b.WriteString(s.Heading)
			b.WriteByte('\n')
		}
		lines := s.Lines
		if i == fill {
			lines = fitLines(lines, room-u16len(s.Heading)-4)
			if len(lines) == 0 {
				lines = []string{"- None captured."}
			}
		}
		b.WriteString(strings.Join(lines, "\n"))
	}
	out := strings.TrimSpace(b.String())
	if u16len(out) > max {
		out = strings.TrimSpace(cutUnits(out, max-40)) + "\n[… summary shortened to fit]"
	}
	return out
}

func fitLines(lines []string, room int) []string {
	used := 0
	for i, l := range lines {
		if used+u16len(l)+1 > room-30 {
			return append(lines[:i:i], fmt.Sprintf("- …and %d more not listed", len(lines)-i))
		}
		used += u16len(l) + 1
	}
	return lines
}

func dedupe(items []string) []string {
	seen := map[string]bool{}
	out := items[:0:0]
	for _, it := range items {
		k := strings.TrimSpace(it)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, it)
	}
	return out
}

func lastN_(items []string, n int) []string {
	if len(items) > n {
		return items[len(items)-n:]
	}
	return items
}

func firstLast(items []string, a, b int) []string {
	if len(items) <= a+b {
		return items
	}
	return append(append(items[:a:a], "…"), items[len(items)-b:]...)
}

// Identifier extraction.

const (
	prioRecent = iota
	prioConversation
	prioToolOutput
)

var (
	reURL      = regexp.MustCompile(`https?://[^\s"'<>()\[\]{}` + "`" + `]+`)
	reAbsPath  = regexp.MustCompile(`(?:^|[\s"'(=:\[,])((?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?)`)
	reRelPath  = regexp.MustCompile("(?:^|[\\s\"'(=:\\[,`])([\\w-][\\w.-]*(?:/[\\w.@+-]+)+\\.[A-Za-z][A-Za-z0-9]{0,7})\\b")
	reUUID     = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	reHex      = regexp.MustCompile(`\b[0-9a-f]{7,64}\b`)
	reHostPort = regexp.MustCompile(`\b(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-zA-Z][\w-]*(?:\.[\w-]+)+):\d{2,5}\b`)
	reTicket   = regexp.MustCompile(`\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b`)
	reLongNum  = regexp.MustCompile(`\b\d{6,}\b`)
	reHasDigit = regexp.MustCompile(`\d`)
	reHasAlpha = regexp.MustCompile(`[a-f]`)
)

type idInfo struct {
	prio, last int
}

type idSet struct {
	m     map[string]*idInfo
	order []string
}

func newIDSet() *idSet { return &idSet{m: map[string]*idInfo{}} }

func (s *idSet) add(id string, prio, pos int) {
	id = strings.TrimRight(id, ".,;:)'\"]}>")
	if len(id) < 4 || len(id) > 300 {
		return
	}
	if in, ok := s.m[id]; ok {
		if prio < in.prio {
			in.prio = prio
		}
		if pos > in.last {
			in.last = pos
		}
		return
	}
	s.m[id] = &idInfo{prio: prio, last: pos}
	s.order = append(s.order, id)
}

// scan adds every identifier in text. Identifiers from the last messages
// rank first (the quality guard checks those), then those the user and
// agent wrote, then those only seen in tool output.
func (s *idSet) scan(text string, prio, pos int, recent bool) {
	if text == "" {
		return
	}
	if recent {
		prio = prioRecent
	}
	urls, rest := findAndBlank(reURL, text)
	for _, l := range urls {
		s.add(text[l[0]:l[1]], prio, pos)
	}
	paths, noPaths := findAndBlank(reAbsPath, rest)
	for _, l := range paths {
		s.add(rest[l[2]:l[3]], prio, pos)
	}
	for _, m := range reRelPath.FindAllStringSubmatch(noPaths, -1) {
		s.add(m[1], prio, pos)
	}
	uuids, noUUID := findAndBlank(reUUID, rest)
	for _, l := range uuids {
		s.add(rest[l[0]:l[1]], prio, pos)
	}
	for _, h := range reHex.FindAllString(noUUID, -1) {
		if reHasDigit.MatchString(h) && reHasAlpha.MatchString(h) {
			s.add(h, prio, pos)
		}
	}
	for _, h := range reHostPort.FindAllString(rest, -1) {
		s.add(h, prio, pos)
	}
	for _, t := range reTicket.FindAllString(rest, -1) {
		s.add(t, prio, pos)
	}
	for _, n := range reLongNum.FindAllString(noUUID, -1) {
		s.add(n, prio, pos)
	}
}

// findAndBlank is FindAllStringSubmatchIndex and ReplaceAllString(s, " ")
// in one pass (for patterns that never match the empty string): the
// matches, and s with each of them replaced by a space so later patterns
// do not find their parts again.
func findAndBlank(re *regexp.Regexp, s string) ([][]int, string) {
	locs := re.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return nil, s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, l := range locs {
		b.WriteString(s[last:l[0]])
		b.WriteByte(' ')
		last = l[1]
	}
	b.WriteString(s[last:])
	return locs, b.String()
}

// list orders identifiers by rank, then most recent first.
func (s *idSet) list() []string {
	out := append([]string(nil), s.order...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := s.m[out[i]], s.m[out[j]]
		if a.prio != b.prio {
			return a.prio < b.prio
		}
		return a.last > b.last
	})
	return out
}
