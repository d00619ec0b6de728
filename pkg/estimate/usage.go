package estimate

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Usage records are evidence, not truth. Real sessions carry records that
// cannot measure the context they sit in: Ollama reports input 4096 on
// every reply when num_ctx truncates the prompt, some providers repeat the
// same prompt size for hundreds of replies while the transcript grows,
// OpenClaw's transcript-only replies (openclaw/delivery-mirror,
// openclaw/gateway-injected) carry all-zero usage, and a record from before
// the compaction in force measures a context that no longer exists.
// auditUsage sorts every assistant record of a branch into one class; only
// "fresh" records anchor an estimate, and fresh or stale ones ("sound")
// calibrate it.

// UsageClass is the verdict on one assistant message's usage record.
type UsageClass string

// The classes, checked in this order (the first that applies wins).
const (
	// UsageErrored: stopReason error or aborted — the reply was not a
	// completed request and pi ignores its usage.
	UsageErrored UsageClass = "errored"
	// UsagePseudo: an OpenClaw transcript-only reply (provider openclaw,
	// model delivery-mirror or gateway-injected): no model ran.
	UsagePseudo UsageClass = "pseudo"
	// UsageZero: no usage, a zero count, or no prompt tokens reported.
	UsageZero UsageClass = "zero"
	// UsagePinned: the prompt count equals a power of two (≥ 1024) or the
	// context window while the content sent was at least that large, or
	// the same power of two recurs: the provider truncated the prompt
	// (Ollama's num_ctx) and reports the cap.
	UsagePinned UsageClass = "pinned"
	// UsageFlat: the same prompt count as the previous reply although
	// messages were added in between — no tokenizer counts two different
	// prompts alike, so both records are reporting something else.
	UsageFlat UsageClass = "flat"
	// UsageImplausible: the count is below half of pi's chars/4 estimate of
	// the messages sent (chars/4 overstates real tokens by at most ~20%, on
	// clean English), so the provider did not see what the transcript holds.
	UsageImplausible UsageClass = "implausible"
	// UsageStale: sound, but the record precedes the compaction in force,
	// so it measures a context that no longer exists.
	UsageStale UsageClass = "stale"
	// UsageFresh: sound and measuring the context in force: an anchor.
	UsageFresh UsageClass = "fresh"
	// UsageReplaced: the record was written before the compaction at the
	// root of a rewritten file (compact --truncate): it measured a context
	// the file no longer holds, so it neither anchors nor calibrates.
	UsageReplaced UsageClass = "replaced"
)

// ImplausibleRatio is the lower bound of count / chars-4-content below
// which a record is implausible; ImplausibleMinContent the content size
// (pi tokens) below which the check is not made (small contexts are all
// framing).
const (
	ImplausibleRatio      = 0.5
	ImplausibleMinContent = 1024
)

// UsageRecord is one assistant message of the branch and the verdict on
// its usage. It keeps only what its entry does not hold (a 1 GB session
// has ~300k of them, live with the audit): the line, counts and the reason
// in words are read off the entry and the audit on demand.
type UsageRecord struct {
	Entry     *transcript.Entry
	PathIndex int // index in the root→leaf path
	// Content is pi's chars/4 estimate of the context the reply completed:
	// the messages sent plus the reply itself.
	Content int
	// peer is, for a flat record, the index in Records of the other reply
	// reporting the same prompt.
	peer  int32
	class classCode
}

// classCode is a UsageClass as one byte; 0 while unclassified.
type classCode uint8

// classNames are the UsageClass of each classCode.
var classNames = [...]UsageClass{"", UsageErrored, UsagePseudo, UsageZero, UsagePinned, UsageFlat, UsageImplausible, UsageStale, UsageFresh, UsageReplaced}

const (
	codeErrored classCode = iota + 1
	codePseudo
	codeZero
	codePinned
	codeFlat
	codeImplausible
	codeStale
	codeFresh
	codeReplaced
)

// Class is the verdict on the record.
func (r *UsageRecord) Class() UsageClass { return classNames[r.class] }

// Line is the 1-based line of the assistant message.
func (r *UsageRecord) Line() int { return r.Entry.Line }

// Tokens is pi's calculateContextTokens of the record (0 without usage).
func (r *UsageRecord) Tokens() int { return r.Entry.Usage.ContextTokens() }

// Prompt is the prompt side of the record: input + cacheRead + cacheWrite.
func (r *UsageRecord) Prompt() int {
	u := r.Entry.Usage
	if u == nil {
		return 0
	}
	return u.Input + u.CacheRead + u.CacheWrite
}

// sent is the chars/4 size of the messages the reply answered.
func (r *UsageRecord) sent() int { return r.Content - r.Entry.Tokens() }

// Trusted reports whether the record may anchor an estimate of the context
// in force.
func (r *UsageRecord) Trusted() bool { return r.class == codeFresh }

// Sound reports whether the record measured its own context correctly (it
// may calibrate, even when stale).
func (r *UsageRecord) Sound() bool { return r.class == codeFresh || r.class == codeStale }

// UsageAudit is the classification of every usage record of a branch.
type UsageAudit struct {
	// Records lists every assistant message on the path, in path order.
	Records []UsageRecord
	// Anchor is the index in Records of the last fresh record (the anchor
	// of usage-based estimates), -1 when there is none.
	Anchor int
	// PiAnchor is the index of the record pi's estimateContextTokens
	// anchors on (the last completed assistant message of the context
	// with a usage object, whatever its count), -1 when none.
	PiAnchor int
	// LastSound is the index of the last sound record on the path (fresh
	// or stale): it measures what no message accounts for (system prompt,
	// tools), -1 when none.
	LastSound int

	// What the reasons are worded from: the prompt counts that are powers
	// of two and how many records report each, the context window, and
	// the line of the compaction in force (0 when none).
	powers      map[int]int
	window      int
	inForceLine int
	// rewritten is the time of a compaction in force that is the root of
	// the path (compact --truncate's rewrite: header, compaction, kept
	// tail): the kept tail's records, written before it, measured the
	// context it replaced. Zero otherwise.
	rewritten time.Time

	// The audited path and its compactions' kept starts
	// (transcript.KeptStarts), which calibrating the same path reads
	// again: finding them is two walks of the path, 65 ms at 1 GB.
	path []*transcript.Entry
	kept map[int]int
}

// auditUsage classifies the usage record of every assistant message of a
// root→leaf path. window is the session's context window (0 = unknown):
// a prompt count equal to it is a cap. It runs in one pass plus a lookup
// per compaction, linear in the path.
func auditUsage(path []*transcript.Entry, window int) *UsageAudit {
	return AuditContext(transcript.BuildContext(path), window)
}

// AuditContext is auditUsage on a context already rebuilt from the path
// (for the compaction in force and its kept start): a second rebuild of a
// 1 GB session's context was 4% of a calibrated estimate's CPU.
func AuditContext(ctx *transcript.Context, window int) *UsageAudit {
	return auditContext(ctx, window, transcript.KeptStarts(ctx.Path))
}

// auditContext is AuditContext with the kept starts of ctx's path
// (transcript.KeptStarts) already found.
func auditContext(ctx *transcript.Context, window int, kept map[int]int) *UsageAudit {
	a := &UsageAudit{Anchor: -1, PiAnchor: -1, LastSound: -1, window: window}
	path := ctx.Path
	if ctx.CompactionIndex >= 0 {
		a.inForceLine = path[ctx.CompactionIndex].Line
	}
	a.rewritten = rewrittenAt(ctx)

	// active is pi's chars/4 of the context the provider would be sent at
	// each point of the walk; a compaction restarts it as summary + kept
	// entries, read off prefix sums (linear, where a scan of the path
	// prefix per compaction is quadratic).
	w := newContextWalk(path, kept)
	a.path, a.kept = path, w.kept
	a.collect(path, w)
	a.classify(w, ctx.CompactionIndex)
	a.anchor(ctx.CompactionIndex, ctx.KeptStart)
	return a
}

// collect makes one record per assistant message of the path, with the
// context size the reply completed, and counts the prompt sizes that are
// powers of two (a cap reported by several replies is pinned).
func (a *UsageAudit) collect(path []*transcript.Entry, w *contextWalk) {
	a.powers = map[int]int{}
	// Sized up front: grown by append, the generations of a 1 GB path's
	// records (~300k) were live at once, 100 MB of the peak heap.
	n := 0
	for _, e := range path {
		if isRecord(e) {
			n++
		}
	}
	a.Records = make([]UsageRecord, 0, n)
	for i, e := range path {
		w.step(i)
		if !isRecord(e) {
			continue
		}
		r := UsageRecord{Entry: e, PathIndex: i, Content: int(w.active)}
		if p := r.Prompt(); isPow2(p) {
			a.powers[p]++
		}
		a.Records = append(a.Records, r)
	}
}

// classify gives every record its class: what the record says of itself
// (errored, pseudo, zero, pinned), then against the previous record of its
// era (flat), then against the content it completed (implausible), and
// otherwise fresh or, before the compaction in force, stale.
func (a *UsageAudit) classify(w *contextWalk, inForce int) {
	prev := -1 // previous record of the era with a prompt count
	era := -1
	passed := 0 // compactions before the record: its era
	for k := range a.Records {
		r := &a.Records[k]
		for passed < len(w.compactions) && w.compactions[passed] < r.PathIndex {
			passed++
		}
		if passed != era {
			era, prev = passed, -1
		}
		r.class = a.ownClass(r)
		if r.class == 0 && prev >= 0 {
			a.markFlat(k, prev)
		}
		if r.class == 0 && implausible(r) {
			r.class = codeImplausible
		}
		if r.class == 0 {
			r.class = a.soundClass(r, inForce)
		}
		if r.Prompt() > 0 && r.class != codeErrored && r.class != codePseudo {
			prev = k
		}
	}
}

// soundClass is the class of a record that looks sound: stale before the
// compaction in force (path index inForce, -1 when none), replaced when
// that compaction is the root of a rewritten file and the record was
// written before it, fresh otherwise.
func (a *UsageAudit) soundClass(r *UsageRecord, inForce int) classCode {
	if inForce >= 0 && r.PathIndex < inForce {
		return codeStale
	}
	if !a.rewritten.IsZero() {
		if t := r.Entry.Time(); !t.IsZero() && t.Before(a.rewritten) {
			return codeReplaced
		}
	}
	return codeFresh
}

// rewrittenAt is the time of the compaction in force when it is the root
// of the path (compact --truncate writes header, compaction, kept tail),
// else zero.
func rewrittenAt(ctx *transcript.Context) time.Time {
	if ctx.CompactionIndex != 0 || len(ctx.Path) == 0 {
		return time.Time{}
	}
	return ctx.Path[0].Time()
}

// extendedTo is the audit of ctx, whose path is the audited one plus
// entries that add no usage record (a compaction appended to plan it):
// what AuditContext finds walking ctx again. The records, the content each
// completed, the prompt counts and the eras between compactions are the
// same (the new entries follow every record), so every class is too,
// except that a sound record is stale or fresh by the compaction now in
// force.
func (a *UsageAudit) extendedTo(ctx *transcript.Context) *UsageAudit {
	b := &UsageAudit{Records: slices.Clone(a.Records), Anchor: -1, PiAnchor: -1, LastSound: -1, powers: a.powers, window: a.window}
	if ctx.CompactionIndex >= 0 {
		b.inForceLine = ctx.Path[ctx.CompactionIndex].Line
	}
	b.rewritten = rewrittenAt(ctx)
	for k := range b.Records {
		if r := &b.Records[k]; r.Sound() {
			r.class = b.soundClass(r, ctx.CompactionIndex)
		}
	}
	b.anchor(ctx.CompactionIndex, ctx.KeptStart)
	return b
}

// implausible reports whether the record counts less than ImplausibleRatio
// of the content it completed.
func implausible(r *UsageRecord) bool {
	return r.Content >= ImplausibleMinContent && float64(r.Tokens()) < ImplausibleRatio*float64(r.Content)
}

// ownClass is the class a record earns on its own (0 when it looks sound).
func (a *UsageAudit) ownClass(r *UsageRecord) classCode {
	e := r.Entry
	switch {
	case e.StopReason() == "error" || e.StopReason() == "aborted":
		return codeErrored
	case models.TranscriptOnly(e.Provider(), e.Model()):
		return codePseudo
	case e.Usage == nil || r.Tokens() <= 0 || r.Prompt() <= 0:
		return codeZero
	case a.pinnedPow2(r) || (a.window > 0 && r.Prompt() == a.window):
		return codePinned
	}
	return 0
}

// pinnedPow2 reports whether the record's prompt is a power of two (≥ 1024)
// that several replies report, or that the messages sent alone reach.
func (a *UsageAudit) pinnedPow2(r *UsageRecord) bool {
	p := r.Prompt()
	return p >= 1024 && isPow2(p) && (a.powers[p] > 1 || r.sent() >= p)
}

// markFlat classifies record k, and the record p before it when p looked
// sound, as flat when both report the same prompt although the messages
// sent grew in between.
func (a *UsageAudit) markFlat(k, p int) {
	r, q := &a.Records[k], &a.Records[p]
	if r.Prompt() != q.Prompt() || r.sent()-q.sent() <= 0 {
		return
	}
	r.class, r.peer = codeFlat, int32(p)
	if q.Sound() {
		q.class, q.peer = codeFlat, int32(k)
	}
}

// Reason says why the record r of a has its class, in words a user can
// check against the file.
func (a *UsageAudit) Reason(r *UsageRecord) string {
	e := r.Entry
	switch r.class {
	case codeErrored:
		return "the reply stopped with " + e.StopReason() + " (pi ignores its usage)"
	case codePseudo:
		return fmt.Sprintf("%s/%s is an OpenClaw transcript-only message: no model ran", e.Provider(), e.Model())
	case codeZero:
		switch {
		case e.Usage == nil:
			return "no usage recorded"
		case r.Tokens() <= 0:
			return "usage is zero"
		}
		return fmt.Sprintf("no prompt tokens reported (total %d)", r.Tokens())
	case codePinned:
		return a.pinnedReason(r)
	case codeFlat:
		q := &a.Records[r.peer]
		grew := r.sent() - q.sent()
		if q.PathIndex > r.PathIndex {
			grew = -grew
		}
		return fmt.Sprintf("prompt %d tokens, the same as the reply at line %d although ~%d tokens were added in between", r.Prompt(), q.Line(), grew)
	case codeImplausible:
		return fmt.Sprintf("%d tokens is %.0f%% of the ~%d tokens (chars/4) of the messages in its context", r.Tokens(), 100*float64(r.Tokens())/float64(r.Content), r.Content)
	case codeStale:
		return fmt.Sprintf("precedes the compaction in force (line %d): it measures the context before it", a.inForceLine)
	case codeReplaced:
		return fmt.Sprintf("written before the compaction at the root of this rewritten file (line %d): it measures the context compact --truncate replaced", a.inForceLine)
	}
	return ""
}

// pinnedReason is the reason of a pinned record.
func (a *UsageAudit) pinnedReason(r *UsageRecord) string {
	p := r.Prompt()
	if !a.pinnedPow2(r) {
		return fmt.Sprintf("prompt %d tokens equals the context window: the provider reports its cap", p)
	}
	reason := fmt.Sprintf("prompt %d tokens is a power of two", p)
	if a.powers[p] > 1 {
		reason += fmt.Sprintf(" reported by %d replies", a.powers[p])
	} else {
		reason += fmt.Sprintf(" while the messages sent alone are ~%d tokens", r.sent())
	}
	return reason + ": the provider truncated the prompt (Ollama num_ctx) and reports the cap"
}

// anchor finds the last sound record, the last fresh one (ctxtool's
// anchor) and the one pi anchors on (the last in the context it sends with
// a usage object).
func (a *UsageAudit) anchor(inForce, keptStart int) {
	for k := range a.Records {
		r := &a.Records[k]
		if r.Sound() {
			a.LastSound = k
		}
		if r.Trusted() {
			a.Anchor = k
		}
		inContext := inForce < 0 || r.PathIndex > inForce || (keptStart >= 0 && r.PathIndex >= keptStart)
		if inContext && r.Entry.UsageTrusted() {
			a.PiAnchor = k
		}
	}
}

// Rejected is the record pi would anchor on when ctxtool does not trust it
// (nil when pi has no anchor or ctxtool anchors on the same record).
func (a *UsageAudit) Rejected() *UsageRecord {
	if a.PiAnchor < 0 || a.PiAnchor == a.Anchor {
		return nil
	}
	return &a.Records[a.PiAnchor]
}

// soundAt marks the indexes of path whose records are sound. path is
// normally the audited one, where a record's PathIndex finds it; for any
// other path holding the entries they are looked up.
func (a *UsageAudit) soundAt(path []*transcript.Entry) []bool {
	out := make([]bool, len(path))
	var at map[*transcript.Entry]int // path index by entry, when path is another one
	for _, r := range a.Records {
		if !r.Sound() {
			continue
		}
		i := r.PathIndex
		if i >= len(path) || path[i] != r.Entry {
			if at == nil {
				at = make(map[*transcript.Entry]int, len(path))
				for j, e := range path {
					at[e] = j
				}
			}
			var ok bool
			if i, ok = at[r.Entry]; !ok {
				continue
			}
		}
		out[i] = true
	}
	return out
}

// keptStarts is transcript.KeptStarts(path), found again only when path
// is not the audited one.
func (a *UsageAudit) keptStarts(path []*transcript.Entry) map[int]int {
	if len(path) == len(a.path) && (len(path) == 0 || &path[0] == &a.path[0]) {
		return a.kept
	}
	return transcript.KeptStarts(path)
}

func isPow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

// ActiveTokens returns, for each index i of a root→leaf path, pi's chars/4
// of the context the provider would be sent if path[i] were the leaf
// (BuildContext(path[:i+1]).HeuristicTokens() for every i, in one pass).
func ActiveTokens(path []*transcript.Entry) []int {
	w := newContextWalk(path, transcript.KeptStarts(path))
	out := make([]int, len(path))
	for i := range path {
		w.step(i)
		out[i] = int(w.active)
	}
	return out
}

// contextWalk follows pi's chars/4 of the context the provider would be
// sent along a root→leaf path, one step per index in order: after step(i),
// active is the context's size if path[i] were the leaf.
type contextWalk struct {
	path        []*transcript.Entry
	compactions []int // the compactions' path indexes, ascending
	contextSum[tokens]
}

func newContextWalk(path []*transcript.Entry, kept map[int]int) *contextWalk {
	w := &contextWalk{path: path, contextSum: newContextSum[tokens](kept)}
	w.compactions = make([]int, 0, len(w.kept))
	for i := range w.kept {
		w.compactions = append(w.compactions, i)
	}
	slices.Sort(w.compactions)
	return w
}

func (w *contextWalk) step(i int) { w.contextSum.step(i, w.path[i], entryTokens) }

// tokens is a count of pi tokens, summed by contextSum.
type tokens int

func (a tokens) plus(b tokens) tokens  { return a + b }
func (a tokens) minus(b tokens) tokens { return a - b }

func entryTokens(e *transcript.Entry) tokens { return tokens(e.Tokens()) }

// contextSum follows a per-message quantity (pi tokens, calibration
// features) of the context the provider would be sent along a root→leaf
// path, one step per index in order: after a step, active is the quantity
// of the context if that entry were the leaf. A compaction restarts the
// context as its summary plus its kept entries, whose sum is read off the
// running sum over the path's messages: one pass however many compactions
// the path holds (scanning the path prefix for the kept entries at every
// compaction was quadratic: 81% of a forced roll of a 1 GB session). The
// running sum is kept only at the kept starts a compaction reads back, not
// per path entry (two ints per entry were 12 MB per walk at 1 GB).
type contextSum[T summable[T]] struct {
	kept   map[int]int // compaction path index → its first kept entry's (transcript.KeptStarts)
	starts map[int]T   // kept start → run when the walk passed it
	// order is the kept starts ascending and next the first the walk has
	// not passed: a step compares its index with one start instead of
	// looking it up in starts (a map lookup per path entry was a tenth of
	// a calibration's walk).
	order  []int
	next   int
	run    T // Σ over the messages before the step
	active T
}

// summable is a quantity contextSum adds up: a count or a feature vector.
type summable[T any] interface {
	plus(T) T
	minus(T) T
}

func newContextSum[T summable[T]](kept map[int]int) contextSum[T] {
	s := contextSum[T]{kept: kept, starts: make(map[int]T, len(kept))}
	var zero T
	for _, k := range kept {
		if _, dup := s.starts[k]; k >= 0 && !dup {
			s.starts[k] = zero
			s.order = append(s.order, k)
		}
	}
	slices.Sort(s.order)
	return s
}

// step takes the entry e at path index i, whose quantity is val(e) (a
// compaction's: its summary's), and returns that quantity when e produces
// a message.
func (s *contextSum[T]) step(i int, e *transcript.Entry, val func(*transcript.Entry) T) (v T, message bool) {
	if s.next < len(s.order) && s.order[s.next] == i {
		s.starts[i] = s.run
		s.next++
	}
	switch {
	case e.Type() == "compaction":
		s.active = val(e)
		if k := s.kept[i]; k >= 0 {
			s.active = s.active.plus(s.run.minus(s.starts[k]))
		}
	case e.ProducesMessage():
		v = val(e)
		s.active = s.active.plus(v)
		s.run = s.run.plus(v)
		return v, true
	}
	return v, false
}
