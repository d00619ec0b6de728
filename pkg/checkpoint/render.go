package checkpoint

import (
	"fmt"

	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/human"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/tokenizer"
)

// Budget of the resume text (docs/design/checkpoints.md): about 600–700 tokens,
// never more than 800.
const (
	TargetTokens = 700
	MaxTokens    = 800
)

// RenderOptions tunes Render.
type RenderOptions struct {
	// Target is the size the text is trimmed to (default TargetTokens) and
	// Max the hard cap (default MaxTokens), both in Count's tokens.
	Target, Max int
	// Count measures text in tokens; nil uses DefaultCount (o200k).
	Count func(string) int
	// KeepSecrets leaves secrets in the text (recall.redact: false); a
	// checkpoint written before redaction existed is redacted here.
	KeepSecrets bool
}

var (
	o200kOnce  sync.Once
	o200kCount func(string) int
)

// DefaultCount counts tokens with o200k (the tokenizer of current OpenAI
// models and a close proxy for others), falling back to conservativeCount if
// the tokenizer cannot be loaded.
func DefaultCount(s string) int {
	o200kOnce.Do(func() {
		if t, err := tokenizer.Get("o200k"); err == nil {
			o200kCount = t.Count
		} else {
			o200kCount = conservativeCount
		}
	})
	return o200kCount(s)
}

// conservativeCount over-estimates o200k tokens without a tokenizer: every
// three ASCII bytes and every non-ASCII character count as one token (real
// English runs near four bytes a token, code near three, CJK one character
// or more). Using it keeps the 800-token cap safe, at the cost of a shorter
// text.
func conservativeCount(s string) int {
	ascii, other := 0, 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii+2)/3 + other
}

// block is one list section of the text; items are trimmed while the text
// is over budget, the section with the most tokens first.
type block struct {
	title    string
	items    []string
	inline   bool // one line "Title: a, b, c" instead of a bullet list
	keepMin  int
	dropHead bool // drop the oldest item (the first) rather than the last
	dropMid  bool // drop the second item (keeps the first and the newest)
	// weight scales the section's size when choosing what to trim: above 1
	// is trimmed sooner (long file lists, learnings), below 1 later (the
	// thread and decisions carry the most resume value per token).
	weight float64
}

func (b *block) render(sb *strings.Builder) {
	if len(b.items) == 0 {
		return
	}
	if b.inline {
		fmt.Fprintf(sb, "%s: %s\n", b.title, strings.Join(b.items, ", "))
		return
	}
	sb.WriteString(b.title + ":\n")
	for _, it := range b.items {
		sb.WriteString("- " + it + "\n")
	}
}

func (b *block) drop() {
	switch {
	case b.dropMid && len(b.items) > 2:
		b.items = append(b.items[:1], b.items[2:]...)
	case b.dropHead:
		b.items = b.items[1:]
	default:
		b.items = b.items[:len(b.items)-1]
	}
}

// Render turns a checkpoint into the agent-readable resume text.
// Sections keep the schema's order; when the text is over budget, list
// items are dropped from the largest section first (oldest decisions,
// middle exchanges, least recent files), and as a last resort the text is
// cut, so the result never exceeds Max tokens.
func Render(cp *Checkpoint, opt RenderOptions) string {
	opt = opt.withDefaults()
	if !opt.KeepSecrets {
		cp = redactedCopy(cp)
	}
	rt := newResumeText(cp)
	text := rt.assemble()
	for opt.Count(text) > opt.Target {
		victim := trimVictim(rt.blocks())
		if victim == nil {
			break
		}
		victim.drop()
		text = rt.assemble()
	}
	if opt.Count(text) > opt.Max {
		text = cutToBudget(text, opt.Max, opt.Count)
	}
	if !opt.KeepSecrets {
		text = secrets.Redact(text) // what a copy could not reach
	}
	return text
}

func (opt RenderOptions) withDefaults() RenderOptions {
	if opt.Count == nil {
		opt.Count = DefaultCount
	}
	if opt.Max <= 0 {
		opt.Max = MaxTokens
	}
	if opt.Target <= 0 || opt.Target > opt.Max {
		opt.Target = min(TargetTokens, opt.Max)
	}
	return opt
}

// resumeText is the resume text's parts: the fixed head and thread line,
// and the list sections Render trims.
type resumeText struct {
	head, thread string
	base         string // the directory file paths are relative to
	// the sections, in the text's order
	decisions, exchanges, open, modified, read, tools, learn *block
}

func newResumeText(cp *Checkpoint) *resumeText {
	rt := &resumeText{head: renderHead(cp)}
	var created time.Time
	if t, err := time.Parse(time.RFC3339, cp.Meta.CreatedAt); err == nil {
		created = t
	}
	rt.decisions = &block{title: "Decisions made", keepMin: 3, dropHead: true, weight: 0.8}
	for _, d := range cp.Decisions {
		item := oneLine(d.What, 200)
		if w := shortTime(d.When, created); w != "" {
			item += " (" + w + ")"
		}
		rt.decisions.items = append(rt.decisions.items, item)
	}
	rt.exchanges = &block{title: "Key exchanges", keepMin: 3, dropMid: true, weight: 0.6}
	for _, e := range cp.Thread.KeyExchanges {
		rt.exchanges.items = append(rt.exchanges.items, e.Role+": "+oneLine(e.Gist, GistChars))
	}
	rt.open = &block{title: "Open items", keepMin: 3, weight: 0.7}
	for _, o := range cp.OpenItems {
		rt.open.items = append(rt.open.items, oneLine(o, 200))
	}
	rt.base = commonDir(append(append([]string{}, cp.Resources.FilesModified...), cp.Resources.FilesRead...))
	rt.modified = &block{title: "Files modified", inline: true, keepMin: 5, items: shortList(cp.Resources.FilesModified, rt.base), weight: 1.2}
	rt.read = &block{title: "Files read", inline: true, keepMin: 3, items: shortList(cp.Resources.FilesRead, rt.base), weight: 1.5}
	rt.tools = &block{title: "Tools used", inline: true, keepMin: 5, items: shortList(cp.Resources.ToolsUsed, ""), weight: 1}
	rt.learn = &block{title: "Learnings (consider storing to long-term memory)", keepMin: 2, weight: 1.3}
	for _, l := range cp.Learnings {
		rt.learn.items = append(rt.learn.items, oneLine(l, 200))
	}
	if s := oneLine(cp.Thread.Summary, 2*SummaryEndChars+10); s != "" {
		rt.thread = "Thread: " + s + "\n"
	}
	return rt
}

func (rt *resumeText) blocks() []*block {
	return []*block{rt.decisions, rt.exchanges, rt.open, rt.modified, rt.read, rt.tools, rt.learn}
}

// assemble renders the text from the items left.
func (rt *resumeText) assemble() string {
	var sb strings.Builder
	sb.WriteString(rt.head)
	sb.WriteString("\n")
	if len(rt.decisions.items) > 0 {
		rt.decisions.render(&sb)
		sb.WriteString("\n")
	}
	if rt.thread != "" || len(rt.exchanges.items) > 0 {
		sb.WriteString(rt.thread)
		rt.exchanges.render(&sb)
		sb.WriteString("\n")
	}
	if len(rt.open.items) > 0 {
		rt.open.render(&sb)
		sb.WriteString("\n")
	}
	if len(rt.modified.items)+len(rt.read.items)+len(rt.tools.items) > 0 {
		if rt.base != "" && len(rt.modified.items)+len(rt.read.items) > 0 {
			fmt.Fprintf(&sb, "File paths are relative to %s\n", oneLine(rt.base, 200))
		}
		rt.modified.render(&sb)
		rt.read.render(&sb)
		rt.tools.render(&sb)
		sb.WriteString("\n")
	}
	rt.learn.render(&sb)
	return strings.TrimRight(sb.String(), "\n") + "\n"
}

// trimVictim is the block to drop an item from: the largest by weighted
// size, first among those above their keepMin, then among all; nil when
// every block is empty.
func trimVictim(blocks []*block) *block {
	var victim *block
	best := -1.0
	for _, floor := range []int{-1, 0} { // first respect keepMin, then not
		for _, b := range blocks {
			keep := b.keepMin
			if floor == 0 {
				keep = 0
			}
			if len(b.items) <= keep {
				continue
			}
			if w := float64(len(strings.Join(b.items, "  "))) * b.weight; w > best {
				best, victim = w, b
			}
		}
		if victim != nil {
			break
		}
	}
	return victim
}

func renderHead(cp *Checkpoint) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "[Post-compaction checkpoint restore: %s]\n", oneLine(cp.Meta.CheckpointID, 20))
	tu := cp.Meta.TokenUsage
	line := fmt.Sprintf("Session %q, saved %s (trigger %s", oneLine(cp.Meta.SessionKey, 80), cp.Meta.CreatedAt, cp.Meta.Trigger)
	if tu.ContextWindow > 0 {
		line += fmt.Sprintf(", context %s of %s", human.Percent(tu.Utilization), formatK(tu.ContextWindow))
	}
	sb.WriteString(line + ").\n")
	if cp.Meta.CompactionCount > 3 {
		fmt.Fprintf(&sb, "Warning: this session has been compacted %d times; repeated compaction loses detail, consider starting a fresh session from this checkpoint.\n", cp.Meta.CompactionCount)
	}
	sb.WriteString("\n")
	w := cp.Working
	fmt.Fprintf(&sb, "Working on: %s\n", orNone(oneLine(w.Topic, TopicChars+10)))
	status := w.Status
	if w.Interrupted {
		status += " (interrupted)"
	}
	fmt.Fprintf(&sb, "Status: %s\n", status)
	if tc := w.LastToolCall; tc != nil {
		fmt.Fprintf(&sb, "Interrupted tool call: %q %s\n", oneLine(tc.Name, 60), oneLine(tc.ParamsSummary, GistChars))
	}
	fmt.Fprintf(&sb, "Next action: %s\n", orNone(oneLine(w.NextAction, 260)))
	return sb.String()
}

// cutToBudget shortens text by whole runes until Count fits max.
func cutToBudget(text string, max int, count func(string) int) string {
	const mark = "\n[checkpoint text cut to fit the token budget]\n"
	runes := []rune(text)
	lo, hi := 0, len(runes)
	for lo < hi { // largest prefix that fits, by bisection
		mid := (lo + hi + 1) / 2
		if count(string(runes[:mid])+mark) <= max {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.TrimRight(string(runes[:lo]), " \n") + mark
}

// oneLine collapses whitespace and cuts s to n characters (an ellipsis
// marks the cut).
func oneLine(s string, n int) string {
	// Of a long text a prefix is enough when it is cut too: collapsed, it
	// is the collapsed text's start but for its last character (which a
	// cut may have split), and a cut keeps only the first n-1. Collapsing
	// whole answers and errors for their first words was a tenth of a
	// checkpoint's CPU.
	if k := 8*n + 64; k < len(s) {
		if p := collapse(s[:k]); utf8.RuneCountInString(p) > n {
			return truncate(p, n)
		}
	}
	return truncate(collapse(s), n)
}

// collapse is s cleaned with its whitespace collapsed to single spaces,
// built in one buffer (the words' slice strings.Fields makes was a
// twentieth of a 1 GB checkpoint's allocation).
func collapse(s string) string {
	s = Clean(s)
	var b strings.Builder
	b.Grow(len(s))
	for w := range strings.FieldsSeq(s) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// truncate cuts s (valid UTF-8: collapsed) to at most n characters,
// ending in "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	end := 0
	for range n - 1 {
		_, w := utf8.DecodeRuneInString(s[end:])
		end += w
	}
	return strings.TrimRight(s[:end], " ") + "…"
}

func shortList(items []string, base string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, oneLine(strings.TrimPrefix(it, base), 80))
	}
	return out
}

// commonDir is the longest directory (ending in "/") that at least half
// of the absolute paths (two or more) lie under, "" when none: file lists
// are long absolute paths that differ only at the end, so the resume text
// names the directory once.
func commonDir(paths []string) string {
	counts := map[string]int{}
	n := 0
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") {
			continue
		}
		n++
		for i := 1; i < len(p); i++ {
			if p[i] == '/' {
				counts[p[:i+1]]++
			}
		}
	}
	need := max(2, (n+1)/2)
	best := ""
	for dir, c := range counts {
		if c >= need && (len(dir) > len(best) || len(dir) == len(best) && dir < best) {
			best = dir
		}
	}
	if len(best) < 8 {
		return ""
	}
	return best
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// shortTime renders a decision time as "15:04", or with the date when it
// is not the checkpoint's day.
func shortTime(when string, created time.Time) string {
	t, err := time.Parse(time.RFC3339, when)
	if err != nil {
		return ""
	}
	t = t.UTC()
	if !created.IsZero() && t.Format("2006-01-02") == created.UTC().Format("2006-01-02") {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}

// formatK renders a token count the way the gauge does: 162431 → "162k".
func formatK(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", (n+500)/1000)
	default:
		s := fmt.Sprintf("%.1f", float64(n)/1e6)
		return strings.TrimSuffix(s, ".0") + "M"
	}
}

// Gauge is the one-line context gauge of docs/design/checkpoints.md, e.g.
// "[Context: 81.2% | 162k/200k tokens | Checkpoint saved]". It is empty below
// 70% utilization (no injection, save tokens).
func Gauge(tokens, window int, saved bool) string {
	if window <= 0 || tokens < 0 {
		return ""
	}
	u := float64(tokens) / float64(window)
	if u < 0.70 {
		return ""
	}
	s := fmt.Sprintf("[Context: %s | %s/%s tokens", human.Percent(u), formatK(tokens), formatK(window))
	if saved {
		s += " | Checkpoint saved"
	}
	return s + "]"
}

// redactedCopy is cp with its secrets redacted, before any line is cut to
// fit the budget (cp itself is left as it was).
func redactedCopy(cp *Checkpoint) *Checkpoint {
	data, err := Marshal(cp)
	if err != nil {
		return cp
	}
	c, err := Unmarshal(data)
	if err != nil {
		return cp
	}
	secrets.RedactFields(c)
	return c
}
