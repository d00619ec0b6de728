package compaction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Options are the inputs of Run.
type Options struct {
	Settings   Settings
	Summarizer Summarizer
	// Size is how the context is measured and its window resolved
	// (estimate.Measure, the function estimate, roll and checkpoint call):
	// the trigger compares its size with the threshold and the kept tail is
	// sized in its unit. Settings.ContextWindow > 0 overrides its window.
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
	// settle overrides transcript.DefaultSettle (tests).
	settle time.Duration
	// Logf receives progress and warnings (stderr); nil: silent.
	Logf func(format string, args ...any)
}

// Result is what `ctxtool compact --json` prints for one file.
type Result struct {
	File      string `json:"file"`
	Compacted bool   `json:"compacted"`
	Reason    string `json:"reason,omitempty"`
	DryRun    bool   `json:"dryRun,omitempty"`
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
	Strategy      string        `json:"strategy"`
	Summarizer    string        `json:"summarizer"`
	TokensAfter   int           `json:"tokensAfter"`
	LLM           *Usage        `json:"llm,omitempty"`
	Fallback      string        `json:"fallback,omitempty"`
	Generator     string        `json:"generator"`
}

// ErrNothingReclaimed is returned when a summary would not make the
// context smaller.
var ErrNothingReclaimed = errors.New("nothing would be reclaimed")

// planned is a compaction ready to be written.
type planned struct {
	prep        *Preparation
	out         *Outcome
	tokensAfter int
	nextRequest int // estimate.Measure of the session with the entry appended
	details     *Details
}

// Run compacts one session file: plan, summarise and append one compaction
// entry under the session lock (or, with Truncate, rewrite the file). A
// session with nothing to compact gives Compacted=false and a Reason, not
// an error; a failed or empty summary is an error and nothing is written.
func Run(ctx context.Context, path string, o Options) (*Result, error) {
	set := o.Settings
	if set.Strategy == "" {
		set.Strategy = StrategyDefault
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	if o.Summarizer == nil {
		o.Summarizer = Extractive{}
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &Result{File: path, Strategy: set.Strategy, Summarizer: o.Summarizer.Name(), DryRun: o.DryRun}
	size := o.Size
	if set.ContextWindow > 0 {
		size.Window.ContextWindow = set.ContextWindow
	}
	if set.Strategy != StrategySummarize {
		res.KeepRecentTokens = set.withDefaults().KeepRecentTokens
	}
	var memo *planned
	var memoKey string
	usage0 := usageOf(o.Summarizer)

	plan := func(s *transcript.Session) (*planned, error) {
		set := set
		m, note := measureFor(s, size)
		if note != "" {
			logf("%s: %s", path, note)
		}
		res.Estimator, res.Utilization, res.UsageRejected = m.Method, m.Utilization, m.Rejected
		res.MalformedLines = s.Malformed
		if m.Rejected != nil {
			res.Warnings = appendOnce(res.Warnings, m.Notes...)
		}
		set.Count, set.ContextWindow, set.ContextTokens = m.Count, m.Window.Tokens, m.Tokens
		p, err := Prepare(s, set)
		if err != nil {
			return nil, err
		}
		res.prep = p
		for _, w := range s.Warnings {
			if msg := w.String(); !slices.Contains(res.Warnings, msg) {
				logf("%s: warning: %s", path, w)
				res.Warnings = append(res.Warnings, msg)
			}
		}
		fillPlan(res, s, p)
		// Until a compaction is planned, the context stays as it is.
		res.TokensAfter, res.NextRequestTokens = p.TokensBefore, m.Tokens
		if p.Reason != "" {
			res.Reason = p.Reason
			return nil, nil
		}
		if p.BelowTrigger && !set.Force {
			res.Reason = fmt.Sprintf("below the trigger: the context is %d tokens, the %s strategy compacts above %d (window %d − reserve %d); run without --if-needed to compact anyway",
				p.ContextTokens, set.Strategy, p.Threshold, p.ContextWindow, p.ReserveTokens)
			if set.Strategy == StrategySummarize {
				res.Reason = fmt.Sprintf("below the trigger: the context is %d tokens, the summarize strategy compacts above %d; run without --if-needed to compact anyway",
					p.ContextTokens, p.Threshold)
			}
			if !o.DryRun {
				return nil, nil
			}
		}
		if o.DryRun && o.Summarizer.Name() != "extractive" {
			res.Warnings = append(res.Warnings, "dry run: the "+o.Summarizer.Name()+" summariser was not called; tokensAfter counts the kept messages only")
			res.TokensAfter = afterTokens(p, "")
			if res.NextRequestTokens, err = nextRequest(s, p, "", size); err != nil {
				return nil, err
			}
			return nil, nil
		}
		key := fmt.Sprintf("%s|%d|%d|%d", p.FirstKept.ID, p.BoundaryStart, len(p.Summarize), len(p.TurnPrefix))
		if memo != nil && memoKey == key {
			memo.prep = p
			memo.tokensAfter = afterTokens(p, memo.out.Summary)
			if memo.nextRequest, err = nextRequest(s, p, memo.out.Summary, size); err != nil {
				return nil, err
			}
			return memo, nil
		}
		logf("%s: summarising %d messages with the %s summariser (%s strategy)…", path, len(p.Summarize)+len(p.TurnPrefix), o.Summarizer.Name(), set.Strategy)
		out, err := Compact(ctx, s, p, set, o.Summarizer)
		if err != nil {
			return nil, fmt.Errorf("%s: compaction failed, the session is unchanged: %w", path, err)
		}
		if out.Fallback != "" {
			logf("%s: warning: the summariser failed (%s); wrote a mechanical extract instead (compaction.summarize.fallback=trim)", path, out.Fallback)
		}
		pl := &planned{prep: p, out: out, tokensAfter: afterTokens(p, out.Summary)}
		if pl.tokensAfter >= p.TokensBefore {
			return nil, fmt.Errorf("%s: %w: the summary and kept messages (%d tokens) are not smaller than the context (%d tokens); the session is unchanged",
				path, ErrNothingReclaimed, pl.tokensAfter, p.TokensBefore)
		}
		if pl.nextRequest, err = nextRequest(s, p, out.Summary, size); err != nil {
			return nil, err
		}
		memo, memoKey = pl, key
		return pl, nil
	}

	finish := func(pl *planned) {
		u := usageOf(o.Summarizer).minus(usage0)
		res.LLMCalls, res.LLMInputTokens, res.LLMOutputTokens = u.Calls, u.InputTokens, u.OutputTokens
		if pl == nil {
			return
		}
		res.outcome = pl.out
		res.TokensAfter, res.NextRequestTokens = pl.tokensAfter, pl.nextRequest
		res.SummaryTokens = (u16len(pl.out.Summary) + 3) / 4
		res.Chunks = pl.out.Chunks
		res.Fallback = pl.out.Fallback
		res.Summary = pl.out.Summary
		d := &Details{ReadFiles: pl.out.ReadFiles, ModifiedFiles: pl.out.ModifiedFiles, ToolFailures: pl.out.Failures,
			Strategy: set.Strategy, Summarizer: o.Summarizer.Name(), TokensAfter: pl.tokensAfter, Fallback: pl.out.Fallback,
			Generator: "ctxtool"}
		if u.Calls > 0 {
			d.LLM = &u
		}
		pl.details = d
	}

	var err error
	if o.Truncate && !o.DryRun {
		err = runTruncate(ctx, path, o, plan, finish, res)
	} else {
		// Only the last plan counts: an earlier one may have been dropped
		// because the file changed, and its re-plan found nothing to do.
		wrote := false
		err = transcript.Update(ctx, path, transcript.UpdateOptions{Wait: o.Wait, DryRun: o.DryRun}, func(s *transcript.Session) ([][]byte, error) {
			wrote = false
			pl, err := plan(s)
			finish(pl)
			if err != nil || pl == nil {
				return nil, err
			}
			a, err := s.NewWriter().Compaction(transcript.CompactionSpec{Summary: pl.out.Summary, FirstKept: pl.prep.FirstKept,
				TokensBefore: pl.prep.UsageBefore, Details: pl.details})
			if err != nil {
				return nil, err
			}
			wrote = !o.DryRun
			return [][]byte{a.Line}, nil
		})
		res.Compacted = err == nil && wrote
	}
	if o.DryRun {
		would := err == nil && res.Reason == ""
		res.WouldCompact = &would
	}
	if err != nil {
		res.Compacted = false
		if res.Reason == "" {
			res.Reason = err.Error()
		}
		return res, err
	}
	if res.Compacted {
		if w := verify(path, res); w != "" {
			logf("%s: warning: %s", path, w)
			res.Warnings = append(res.Warnings, w)
		}
	}
	if !o.DryRun {
		res.Summary = ""
	}
	return res, nil
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
		res.FirstKeptEntryID = p.FirstKept.ID
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
	c := &transcript.Entry{Index: -1, Type: "compaction", ID: "\x00ctxtool-new", Role: "compactionSummary",
		Chars: u16len(summary), FirstKeptEntryID: p.FirstKept.ID, FirstKeptEntryIndex: -1}
	path := append(append([]*transcript.Entry{}, p.Path...), c)
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

// measureFor measures the session with the shared context-size function,
// falling back to pi's heuristic when the asked method cannot run here (an
// exact tokenizer missing from the build).
func measureFor(s *transcript.Session, size estimate.Options) (*estimate.Result, string) {
	m, err := estimate.Measure(s, s.Context(), size)
	if err == nil {
		return m, ""
	}
	asked := size.Method
	size.Method = estimate.Heuristic
	m, _ = estimate.Measure(s, s.Context(), size) // the heuristic cannot fail
	return m, "estimator " + asked + " unavailable (" + err.Error() + "): measuring with pi's heuristic"
}

// nextRequest is the size of the next request once a compaction with this
// summary is appended: the same measure, on the session as it will be.
func nextRequest(s *transcript.Session, p *Preparation, summary string, size estimate.Options) (int, error) {
	a, err := s.NewWriter().Compaction(transcript.CompactionSpec{Summary: summary, FirstKept: p.FirstKept, TokensBefore: p.UsageBefore})
	if err != nil {
		return 0, err
	}
	after, err := s.WithAppended(a.Line)
	if err != nil {
		return 0, fmt.Errorf("%s: the compacted session does not load: %v", s.File, err)
	}
	m, _ := measureFor(after, size)
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
	if u, ok := s.(usageReporter); ok {
		return u.Usage()
	}
	return Usage{}
}

func (u Usage) minus(v Usage) Usage {
	return Usage{Model: u.Model, Calls: u.Calls - v.Calls, InputTokens: u.InputTokens - v.InputTokens, OutputTokens: u.OutputTokens - v.OutputTokens}
}
