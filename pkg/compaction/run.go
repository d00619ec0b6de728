package compaction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Options are the inputs of CompactFile.
type Options struct {
	Settings   Settings
	Summarizer Summarizer
	// Size is how the context is measured and its window resolved
	// (estimate.Measure, the function estimate, roll and checkpoint call):
	// the trigger compares its size with the threshold and the kept tail is
	// sized in its unit. Size.Window.ContextWindow is the one window
	// override; CompactFile plans in the window Size resolves (Settings.ContextWindow
	// is set from it).
	Size   estimate.Options
	DryRun bool
	// Truncate rewrites the file as header + compaction + kept tail after
	// keeping the original as <file>.bak.<stamp>.
	Truncate bool
	// Idle refuses --truncate on a session written to less than this long
	// ago (an agent is probably active; DefaultIdle in the CLI).
	Idle time.Duration
	// Wait is how long to wait for the session lock.
	Wait time.Duration
	// settle overrides sessionwrite.DefaultSettle (tests).
	settle time.Duration
	// FailOnDropped, when set, refuses to write a summary that drops more
	// facts than it points to (exit 3); nil: no limit.
	FailOnDropped *int
	// Hooks run before and after the summary (compaction.hooks.*).
	Hooks Hooks
	// Logf receives progress and warnings (stderr); nil: silent.
	Logf func(format string, args ...any)
}

// Result is what `ctxtool compact --json` prints for one file.
type Result struct {
	File      string `json:"file"`
	Compacted bool   `json:"compacted"`
	// Reason says why nothing was (or would be) written when that was a
	// decision (nothing to compact, already compacted); Error says why the
	// file failed. Every command names a failure "error" (README, JSON
	// fields).
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
	// WouldCompact is set on dry runs only: whether a real run would
	// compact (Compacted stays false; roll --dry-run says wouldRoll).
	WouldCompact       *bool  `json:"wouldCompact,omitempty"`
	Strategy           string `json:"strategy"`
	Summarizer         string `json:"summarizer"`
	FirstKeptEntryID   string `json:"firstKeptEntryId"`
	SummarizedMessages int    `json:"summarizedMessages"`
	KeptMessages       int    `json:"keptMessages"`
	// TokensBefore and TokensAfter are pi's heuristic (Σ estimateTokens)
	// of the context before and of the context pi rebuilds after.
	TokensBefore int `json:"tokensBefore"`
	TokensAfter  int `json:"tokensAfter"`
	// NextRequestTokens is the next request after the compaction, system
	// prompt and tools included: what `ctxtool estimate` (same flags)
	// reports next. When nothing is written both "after" sizes are the
	// context as it is.
	NextRequestTokens int `json:"nextRequestTokens"`
	// Utilization is ContextTokens / ContextWindow; UsageRejected the
	// usage record pi would anchor on when it is not trusted.
	Utilization     float64             `json:"utilization"`
	UsageRejected   *estimate.Rejection `json:"usageRejected,omitempty"`
	SummaryTokens   int                 `json:"summaryTokens"`
	LLMCalls        int                 `json:"llmCalls"`
	LLMInputTokens  int                 `json:"llmInputTokens"`
	LLMOutputTokens int                 `json:"llmOutputTokens"`

	// EntryTokensBefore is what the entry stores as tokensBefore: pi's
	// usage-anchored estimateContextTokens (heuristic when stale).
	EntryTokensBefore int `json:"entryTokensBefore"`
	// ContextTokens is the trigger measure (estimate.Measure, the size
	// every command reports), Threshold the trigger.
	ContextTokens int `json:"contextTokens"`
	Threshold     int `json:"threshold"`
	ContextWindow int `json:"contextWindow"`
	// WindowSource says where ContextWindow came from (models.Window.SourceText).
	WindowSource string `json:"windowSource,omitempty"`
	// KeepRecentTokens is what was asked, KeptTokensEstimated what the
	// estimator says the kept messages cost.
	KeepRecentTokens    int    `json:"keepRecentTokens,omitempty"`
	KeptTokensEstimated int    `json:"keptTokensEstimated"`
	Estimator           string `json:"estimator"`
	FirstKeptLine       int    `json:"firstKeptLine,omitempty"`
	SummarizedFromLine  int    `json:"summarizedFromLine,omitempty"`
	SummarizedToLine    int    `json:"summarizedToLine,omitempty"`
	SplitTurn           bool   `json:"splitTurn"`
	TurnPrefixMessages  int    `json:"turnPrefixMessages,omitempty"`
	PreviousSummary     bool   `json:"previousSummary"`
	Chunks              int    `json:"chunks,omitempty"`
	Fallback            string `json:"fallback,omitempty"`
	Backup              string `json:"backup,omitempty"`
	// BackupIndexed: the backup is in the recall index (set by the CLI).
	BackupIndexed bool `json:"backupIndexed,omitempty"`
	// CarriedLines counts lines another writer (pi takes no lock) appended
	// while --truncate rewrote the file, carried over after the new content.
	CarriedLines int `json:"carriedLines,omitempty"`
	// Audit lists the facts of the summarised region that neither the
	// summary nor the kept messages carry (null when nothing was
	// summarised).
	Audit *Audit `json:"audit"`
	// QualityRetries counts summariser re-asks (the identifier guard, the
	// safeguard quality guard).
	QualityRetries int `json:"qualityRetries,omitempty"`
	// Replans counts re-plans because the session grew while it was
	// summarised (the compaction then lands after the new lines).
	Replans int `json:"replans,omitempty"`
	// Summary is the text that was (or, with --dry-run, would be) written.
	Summary  string   `json:"summary,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// MalformedLines are the session's lines pi drops: the compaction is
	// planned without them, as pi would, and they stay in the file.
	MalformedLines []transcript.Malformed `json:"malformedLines,omitempty"`

	prep    *Preparation
	outcome *Outcome
}

// Preparation returns the plan behind the result (nil when none was made).
func (r *Result) Preparation() *Preparation { return r.prep }

// Outcome returns the summary outcome (nil when nothing was summarised).
func (r *Result) Outcome() *Outcome { return r.outcome }

// Details is the compaction entry's `details`: pi's cumulative file lists
// plus what ctxtool knows about the compaction.
type Details struct {
	ReadFiles     []string      `json:"readFiles"`
	ModifiedFiles []string      `json:"modifiedFiles"`
	ToolFailures  []ToolFailure `json:"toolFailures,omitempty"`
	// Audit says which facts of the summarised region the summary dropped.
	Audit       *DetailsAudit `json:"audit,omitempty"`
	Strategy    string        `json:"strategy"`
	Summarizer  string        `json:"summarizer"`
	TokensAfter int           `json:"tokensAfter"`
	LLM         *Usage        `json:"llm,omitempty"`
	Fallback    string        `json:"fallback,omitempty"`
	Generator   string        `json:"generator"`
	// ContextOverheadTokens is, on a compaction compact --truncate wrote
	// at the root of the rewritten file, the system prompt and tools the
	// session's usage records measured: the kept tail's records measured
	// the context the rewrite replaced, so estimate reads the overhead
	// from here.
	ContextOverheadTokens int `json:"contextOverheadTokens,omitempty"`
}

// ErrNothingReclaimed is returned when a summary would not make the
// context smaller.
var ErrNothingReclaimed = errors.New("nothing would be reclaimed")

// planned is a compaction ready to be written: the plan, the summary, and
// what the entry will say.
type planned struct {
	prep        *Preparation
	out         *Outcome
	tokensAfter int
	nextRequest int // estimate.Measure of the session with the entry appended
	details     *Details
}

// CompactFile compacts one session file in five visible steps, each taking and
// returning plain values:
//
//  1. load     the session, without the lock;
//  2. plan     Prepare on it (nothing to do: Compacted=false, a Reason);
//  3. summarise without the lock — a model call can take minutes while
//     the agent keeps writing — and audit the summary;
//  4. commit   under the lock only: append the entry if the file is still
//     exactly the bytes that were planned; if it only grew, re-plan on the
//     grown file with the same cut (the summary still covers exactly what
//     precedes it) and try again; with Truncate, rewrite instead;
//  5. verify   the written file rebuilds the context reported.
//
// Hooks (Options.Hooks) run around the summary; their failures are logged,
// never fatal. A failed or empty summary is an error and nothing is
// written.
func CompactFile(ctx context.Context, path string, o Options) (*Result, error) {
	o, err := o.normalized()
	if err != nil {
		return nil, err
	}
	res := newResult(path, o)
	err = runSteps(ctx, path, o, res)
	if o.DryRun {
		would := err == nil && res.Reason == ""
		res.WouldCompact = &would
	}
	if err != nil {
		res.Compacted = false
		res.Error = err.Error()
	}
	return res, err
}

// runSteps is CompactFile's steps, filling res.
func runSteps(ctx context.Context, path string, o Options, res *Result) error {
	usage0 := usageOf(o.Summarizer)

	s, err := transcript.Load(path) // 1. load
	if err != nil {
		return err
	}
	defer func() { s.Close() }()
	if !o.DryRun {
		// refuse what cannot be written (read-only, parentId cycles) before
		// paying for a summary
		if err := writable(s, o.Truncate); err != nil {
			return err
		}
	}

	for pass := 0; ; pass++ {
		set, p, err := plan(s, o, res) // 2. plan
		if p == nil {
			return err // nil with res.Reason when there is nothing to do
		}

		hooks := o.Hooks.start(ctx, HookBefore, beforeEvent(path, p), o.logf)
		pl, err := summarize(ctx, s, p, set, o) // 3. summarise (no lock)
		finishResult(res, pl, set, o, usageOf(o.Summarizer).minus(usage0))
		hooks.wait()
		if err != nil {
			return err
		}
		if dropped := len(pl.out.Audit.Dropped); o.FailOnDropped != nil && dropped > *o.FailOnDropped {
			res.Reason = fmt.Sprintf("the summary drops %d facts of the summarised region (--fail-on-dropped %d); nothing written — see the audit", dropped, *o.FailOnDropped)
			return exitcode.New(exitcode.Threshold, fmt.Errorf("%s: %s", path, res.Reason))
		}
		if o.DryRun {
			return nil
		}

		if o.Truncate { // 4. commit (lock only here)
			err = commitRewrite(ctx, s, pl, o, res)
		} else {
			var grown *transcript.Session
			grown, pl, err = commitAppend(ctx, s, pl, set, o, res)
			if grown != nil {
				s.Close()
				s = grown
				finishResult(res, pl, set, o, usageOf(o.Summarizer).minus(usage0))
			}
		}
		if errors.Is(err, ErrPlanMoved) && pass == 0 {
			// Another process compacted, rewrote or branched the session
			// meanwhile: plan again on what is there now — usually nothing
			// is left to do ("already compacted") — and summarise once more
			// only if there is.
			next, lerr := transcript.Load(path)
			if lerr != nil {
				return lerr
			}
			s.Close()
			s = next
			res.Replans++
			o.logf("%s: %v; planning again", path, ErrPlanMoved)
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	res.Compacted = true
	if w := verify(path, res); w != "" { // 5. verify
		o.logf("%s: warning: %s", path, w)
		res.Warnings = append(res.Warnings, w)
	}
	o.Hooks.start(ctx, HookAfter, afterEvent(path, res), o.logf).wait()
	res.Summary = ""
	return nil
}

// writable checks that the session may be appended to (or, for
// --truncate, rewritten).
func writable(s *transcript.Session, rewrite bool) error {
	if rewrite {
		return s.Rewritable()
	}
	return s.Writable()
}

// normalized fills CompactFile's defaults and validates the settings.
func (o Options) normalized() (Options, error) {
	if o.Settings.Strategy == "" {
		o.Settings.Strategy = StrategyDefault
	}
	if err := o.Settings.Validate(); err != nil {
		return o, err
	}
	if o.Summarizer == nil {
		o.Summarizer = Extractive{}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o, nil
}

func (o Options) logf(format string, args ...any) { o.Logf(format, args...) }

// size is how the session is measured and its window resolved.
func (o Options) size() estimate.Options { return o.Size }

func newResult(path string, o Options) *Result {
	res := &Result{File: path, Strategy: o.Settings.Strategy, Summarizer: o.Summarizer.Name(), DryRun: o.DryRun}
	if o.Settings.Strategy != StrategySummarize {
		res.KeepRecentTokens = o.Settings.withDefaults().KeepRecentTokens
	}
	return res
}

// plan is step 2: the settings sized for this session and its
// preparation, or nil when there is nothing to do (res.Reason says why).
func plan(s *transcript.Session, o Options, res *Result) (Settings, *Preparation, error) {
	set := o.Settings
	// One walk of the branch serves the measure and the plan (a 1 GB
	// session's path is 6 MB).
	ctx := s.Context()
	m, note := measureFor(s, ctx, o.size())
	if note != "" {
		o.logf("%s: %s", s.File, note)
	}
	res.Estimator, res.Utilization, res.UsageRejected = m.Method, m.Utilization, m.Rejected
	res.MalformedLines = s.Malformed
	if m.Rejected != nil {
		res.Warnings = appendOnce(res.Warnings, m.Notes...)
	}
	set.Count, set.ContextWindow, set.ContextTokens = m.Count, m.Window.Tokens, m.Tokens
	res.WindowSource = m.Window.SourceText()
	p, err := prepare(s, ctx, set)
	if err != nil {
		return set, nil, err
	}
	p.measured = m
	res.prep = p
	for _, msg := range s.Notes() {
		if !slices.Contains(res.Warnings, msg) {
			o.logf("%s: warning: %s", s.File, msg)
			res.Warnings = append(res.Warnings, msg)
		}
	}
	fillPlan(res, s, p)
	if set.Strategy != StrategySummarize && p.Threshold <= 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %d-token window leaves nothing above the %d-token reserve: pi compacts before every prompt on this model; set compaction.reserveTokens (--reserve-tokens) well below the window",
			p.ContextWindow, p.ReserveTokens))
	}
	// Until a compaction is planned, the context stays as it is.
	res.TokensAfter, res.NextRequestTokens = p.TokensBefore, m.Tokens
	if p.Reason != "" {
		res.Reason = p.Reason
		return set, nil, nil
	}
	if p.BelowTrigger && !set.Force {
		res.Reason = fmt.Sprintf("below the trigger: the context is %d tokens, the %s strategy compacts above %d (window %d − reserve %d); run without --if-needed to compact anyway",
			p.ContextTokens, set.Strategy, p.Threshold, p.ContextWindow, p.ReserveTokens)
		if set.Strategy == StrategySummarize {
			res.Reason = fmt.Sprintf("below the trigger: the context is %d tokens, the summarize strategy compacts above %d; run without --if-needed to compact anyway",
				p.ContextTokens, p.Threshold)
		}
		if !o.DryRun {
			return set, nil, nil
		}
	}
	if o.DryRun && !o.Summarizer.Capabilities().Offline {
		res.Warnings = append(res.Warnings, "dry run: the "+o.Summarizer.Name()+" summariser was not called; tokensAfter counts the kept messages only")
		res.TokensAfter = afterTokens(p, "")
		next, err := nextRequest(s, p, "", o.size())
		res.NextRequestTokens = next
		return set, nil, err
	}
	return set, p, nil
}

// summarize is step 3: the summary of the plan, audited, and the entry's
// details. It reads the session but takes no lock and writes nothing.
func summarize(ctx context.Context, s *transcript.Session, p *Preparation, set Settings, o Options) (*planned, error) {
	o.logf("%s: summarising %d messages with the %s summariser (%s strategy)…", s.File, len(p.Summarize)+len(p.TurnPrefix), o.Summarizer.Name(), set.Strategy)
	out, err := Compact(ctx, s, p, set, o.Summarizer)
	if err != nil {
		return nil, fmt.Errorf("%s: compaction failed, the session is unchanged: %w", s.File, err)
	}
	if out.Fallback != "" {
		o.logf("%s: warning: the summariser failed (%s); wrote a mechanical extract instead (compaction.summarize.fallback=trim)", s.File, out.Fallback)
	}
	if n := len(out.Audit.Dropped); n > 0 {
		o.logf("%s: audit: the summary drops %d of the region's %d facts: %d that mattered, %d bulk tool output nobody referred to (compact --audit lists them)",
			s.File, n, out.Audit.Facts, out.Audit.DroppedMattered, out.Audit.DroppedBulk)
	}
	pl := &planned{prep: p, out: out, tokensAfter: afterTokens(p, out.Summary)}
	if pl.tokensAfter >= p.TokensBefore {
		return nil, fmt.Errorf("%s: %w: the summary and kept messages (%d tokens) are not smaller than the context (%d tokens); the session is unchanged",
			s.File, ErrNothingReclaimed, pl.tokensAfter, p.TokensBefore)
	}
	if pl.nextRequest, err = nextRequest(s, p, out.Summary, o.size()); err != nil {
		return nil, err
	}
	return pl, nil
}

// finishResult copies the summary, its audit and the usage into the
// result and builds the entry's details.
func finishResult(res *Result, pl *planned, set Settings, o Options, u Usage) {
	res.LLMCalls, res.LLMInputTokens, res.LLMOutputTokens = u.Calls, u.InputTokens, u.OutputTokens
	if pl == nil {
		return
	}
	res.outcome = pl.out
	res.TokensAfter, res.NextRequestTokens = pl.tokensAfter, pl.nextRequest
	res.SummaryTokens = countTokens(pl.out.Summary) // o200k, the summary budget's unit
	res.Chunks = pl.out.Chunks
	res.Fallback = pl.out.Fallback
	res.Summary = pl.out.Summary
	res.Audit = pl.out.Audit
	res.QualityRetries = pl.out.QualityRetries
	d := &Details{ReadFiles: pl.out.ReadFiles, ModifiedFiles: pl.out.ModifiedFiles, ToolFailures: pl.out.Failures,
		Strategy: set.Strategy, Summarizer: o.Summarizer.Name(), TokensAfter: pl.tokensAfter, Fallback: pl.out.Fallback,
		Audit: pl.out.Audit.ForDetails(), Generator: "ctxtool"}
	if u.Calls > 0 {
		d.LLM = &u
	}
	pl.details = d
}

// maxReplans bounds how often commitAppend re-plans on a grown file.
const maxReplans = 5

// commitAppend is step 4 for an append: the lock is held only inside
// sessionwrite.Append, which writes only if the file is still exactly the
// bytes s was loaded from. When another writer (pi takes no lock) appended
// meanwhile, the grown file is loaded and re-planned with the same cut
// (regrow), and the append tried again. It returns the grown session and
// its plan when it had to re-plan.
func commitAppend(ctx context.Context, s *transcript.Session, pl *planned, set Settings, o Options, res *Result) (*transcript.Session, *planned, error) {
	var grown *transcript.Session
	for attempt := 0; ; attempt++ {
		a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: pl.out.Summary, FirstKept: pl.prep.FirstKept,
			TokensBefore: pl.prep.UsageBefore, Details: pl.details})
		if err != nil {
			return grown, pl, err
		}
		err = sessionwrite.Append(ctx, s, sessionwrite.AppendOptions{Wait: o.Wait}, [][]byte{a.Line})
		if !errors.Is(err, sessionwrite.ErrFileChanged) || attempt >= maxReplans {
			return grown, pl, err
		}
		next, err := transcript.Load(s.File)
		if err != nil {
			return grown, pl, err
		}
		p, err := regrow(next, pl.prep, set)
		if err != nil {
			next.Close()
			return grown, pl, fmt.Errorf("%s: %w; nothing written — run compact again", s.File, err)
		}
		if grown != nil {
			grown.Close()
		}
		grown, s = next, next
		res.Replans++
		o.logf("%s: the session grew while it was summarised; appending after the new lines", s.File)
		fillPlan(res, next, p)
		pl = &planned{prep: p, out: pl.out, tokensAfter: afterTokens(p, pl.out.Summary), details: pl.details}
		if pl.nextRequest, err = nextRequest(next, p, pl.out.Summary, o.size()); err != nil {
			return grown, pl, err
		}
		if pl.details != nil {
			d := *pl.details
			d.TokensAfter = pl.tokensAfter
			pl.details = &d
		}
	}
}

// ErrPlanMoved is returned when the session changed under a compaction in
// a way a re-plan cannot absorb: its branch no longer contains what was
// summarised (rewritten, or the leaf moved to another branch), or someone
// else compacted it.
var ErrPlanMoved = errors.New("the session changed while it was summarised (rewritten, branched or compacted by another process)")

// regrow re-plans a compaction on a session that grew after old was
// planned: the grown branch must extend the old one entry for entry, and
// the cut stays where it was — the summary covers exactly the entries
// before it, and everything appended since joins the kept tail.
func regrow(s *transcript.Session, old *Preparation, set Settings) (*Preparation, error) {
	p, err := Prepare(s, set)
	if err != nil {
		return nil, err
	}
	path := p.Path
	if len(path) < len(old.Path) {
		return nil, ErrPlanMoved
	}
	for i, e := range old.Path {
		if path[i].ID() != e.ID() || path[i].Line != e.Line || path[i].Type() != e.Type() {
			return nil, ErrPlanMoved
		}
	}
	for _, e := range path[len(old.Path):] {
		if e.Type() == "compaction" {
			return nil, ErrPlanMoved
		}
	}
	count := old.keepCount
	if count == nil {
		count = heuristic
	}
	p.Reason, p.BelowTrigger = "", old.BelowTrigger
	p.BoundaryStart, p.Cut, p.FirstKept = old.BoundaryStart, old.Cut, path[old.Cut]
	p.SplitTurn, p.TurnStart = old.SplitTurn, old.TurnStart
	p.Summarize, p.TurnPrefix, p.Moved = old.Summarize, old.TurnPrefix, old.Moved
	p.PrevCompaction, p.PreviousSummary, p.prevDetails = old.PrevCompaction, old.PreviousSummary, old.prevDetails
	p.Kept, p.KeptEstimate = nil, 0
	for _, e := range path[old.Cut:] {
		if e.ProducesMessage() {
			p.Kept = append(p.Kept, e)
			p.KeptEstimate += count(e)
		}
	}
	return p, nil
}

// fillPlan copies the plan into the result.
func fillPlan(res *Result, s *transcript.Session, p *Preparation) {
	res.TokensBefore = p.TokensBefore
	res.EntryTokensBefore = p.UsageBefore
	res.ContextTokens = p.ContextTokens
	res.Threshold = p.Threshold
	res.ContextWindow = p.ContextWindow
	res.PreviousSummary = p.PreviousSummary != ""
	res.SplitTurn = p.SplitTurn
	res.TurnPrefixMessages = len(p.TurnPrefix)
	res.SummarizedMessages = len(p.Summarize) + len(p.TurnPrefix)
	res.KeptMessages = len(p.Kept)
	res.KeptTokensEstimated = p.KeptEstimate
	if p.FirstKept != nil {
		res.FirstKeptEntryID = p.FirstKept.ID()
		res.FirstKeptLine = p.FirstKept.Line
	}
	all := append(append([]*transcript.Entry{}, p.Summarize...), p.TurnPrefix...)
	if len(all) > 0 {
		res.SummarizedFromLine = all[0].Line
		res.SummarizedToLine = all[len(all)-1].Line
	}
}

// afterTokens is what pi's heuristic will count once the compaction is
// appended: the context pi rebuilds from the path plus the new entry.
func afterTokens(p *Preparation, summary string) int {
	path := append(append([]*transcript.Entry{}, p.Path...), transcript.PlannedCompaction(p.FirstKept.ID(), u16len(summary)))
	return transcript.BuildContext(path).HeuristicTokens()
}

// verify reloads the file and checks that the context pi rebuilds starts
// with the new summary and has the size reported.
func verify(path string, res *Result) string {
	s, err := transcript.Load(path)
	if err != nil {
		return "could not re-read the session to verify it: " + err.Error()
	}
	defer s.Close()
	ctx := s.Context()
	if ctx.Compaction == nil || len(ctx.Messages) == 0 || ctx.Messages[0].Role != "compactionSummary" {
		return "after writing, the rebuilt context does not start with the new summary"
	}
	if res.CarriedLines > 0 {
		// Lines another writer appended during the rewrite follow the kept
		// ones: report the context as it now is.
		res.TokensAfter, res.KeptMessages = ctx.HeuristicTokens(), len(ctx.Messages)-1
		return ""
	}
	if got := ctx.HeuristicTokens(); got != res.TokensAfter {
		return fmt.Sprintf("after writing, the rebuilt context has %d tokens, not the %d reported", got, res.TokensAfter)
	}
	if got := len(ctx.Messages) - 1; got != res.KeptMessages {
		return fmt.Sprintf("after writing, the rebuilt context keeps %d messages, not the %d reported", got, res.KeptMessages)
	}
	return ""
}

// measureFor measures the session's context c (s.Context()) with the
// shared context-size function, falling back to pi's heuristic when the
// asked method cannot run here (an exact tokenizer missing from the build).
func measureFor(s *transcript.Session, c *transcript.Context, size estimate.Options) (*estimate.Result, string) {
	m, err := estimate.Measure(s, c, size)
	if err == nil {
		return m, ""
	}
	asked := size.Method
	size.Method = estimate.Heuristic
	m, _ = estimate.Measure(s, c, size) // the heuristic cannot fail
	return m, "estimator " + asked + " unavailable (" + err.Error() + "): measuring with pi's heuristic"
}

// nextRequest is the size of the next request once a compaction with this
// summary is appended: the same measure, on the session as it will be.
func nextRequest(s *transcript.Session, p *Preparation, summary string, size estimate.Options) (int, error) {
	a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: summary, FirstKept: p.FirstKept, TokensBefore: p.UsageBefore})
	if err != nil {
		return 0, err
	}
	after, err := s.WithAppended(a.Line)
	if err != nil {
		return 0, fmt.Errorf("%s: the compacted session does not load: %w", s.File, err)
	}
	size.Prior = p.measured
	m, _ := measureFor(after, after.Context(), size)
	return m.Tokens, nil
}

func appendOnce(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

func usageOf(s Summarizer) Usage {
	if u := s.Capabilities().Usage; u != nil {
		return u()
	}
	return Usage{}
}

func (u Usage) minus(v Usage) Usage {
	return Usage{Model: u.Model, Calls: u.Calls - v.Calls, InputTokens: u.InputTokens - v.InputTokens, OutputTokens: u.OutputTokens - v.OutputTokens}
}
