package estimate

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Options are what every command passes to Measure: the method (--tokenizer)
// and the window settings (--model, --context-window, config). The same
// file with the same options gives the same size in every command. Every
// package that measures a context (compaction, rolling, memflush,
// checkpoint, lint) takes them as is and reads the *Result: there is no
// other measurement type, and Window.ContextWindow is the one window
// override.
type Options struct {
	Method string // "" = auto
	Window models.Settings
	// Prior is the measure of the session before entries were appended to
	// it in memory (a planned compaction measured before it is written;
	// nil: none). Its calibration is reused when it holds (see
	// calibrationFor) instead of fitted again on the same usage records.
	Prior *Result
}

// Rejection describes the usage record pi would anchor on when ctxtool does
// not trust it (estimate --json usageRejected).
type Rejection struct {
	Line   int        `json:"line"`
	Class  UsageClass `json:"class"`
	Reason string     `json:"reason"`
	Tokens int        `json:"tokens"`
}

// Result is the size of a whole active context.
type Result struct {
	// Method actually used ("auto" resolved to calibrated or o200k).
	Method string
	// Tokens is the next request: Σ PerMessage + Overhead.
	Tokens int
	// PerMessage holds each context message's share of Tokens.
	PerMessage []int
	ByRole     map[string]int
	// UsageTokens is the fresh usage record the estimate is anchored on (0
	// if none); TrailingTokens is what follows it.
	UsageTokens    int
	TrailingTokens int
	AnchorIndex    int // context index of the anchor, -1 if none
	AnchorLine     int // its line, 0 if none
	// Overhead is what no message accounts for (system prompt, tools),
	// and Scale what the counter's sizes are multiplied by, so that the last
	// sound usage record is reproduced (see applyEvidence); 0 and 1 without
	// usage evidence.
	Overhead int
	Scale    float64
	// Stale is true when the session's last usage record predates the
	// compaction in force: pi then reports the size as unknown.
	Stale bool
	// Rejected is pi's anchor when ctxtool does not trust it.
	Rejected *Rejection
	// Window is the resolved model and context window; Utilization is
	// Tokens / Window.Tokens.
	Window      models.SessionWindow
	Utilization float64
	Calibration *Calibration
	Audit       *UsageAudit
	Notes       []string

	counter *Counter
	share   map[*transcript.Entry]int // PerMessage by entry
	// evidence is the last sound record's entry and evidenceContent the
	// count of the messages it was sent with (see applyEvidence).
	evidence        *transcript.Entry
	evidenceContent int
	asked           string              // the method asked ("auto" unresolved)
	path            []*transcript.Entry // the measured context's path
}

// usesEvidence reports whether a method relies on usage records. The
// heuristic is pi's chars/4 exactly, and o200k/cl100k count the content;
// the others anchor on trustworthy usage.
func usesEvidence(method string) bool {
	switch method {
	case Heuristic, O200k, Cl100k:
		return false
	}
	return true
}

// Measure is the one context-size function every command calls (estimate,
// compact's trigger and kept-tail sizing, roll's trigger and target,
// checkpoint's gauge and 80% gate). It resolves the session's model and
// window, audits the usage records, counts each context message with the
// method and, for methods that use usage evidence (auto, calibrated,
// usage), reads the last sound record (applyEvidence):
//   - a fresh anchor: Tokens = the anchor's count + the messages after it
//     (pi's estimateContextTokens, on a record that can be trusted);
//   - only a stale record: the messages, counted in the unit that record
//     implies, + the system prompt and tools it measured;
//   - none: the messages alone, and a note saying why.
//
// Tokens always equals Σ PerMessage + Overhead, so eviction and compaction
// arithmetic done with PerMessage closes: removing messages removes exactly
// their share, and measuring the result later gives the same number.
func Measure(s *transcript.Session, ctx *transcript.Context, o Options) (*Result, error) {
	method := o.Method
	if method == "" {
		method = Auto
	}
	if !ValidMethod(method) {
		return nil, fmt.Errorf("unknown tokenizer %q (use one of %v)", method, methods)
	}
	models.FromSessionsJSON(s)
	win := models.ForSession(ctx.Path, s.Header, o.Window)
	prior := o.Prior.heldFor(ctx, win.Tokens)
	calib := prior.calibrationFor(method)
	var audit *UsageAudit
	if prior == nil && fitsOnBranch(s, ctx, method) {
		// The calibration's walk of the path runs beside the audit's.
		c := &Counter{s: s, images: map[*transcript.Entry]int{}}
		audit, calib = auditAndCalibrate(ctx, win.Tokens, c.features)
	} else {
		audit = prior.auditFor(ctx, win.Tokens)
	}
	r := &Result{Method: method, ByRole: map[string]int{}, AnchorIndex: -1, Scale: 1, Stale: ctx.UsageStale(),
		Window: win, Audit: audit, asked: method, path: ctx.Path}
	count, err := r.chooseCounter(s, ctx, method, calib)
	if err != nil {
		return nil, err
	}
	raw := make([]int, len(ctx.Messages))
	for i, m := range ctx.Messages {
		raw[i] = count(m.Entry)
	}
	if usesEvidence(method) {
		r.applyEvidence(ctx, audit, count, prior)
	}
	r.PerMessage = r.scaled(raw)
	r.share = make(map[*transcript.Entry]int, len(raw))
	for i, m := range ctx.Messages {
		r.share[m.Entry] = r.PerMessage[i]
		r.ByRole[m.Role] += r.PerMessage[i]
		r.Tokens += r.PerMessage[i]
	}
	if r.Overhead == 0 && usesEvidence(method) && audit.LastSound < 0 {
		// a file compact --truncate rewrote: its records measured the
		// context it replaced; the compaction says what overhead they saw
		r.Overhead = rewrittenOverhead(s, ctx)
	}
	r.Tokens += r.Overhead
	if r.AnchorIndex >= 0 {
		r.TrailingTokens = r.Tokens - r.UsageTokens
	}
	if win.Tokens > 0 {
		r.Utilization = float64(r.Tokens) / float64(win.Tokens)
	}
	r.noteDistrust(method)
	return r, nil
}

// heldFor is the prior measure when it holds for the context ctx measured
// in window, nil otherwise. It holds when ctx's path is the prior's plus
// entries that are not assistant messages, measured in the same window:
// the appended entries add no usage record and the records before them
// keep their verdicts (a compaction appended only turns fresh ones stale,
// both sound), so the audit's records and the spans and anchors a fit
// reads are the same.
func (p *Result) heldFor(ctx *transcript.Context, window int) *Result {
	if p == nil || p.Window.Tokens != window || len(ctx.Path) < len(p.path) {
		return nil
	}
	for i, e := range p.path {
		if ctx.Path[i] != e {
			return nil
		}
	}
	for _, e := range ctx.Path[len(p.path):] {
		if e.Type() == "message" && e.Role() == "assistant" {
			return nil
		}
	}
	return p
}

// fitsOnBranch reports whether measuring ctx with method fits a
// calibration on ctx's path: a method that uses one (auto, calibrated and
// usage, which calibrate with the same features), with ctx rebuilt from
// the session's branch, which is the path the counter calibrates on.
func fitsOnBranch(s *transcript.Session, ctx *transcript.Context, method string) bool {
	switch method {
	case Auto, Calibrated, Usage:
		return ctx.IsBranchOf(s)
	}
	return false
}

// calibrationFor is the calibration of a prior measure that holds (see
// heldFor) with the same method, nil otherwise. Fitting again was 20 MB of
// a 1 GB compact --dry-run.
func (p *Result) calibrationFor(method string) *Calibration {
	if p == nil || p.asked != method {
		return nil
	}
	return p.Calibration
}

// auditFor is the audit of ctx: the prior's carried over when it holds
// (see heldFor), or made here. Walking the path again was a third of a
// 1 GB compact --dry-run's second measure.
func (p *Result) auditFor(ctx *transcript.Context, window int) *UsageAudit {
	if p == nil || p.Audit == nil {
		return AuditContext(ctx, window)
	}
	return p.Audit.extendedTo(ctx)
}

// chooseCounter returns the per-message count of the method, setting the
// result's calibration (fitted, or calib when it holds) and, for a counting
// method, its resolved method and counter, with the context's messages
// prefetched.
func (r *Result) chooseCounter(s *transcript.Session, ctx *transcript.Context, method string, calib *Calibration) (func(*transcript.Entry) int, error) {
	switch method {
	case Heuristic:
		return (*transcript.Entry).Tokens, nil
	case Usage:
		// pi's chars/4 per message; the calibration only measures the
		// overhead.
		c, err := newCounter(s, branchOf(s, ctx), Calibrated, r.Audit, calib)
		if err != nil {
			return nil, err
		}
		r.Calibration = c.Calibration()
		return (*transcript.Entry).Tokens, nil
	}
	c, err := newCounter(s, branchOf(s, ctx), method, r.Audit, calib)
	if err != nil {
		return nil, err
	}
	r.Method, r.Calibration, r.counter = c.Method(), c.Calibration(), c
	if c.Note != "" {
		r.Notes = append(r.Notes, c.Note)
	}
	entries := make([]*transcript.Entry, len(ctx.Messages))
	for i, m := range ctx.Messages {
		entries[i] = m.Entry
	}
	c.Prefetch(entries)
	return c.Tokens, nil
}

// branchOf is the session's root→leaf path when ctx was rebuilt from it (a
// second walk of a 1 GB session's parent links costs a map lookup per
// entry), nil otherwise.
func branchOf(s *transcript.Session, ctx *transcript.Context) []*transcript.Entry {
	if ctx.IsBranchOf(s) {
		return ctx.Path
	}
	return nil
}

// scaled applies the evidence's scale to the raw per-message counts: the
// messages the last sound record saw (all of them when it is stale; up to
// the anchor when it is fresh, the trailing ones staying in the counter's
// unit as in pi's rule), rounding the running sum so the scaled part
// totals exactly the record's count minus the overhead.
func (r *Result) scaled(raw []int) []int {
	if r.Scale == 1 {
		return raw
	}
	end := len(raw)
	if r.AnchorIndex >= 0 {
		end = r.AnchorIndex + 1
	}
	out := make([]int, len(raw))
	copy(out, raw)
	cum, done := 0, 0
	for i := 0; i < end; i++ {
		cum += raw[i]
		upTo := int(math.Round(float64(cum) * r.Scale))
		out[i], done = upTo-done, upTo
	}
	return out
}

// noteDistrust records the usage record pi would anchor on and ctxtool did
// not trust, and says in a note what was counted instead and when the
// anchor itself claims more than the window.
func (r *Result) noteDistrust(method string) {
	audit, win := r.Audit, r.Window
	if rej := audit.Rejected(); rej != nil {
		r.Rejected = &Rejection{Line: rej.Line(), Class: rej.Class(), Reason: audit.Reason(rej), Tokens: rej.Tokens()}
		if usesEvidence(method) {
			instead := "the content estimate"
			switch {
			case r.AnchorIndex >= 0:
				instead = fmt.Sprintf("the usage at line %d plus the messages after it", r.AnchorLine)
			case audit.LastSound >= 0:
				instead = fmt.Sprintf("the content estimate corrected by the usage at line %d", audit.Records[audit.LastSound].Line())
			}
			r.Notes = append(r.Notes, fmt.Sprintf("usage at line %d not used (%s: %s); counting %s instead", r.Rejected.Line, r.Rejected.Class, r.Rejected.Reason, instead))
		}
	}
	if a := audit.Anchor; a >= 0 && win.Tokens > 0 && audit.Records[a].Prompt() > win.Tokens && usesEvidence(method) {
		rec := audit.Records[a]
		r.Notes = append(r.Notes, fmt.Sprintf("the provider counted a %d-token prompt at line %d, more than the %s window: the session overflowed, or the window is wrong (set --context-window or models.<name>.contextWindow)",
			rec.Prompt(), rec.Line(), win.Describe()))
	}
}

// Bounds of the content scale a usage record may imply: chars/4 is 0.74–1.2
// of real tokens on code and prose and 3–4× low on CJK text; outside these
// bounds the overhead estimate does not fit the record.
const (
	minScale = 0.3
	maxScale = 5.0
)

// applyEvidence reads the last sound usage record as
//
//	usage = Overhead + Scale × (the counter's size of the messages it saw)
//
// with Overhead the system prompt and tools the calibration measured (the
// median of what the session's sound records carry beyond their messages),
// so the record is reproduced exactly and every message — kept, evicted,
// or after it — is counted in the same unit. A scale alone would make a
// large prompt grow with the content; an overhead alone would carry the
// counter's error on the whole old context into a compacted one.
func (r *Result) applyEvidence(ctx *transcript.Context, audit *UsageAudit, count func(*transcript.Entry) int, prior *Result) {
	if audit.LastSound < 0 {
		return
	}
	ref := audit.Records[audit.LastSound]
	r.evidence = ref.Entry
	if prior.evidenceOf(r.asked) == ref.Entry {
		r.evidenceContent = prior.evidenceContent
	} else {
		for _, m := range recordMessages(ctx, ref) {
			r.evidenceContent += count(m.Entry)
		}
	}
	cal, content := r.Calibration, r.evidenceContent
	if content <= 0 {
		return
	}
	u := float64(ref.Tokens())
	over := 0.0
	if cal != nil {
		over = math.Min(math.Max(float64(cal.Overhead), 0), u)
	}
	over = math.Round(over)
	scale := (u - over) / float64(content)
	if scale < minScale || scale > maxScale {
		// The overhead estimate does not fit this record: take the
		// smallest correction that reproduces it.
		over, scale = math.Max(u-float64(content), 0), math.Min(u/float64(content), 1)
	}
	r.Overhead, r.Scale = int(over), scale
	if audit.Anchor >= 0 {
		anchor := audit.Records[audit.Anchor]
		for i, m := range ctx.Messages {
			if m.Entry == anchor.Entry {
				r.AnchorIndex, r.AnchorLine, r.UsageTokens = i, anchor.Line(), anchor.Tokens()
				break
			}
		}
	}
}

// evidenceOf is the entry of the last sound record a prior measure that
// holds (see heldFor) read with the method asked, nil when none: the
// record's context, a prefix of the same path, is the same messages, and
// the method counts them alike (the calibration is the prior's), so its
// count need not be taken again (two walks of the path when a compaction
// appended to plan it made that record stale).
func (p *Result) evidenceOf(method string) *transcript.Entry {
	if p == nil || p.asked != method {
		return nil
	}
	return p.evidence
}

// recordMessages is the context the record ref was sent with: the messages
// pi builds from the path up to it (transcript.BuildContext). When ref
// follows the compaction in force (or there is none), that context is the
// same compaction, the same kept entries and the messages after them up to
// ref's own: a prefix of ctx's messages, found without two walks of the
// whole path (36 ms at 1 GB).
func recordMessages(ctx *transcript.Context, ref UsageRecord) []transcript.ContextMessage {
	ci := ctx.CompactionIndex
	if ctx.Compaction == nil || (ctx.Path[ci] == ctx.Compaction && ref.PathIndex > ci) {
		for j := len(ctx.Messages) - 1; j >= 0; j-- {
			if ctx.Messages[j].Entry == ref.Entry {
				return ctx.Messages[:j+1]
			}
		}
	}
	return transcript.BuildContext(ctx.Path[:ref.PathIndex+1]).Messages
}

// Count is the share of one context message in Tokens (the scaled
// counter): what compaction sizes its kept tail with, so that the tail and
// the whole are in the same unit.
func (r *Result) Count(e *transcript.Entry) int {
	if n, ok := r.share[e]; ok {
		return n
	}
	n := e.Tokens()
	if r.counter != nil {
		n = r.counter.Tokens(e)
	}
	if r.Scale != 1 {
		n = int(math.Round(float64(n) * r.Scale))
	}
	return n
}

// rewrittenOverhead is the system prompt and tools a compaction at the
// root of a rewritten file records (details.contextOverheadTokens, written
// by compact --truncate), 0 when there is none.
func rewrittenOverhead(s *transcript.Session, ctx *transcript.Context) int {
	if ctx.CompactionIndex != 0 || len(ctx.Path) == 0 {
		return 0
	}
	raw, err := s.Raw(ctx.Path[0])
	if err != nil {
		return 0
	}
	var v struct {
		Details struct {
			Overhead int `json:"contextOverheadTokens"`
		} `json:"details"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Details.Overhead < 0 {
		return 0
	}
	return v.Details.Overhead
}
