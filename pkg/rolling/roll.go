package rolling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Options are the knobs of one roll (config compaction.rolling.* and the
// roll command's flags).
type Options struct {
	TargetUtilization float64 // ≤ 0: 0.8
	MinKeepMessages   int
	EvictionNote      bool
	// Trigger > 0 rolls when utilization ≥ Trigger; 0 rolls when the
	// context crosses pi's compaction threshold (window − ReserveTokens).
	Trigger float64
	// Force rolls whatever the utilization (`--trigger 0`); the target
	// still decides how much goes, so a session already under the target
	// is left alone.
	Force         bool
	ReserveTokens int // ≤ 0: 16384
	DryRun        bool
	// Wait is how long to wait for the session lock.
	Wait time.Duration
	// NoFallback refuses to roll (instead of falling back to a safeguard
	// compaction) when recall cannot cover the session.
	NoFallback bool
}

// Recall is the part of the recall index a roll needs: evicted messages
// must be searchable the moment they leave the context.
type Recall interface {
	// Covered reports whether every complete line of the file is indexed.
	Covered(path string) (bool, error)
	// Index brings the file's index up to date.
	Index(ctx context.Context, path string) error
}

// FallbackFunc compacts a session by summarising instead (the
// safeguard fallback for when recall is unavailable). It returns what was
// done in the report's terms (Compacted, KeptTokens, …); Rolled stays false.
type FallbackFunc func(ctx context.Context, path string, o Options) (*Report, error)

// Report is the outcome for one session file (the JSON object `roll --json`
// prints per file).
type Report struct {
	File          string `json:"file"`
	Rolled        bool   `json:"rolled"`
	Reason        string `json:"reason,omitempty"`
	EvictedCount  int    `json:"evictedCount"`
	EvictedTokens int    `json:"evictedTokens"`
	KeptTokens    int    `json:"keptTokens"`
	// The arithmetic closes: tokensBefore = evictedTokens + replacedTokens
	// (a previous summary or note the eviction replaces) + keptTokens −
	// noteTokens (the new note, counted in keptTokens), all in the unit of
	// Method; keptTokens is the rolled session measured again. When that
	// measure is off the sum by more than 2% of tokensBefore, Closure says
	// which term differs, by how much and why.
	NoteTokens            int      `json:"noteTokens"`
	Closure               *Closure `json:"closure,omitempty"`
	ReplacedTokens        int      `json:"replacedTokens,omitempty"`
	FirstEvictedTimestamp string   `json:"firstEvictedTimestamp,omitempty"`
	LastEvictedTimestamp  string   `json:"lastEvictedTimestamp,omitempty"`
	Fallback              string   `json:"fallback,omitempty"`
	// Compacted is set when the fallback summarised the session instead.
	Compacted bool `json:"compacted,omitempty"`
	DryRun    bool `json:"dryRun,omitempty"`
	// WouldRoll is set on dry runs only: whether a real run would roll
	// (Rolled stays false: nothing was rolled). compact --dry-run says
	// wouldCompact the same way.
	WouldRoll *bool `json:"wouldRoll,omitempty"`
	// Note is the eviction note a dry run would append (dry runs only).
	Note             string  `json:"note,omitempty"`
	TokensBefore     int     `json:"tokensBefore"`
	ContextWindow    int     `json:"contextWindow"`
	WindowSource     string  `json:"windowSource,omitempty"`
	Utilization      float64 `json:"utilization"`
	TriggerTokens    int     `json:"triggerTokens"`
	TargetTokens     int     `json:"targetTokens"`
	Method           string  `json:"method,omitempty"`
	ContextMessages  int     `json:"contextMessages"`
	KeptMessages     int     `json:"keptMessages"`
	FirstKeptEntryID string  `json:"firstKeptEntryId,omitempty"`
	FirstKeptLine    int     `json:"firstKeptLine,omitempty"`
	Locked           bool    `json:"locked,omitempty"`
	Skipped          bool    `json:"skipped,omitempty"`
	Error            string  `json:"error,omitempty"`
	Seconds          float64 `json:"seconds"`
	// Warnings are the estimator's (a usage record it did not trust…).
	Warnings []string `json:"warnings,omitempty"`
	// MalformedLines are the session's lines pi drops (left in place).
	MalformedLines []transcript.Malformed `json:"malformedLines,omitempty"`

	err   error
	would bool
}

// Closure explains a roll whose numbers do not add up within 2%: the
// rolled session measured again (Measured, what keptTokens reports)
// differs from what the measure before the roll predicts for it
// (Predicted = tokensBefore − evictedTokens − replacedTokens + noteTokens,
// which closes exactly).
type Closure struct {
	Term       string `json:"term"` // "keptTokens"
	Predicted  int    `json:"predicted"`
	Measured   int    `json:"measured"`
	Difference int    `json:"difference"` // Measured − Predicted
	Why        string `json:"why"`
}

// closureWithin is how far (a share of tokensBefore) the sum may be off
// before the report explains it.
const closureWithin = 0.02

// Would reports whether the session was rolled, or with a dry run would be.
func (r *Report) Would() bool { return r.Rolled || (r.WouldRoll != nil && *r.WouldRoll) }

// Err is the error behind Report.Error (nil when the roll succeeded or was
// not needed); a *filelock.LockedError for locked sessions.
func (r *Report) Err() error { return r.err }

func (r *Report) fail(err error) *Report {
	r.err = err
	r.Error = err.Error()
	var le *filelock.LockedError
	if errors.As(err, &le) {
		r.Locked = true
		r.Reason = "locked: " + err.Error()
	}
	return r
}

// Roller rolls session files. A nil Recall means "recall unavailable".
type Roller struct {
	Options
	// Size is how contexts are measured and their windows resolved:
	// estimate.Measure with the options every command passes (the window
	// override is Size.Window.ContextWindow).
	Size estimate.Options
	// measure replaces estimate.Measure (tests: a measure whose unit
	// jumps).
	measure func(*transcript.Session, *transcript.Context) (*estimate.Result, error)
	// Recall is the index; nil means recall is unavailable, for the reason
	// in RecallErr.
	Recall    Recall
	RecallErr error
	Fallback  FallbackFunc
	// Now is the clock of appended entries (tests).
	Now func() time.Time
}

// decision is what plan found for one loaded session.
type decision struct {
	rep   Report
	roll  bool
	line  []byte
	ev    Eviction
	first *transcript.Entry
}

// Roll rolls one session file. It never returns an error: failures are in
// the report (Error, and Err() for the exit code).
func (r *Roller) Roll(ctx context.Context, path string) *Report {
	start := time.Now()
	rep := r.roll(ctx, path)
	if r.DryRun {
		would := rep.would && rep.Error == ""
		rep.WouldRoll = &would
	}
	rep.Seconds = math.Round(time.Since(start).Seconds()*1000) / 1000
	return rep
}

func (r *Roller) roll(ctx context.Context, path string) *Report {
	// A cheap look without the lock first: most sessions of a cron batch
	// are under the trigger, and a live session must not be locked for
	// nothing.
	s, err := transcript.Load(path)
	if err != nil {
		return (&Report{File: path}).fail(err)
	}
	if err := s.PiLoadable(); err != nil {
		s.Close()
		return (&Report{File: path}).fail(err)
	}
	d, err := r.plan(s, false)
	s.Close()
	if err != nil {
		return (&Report{File: path}).fail(err)
	}
	if !d.roll {
		return &d.rep
	}
	if r.Recall == nil {
		return r.fallback(ctx, path, &d.rep)
	}
	if !r.DryRun {
		// Index before taking the lock: it reads the whole file and may
		// take a while; inside the lock only the lines appended since are
		// indexed.
		if err := r.Recall.Index(ctx, path); err != nil {
			return r.fallback(ctx, path, &d.rep, fmt.Errorf("indexing for recall failed: %w", err))
		}
	}
	var final *Report
	plan := func(s *transcript.Session) ([][]byte, error) {
		d, err := r.plan(s, true)
		if err != nil {
			return nil, err
		}
		final = &d.rep
		if !d.roll {
			return nil, nil
		}
		if !r.DryRun {
			// Evicted messages must be searchable the moment they leave.
			// An Index call that starts after this load covers at least
			// every line plan saw, even if pi (which takes no lock) keeps
			// appending; so Covered is only a shortcut.
			if ok, err := r.Recall.Covered(path); err != nil || !ok {
				if err := r.Recall.Index(ctx, path); err != nil {
					return nil, fmt.Errorf("%s: not evicting what recall cannot find: indexing failed: %w (run `ctxtool index %s`)", path, err, path)
				}
			}
		}
		if r.DryRun {
			final.would = true
			return nil, nil
		}
		final.Rolled = true
		return [][]byte{d.line}, nil
	}
	for attempt := 0; ; attempt++ {
		err = sessionwrite.Update(ctx, path, sessionwrite.UpdateOptions{Wait: r.Wait, DryRun: r.DryRun}, plan)
		// Update re-plans a few times when pi (no lock) appends between our
		// read and our write; a session written to in bursts can outrun
		// that, so give it a few more rounds after a short pause.
		if err == nil || !fileChanged(err) || attempt == 7 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(20*(attempt+1)) * time.Millisecond)
	}
	if final == nil {
		final = &d.rep
	}
	if err != nil {
		final.Rolled = false
		return final.fail(err)
	}
	return final
}

// fallback handles a roll that cannot rely on recall: refuse with
// NoFallback, otherwise summarise with the safeguard strategy.
func (r *Roller) fallback(ctx context.Context, path string, rep *Report, cause ...error) *Report {
	why := r.RecallErr
	if len(cause) > 0 {
		why = cause[0]
	}
	if why == nil {
		why = errors.New("recall is unavailable")
	}
	rep.Rolled = false
	if r.NoFallback {
		rep.Reason = "refused (--no-fallback): " + why.Error() + "; rolling without recall would lose the evicted messages for the agent"
		return rep.fail(fmt.Errorf("%s: %s", path, rep.Reason))
	}
	rep.Fallback = "safeguard"
	if r.Fallback == nil {
		rep.Reason = "recall unavailable (" + why.Error() + ") and the safeguard fallback is unavailable in this build"
		return rep.fail(fmt.Errorf("%s: %s; enable recall (recall.enabled) or pass --no-fallback", path, rep.Reason))
	}
	fr, err := r.Fallback(ctx, path, r.Options)
	if err != nil {
		rep.Reason = "recall unavailable (" + why.Error() + "); safeguard compaction failed"
		return rep.fail(err)
	}
	fr.File, fr.Fallback, fr.Rolled = path, "safeguard", false
	if fr.Reason == "" {
		fr.Reason = "compacted with the safeguard strategy instead of rolling"
	}
	fr.Reason = "recall unavailable (" + why.Error() + "): " + fr.Reason
	return fr
}

// measureContext measures c, the context of s, with Size.
func (r *Roller) measureContext(s *transcript.Session, c *transcript.Context) (*estimate.Result, error) {
	if r.measure != nil {
		return r.measure(s, c)
	}
	return estimate.Measure(s, c, r.Size)
}

// window is the context window of the roll and where it comes from: the
// one the measure resolved (models.ForSession, through Size.Window).
func window(m *estimate.Result) (int, string) {
	if m.Window.Tokens <= 0 {
		return models.DefaultContextWindow, "default"
	}
	return m.Window.Tokens, m.Window.SourceText()
}

// plan measures the session and decides whether and where to roll; with
// build it also renders the compaction line.
func (r *Roller) plan(s *transcript.Session, build bool) (decision, error) {
	c := s.Context()
	m, err := r.measureContext(s, c)
	if err != nil {
		return decision{}, fmt.Errorf("%s: estimating tokens: %w", s.File, err)
	}
	if len(m.PerMessage) != len(c.Messages) {
		return decision{}, fmt.Errorf("%s: internal error: estimator gave %d counts for %d messages", s.File, len(m.PerMessage), len(c.Messages))
	}
	win, winFrom := window(m)
	target := r.TargetUtilization
	if target <= 0 {
		target = DefaultTargetUtilization
	}
	d := decision{rep: Report{
		File: s.File, DryRun: r.DryRun, MalformedLines: s.Malformed, TokensBefore: m.Tokens, ContextWindow: win, WindowSource: winFrom, Method: m.Method,
		ContextMessages: len(c.Messages), KeptMessages: len(c.Messages), KeptTokens: m.Tokens, Warnings: append(s.Notes(), m.Notes...),
		Utilization:  math.Round(float64(m.Tokens)/float64(win)*10000) / 10000,
		TargetTokens: int(math.Floor(target * float64(win))),
	}}
	if !r.overTrigger(&d.rep, m.Tokens, win) {
		return d, nil
	}

	rc, err := newRollContext(s, c, m, win, target)
	if err != nil {
		return decision{}, err
	}
	in := EvictInput{Messages: rc.msgs, TokensBefore: m.Tokens, ContextWindow: win, TargetUtilization: target,
		MinKeepMessages: r.MinKeepMessages}
	if r.EvictionNote {
		in.NoteTokens = func(i int) int { return heuristicTokens(renderNote(rc.noteFor(i))) }
	}
	ev := Evict(in)
	if ev.EvictedCount == 0 {
		d.ev = ev
		d.rep.Reason = ev.Reason
		return d, nil
	}
	var line []byte
	if build {
		var after *estimate.Result
		if ev, line, after, err = r.buildToTarget(s, rc, in, ev); err != nil {
			return decision{}, err
		}
		d.rep.Closure = closure(rc, ev, after)
	}
	r.recordRoll(&d, s, ev, line)
	return d, nil
}

// overTrigger sets the report's trigger and says whether the context
// (tokens of a window of win) is over it; when it is not, the report's
// Reason says why.
func (r *Roller) overTrigger(rep *Report, tokens, win int) bool {
	reserve := r.ReserveTokens
	if reserve <= 0 {
		reserve = compaction.DefaultReserveTokens
	}
	util := float64(tokens) / float64(win)
	switch {
	case r.Force:
		rep.TriggerTokens = 0
	case r.Trigger > 0:
		rep.TriggerTokens = int(math.Ceil(r.Trigger * float64(win)))
		if util < r.Trigger {
			rep.Reason = fmt.Sprintf("under the trigger: %.1f%% < %.1f%% of %d tokens", util*100, r.Trigger*100, win)
			return false
		}
	default:
		rep.TriggerTokens = win - reserve
		if tokens <= win-reserve {
			rep.Reason = fmt.Sprintf("under the compaction threshold: %d ≤ %d tokens (%.1f%% of %d)", tokens, win-reserve, util*100, win)
			return false
		}
	}
	return true
}

// rollContext is what evicting from one measured context needs, and what
// rendering its compaction line needs besides the eviction.
type rollContext struct {
	msgs         []Message
	tokensBefore int
	before       *estimate.Result // the measure the eviction starts from
	// note is the eviction note's fixed part; noteFor adds This.
	note noteInput
	// What the evicted summary (if any) stood for, needed for the note.
	prev         *Details
	prevFromHook bool
}

// newRollContext pairs the context's messages with their estimates and reads
// what the note needs: the previous compaction and the ranges it covered.
func newRollContext(s *transcript.Session, c *transcript.Context, m *estimate.Result, win int, target float64) (*rollContext, error) {
	msgs := make([]Message, len(c.Messages))
	for i, cm := range c.Messages {
		msgs[i] = Message{Entry: cm.Entry, Role: cm.Role, Tokens: m.PerMessage[i]}
	}
	rc := &rollContext{msgs: msgs, tokensBefore: m.Tokens, before: m}
	if c.Compaction != nil {
		pm, err := s.Message(c.Compaction)
		if err != nil {
			return nil, err
		}
		if pm != nil {
			rc.prev = decodeDetails(pm.Details)
		}
		rc.prevFromHook = c.Compaction.FromHook()
	}
	earlier := previousRanges(s, c, rc.prev)
	file := s.File
	if abs, err := filepath.Abs(file); err == nil {
		file = abs // the note must name the file from wherever the agent runs
	}
	rc.note = noteInput{File: file, ContextWindow: win, Target: target, Earlier: earlier}
	if s.Header != nil && s.Header.Cwd != "" {
		rc.note.Project = filepath.Clean(s.Header.Cwd)
	}
	return rc, nil
}

// noteFor is the eviction note's input when the messages before firstKept go.
func (rc *rollContext) noteFor(firstKept int) noteInput {
	n := rc.note
	n.This = rangeOf(rc.msgs[:firstKept])
	return n
}

// buildToTarget renders the compaction line of an eviction chosen by the
// measure its result is reported in: the rolled session measured again.
// The estimate after the roll is what counts (it is what `estimate` and
// the next roll will see), and it can differ from before − evicted: a
// usage anchor goes stale behind the new compaction or is evicted, a
// calibrated fit changes. So each candidate eviction (in is the input ev
// came from) is measured in memory, and the difference from its
// prediction corrects the next one, in both directions: further while the
// rolled session is over the target, back while it is under it by more
// than the prediction needed. The smallest measured eviction that meets
// the target wins (else the largest tried), so a second run finds nothing
// to do and the reported numbers are all the rolled session's.
func (r *Roller) buildToTarget(s *transcript.Session, rc *rollContext, in EvictInput, ev Eviction) (Eviction, []byte, *estimate.Result, error) {
	type tried struct {
		ev    Eviction
		after *estimate.Result
	}
	seen := map[int]bool{}
	var best, largest *tried
	for attempt := 0; attempt < 6 && !seen[ev.FirstKept]; attempt++ {
		seen[ev.FirstKept] = true
		line, err := r.buildLine(s, ev, rc)
		if err != nil {
			return Eviction{}, nil, nil, err
		}
		after, note, err := r.measureAfter(s, line)
		if err != nil {
			return Eviction{}, nil, nil, err
		}
		delta := after.Tokens - ev.KeptTokens
		ev.KeptTokens, ev.NoteTokens = after.Tokens, note
		t := &tried{ev, after}
		if largest == nil || ev.FirstKept > largest.ev.FirstKept {
			largest = t
		}
		if after.Tokens <= ev.TargetTokens && (best == nil || ev.FirstKept < best.ev.FirstKept) {
			best = t
		}
		in.Correction += delta
		next := Evict(in)
		if next.EvictedCount == 0 || best != nil && next.FirstKept >= best.ev.FirstKept ||
			after.Tokens > ev.TargetTokens && next.FirstKept <= ev.FirstKept {
			break // no smaller eviction meets it, or nothing more may go (minKeepMessages, tool pairs)
		}
		ev = next
	}
	if best == nil {
		best = largest
	}
	ev = best.ev
	ev.TargetMet = ev.KeptTokens <= ev.TargetTokens
	if !ev.TargetMet && ev.Reason == "" {
		ev.Reason = "no valid cut point brings the rolled session, measured again, under the target"
	}
	// keptTokens in details is not counted, so the measured line and
	// the final one weigh the same.
	line, err := r.buildLine(s, ev, rc)
	if err != nil {
		return Eviction{}, nil, nil, err
	}
	return ev, line, best.after, nil
}

// closure explains a roll whose numbers do not add up within
// closureWithin (nil when they do).
func closure(rc *rollContext, ev Eviction, after *estimate.Result) *Closure {
	b := rc.before
	predicted := b.Tokens - ev.EvictedTokens - ev.ReplacedTokens + ev.NoteTokens
	diff := ev.KeptTokens - predicted
	if math.Abs(float64(diff)) <= closureWithin*float64(b.Tokens) {
		return nil
	}
	why := ""
	anchorEvicted := false
	for _, m := range ev.Evicted {
		if m.Entry != nil && b.AnchorLine > 0 && m.Entry.Line == b.AnchorLine {
			anchorEvicted = true
		}
	}
	switch {
	case anchorEvicted:
		why = fmt.Sprintf("the measure before the roll is anchored on the usage record of line %d, which the roll evicts: the rolled session is measured without it", b.AnchorLine)
	case b.AnchorLine > 0 && after.AnchorLine != b.AnchorLine:
		why = fmt.Sprintf("the measure before the roll is anchored on the usage record of line %d, which the new compaction makes stale: the rolled session is measured without it", b.AnchorLine)
	default:
		why = "the rolled session, measured again, is counted differently"
	}
	why += fmt.Sprintf(" (%s %s → %s %s)", b.Method, unitOf(b), after.Method, unitOf(after))
	if diff < 0 {
		why += fmt.Sprintf(", so the kept messages and the note weigh %d tokens less than the measure before predicts", -diff)
	} else {
		why += fmt.Sprintf(", so the kept messages and the note weigh %d tokens more than the measure before predicts", diff)
	}
	return &Closure{Term: "keptTokens", Predicted: predicted, Measured: ev.KeptTokens, Difference: diff, Why: why}
}

// unitOf describes a measure's unit: the scale of its per-message counts
// and what no message accounts for.
func unitOf(m *estimate.Result) string {
	overhead := m.Overhead
	if overhead == 0 {
		overhead = m.Tokens
		for _, t := range m.PerMessage {
			overhead -= t
		}
	}
	scale := m.Scale
	if scale == 0 {
		scale = 1
	}
	return fmt.Sprintf("scale %.3f, overhead %d", scale, overhead)
}

// recordRoll fills the decision and its report for a roll of ev; line is
// its compaction entry (nil when not built).
func (r *Roller) recordRoll(d *decision, s *transcript.Session, ev Eviction, line []byte) {
	rep := &d.rep
	d.ev, d.line = ev, line
	if r.DryRun {
		var entry struct{ Summary string }
		if err := json.Unmarshal(line, &entry); err == nil {
			rep.Note = entry.Summary
		}
	}
	first := ev.Kept[0].Entry
	d.roll, d.first = true, first
	rep.Reason = ev.Reason
	if ev.TargetMet {
		rep.Reason = ""
	}
	rep.EvictedCount, rep.EvictedTokens, rep.KeptTokens = ev.EvictedCount, ev.EvictedTokens, ev.KeptTokens
	rep.NoteTokens, rep.ReplacedTokens = ev.NoteTokens, ev.ReplacedTokens
	if ev.TargetMet && float64(ev.KeptTokens) < 0.95*float64(ev.TargetTokens) && ev.Step > 0 {
		rep.Reason = fmt.Sprintf("%.1f%% under the target: the smallest eviction that reaches it ends with %d tokens that go together (a message, or a tool call with its results)",
			100*(1-float64(ev.KeptTokens)/float64(ev.TargetTokens)), ev.Step)
	}
	rep.FirstEvictedTimestamp, rep.LastEvictedTimestamp = formatTime(ev.FirstEvicted), formatTime(ev.LastEvicted)
	rep.KeptMessages = len(ev.Kept)
	rep.FirstKeptLine = first.Line
	if s.Version >= 2 {
		rep.FirstKeptEntryID = first.ID()
	}
}

// buildLine renders the compaction entry of an eviction.
func (r *Roller) buildLine(s *transcript.Session, ev Eviction, rc *rollContext) ([]byte, error) {
	read, modified, err := fileOps(s, ev.Evicted, rc.prev, rc.prevFromHook)
	if err != nil {
		return nil, err
	}
	det := Details{Mode: "rolling", EvictedCount: ev.EvictedCount, EvictedTokens: ev.EvictedTokens, KeptTokens: ev.KeptTokens,
		FirstEvictedTimestamp: formatTime(ev.FirstEvicted), LastEvictedTimestamp: formatTime(ev.LastEvicted),
		Ranges: capRanges(append(append([]Range(nil), rc.note.Earlier...), rangeOf(ev.Evicted))), ReadFiles: read, ModifiedFiles: modified}
	summary := ""
	if r.EvictionNote {
		summary = renderNote(rc.noteFor(ev.FirstKept))
	}
	w := sessionwrite.NewWriter(s)
	if r.Now != nil {
		w.Now = r.Now
	}
	a, err := w.Compaction(sessionwrite.CompactionSpec{Summary: summary, FirstKept: ev.Kept[0].Entry, TokensBefore: rc.tokensBefore, Details: det})
	if err != nil {
		return nil, fmt.Errorf("%s: building the compaction entry: %w", s.File, err)
	}
	return a.Line, nil
}

// measureAfter estimates the context of the session with line appended,
// without writing anything: the measure and the note's share of it.
func (r *Roller) measureAfter(s *transcript.Session, line []byte) (m *estimate.Result, note int, err error) {
	after, err := s.WithAppended(line)
	if err != nil {
		return m, 0, fmt.Errorf("%s: the rolled session does not load: %w", s.File, err)
	}
	c := after.Context()
	if c.Compaction == nil || len(c.Messages) == 0 || c.Messages[0].Role != "compactionSummary" {
		return m, 0, fmt.Errorf("%s: internal error: the rolled session's context does not start with the note", s.File)
	}
	if m, err = r.measureContext(after, c); err != nil {
		return m, 0, err
	}
	if len(m.PerMessage) > 0 {
		note = m.PerMessage[0]
	}
	return m, note, nil
}

// rangeOf summarises evicted conversation messages (summaries excluded).
func rangeOf(msgs []Message) Range {
	var sp rangeBuilder
	for _, m := range msgs {
		if m.Role != "compactionSummary" {
			sp.add(m.Entry, m.Tokens)
		}
	}
	return sp.result()
}

// fileChanged recognises sessionwrite.Update giving up because the file kept
// changing under it.
func fileChanged(err error) bool {
	return errors.Is(err, sessionwrite.ErrFileChanged)
}
