package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/rolling"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// RollOptions are the inputs of `ctxtool roll`.
type RollOptions struct {
	IO    *IOStreams
	Paths []string
	JSON  bool
	// AllowEmpty: finding no session file in Paths is not an error.
	AllowEmpty bool

	Roll      rolling.Options
	Jobs      int
	OlderThan time.Duration
	// Size measures contexts (--tokenizer, --model, --context-window and
	// the config), as estimate, compact and checkpoint do.
	Size estimate.Options

	// RecallEnabled is config recall.enabled; Recall is the index the
	// sessions are indexed in before eviction (unset when disabled).
	RecallEnabled bool
	Recall        recallSettings
	// Fallback summarises when recall is unavailable (nil: unavailable).
	Fallback rolling.FallbackFunc
}

func newRollCmd(f *Factory, runF func(*RollOptions) error) *cobra.Command {
	return command(f, &RollOptions{IO: f.IO}, runF, runRoll, &cobra.Command{
		Use:   "roll FILE|DIR...",
		Short: "Rolling context window: evict the oldest messages and leave an eviction note",
		Long: `Keep sessions inside their context window without summarising: when a
session's active context crosses the trigger, its oldest messages are evicted
until it is back at --target-utilization of the window, and a short eviction
note says how many messages left, from when to when, and how to search for
them. Nothing is deleted and no model is called: the eviction is one appended
compaction entry (pi and OpenClaw load it natively) and the evicted messages
stay in the file and in the recall index ('ctxtool search').

A tool call and its results are always evicted together, at least
--min-keep-messages recent messages are kept, and a session under the trigger
is left alone, so running roll again changes nothing.

Trigger: by default pi's compaction threshold (window − compaction.reserveTokens,
183,616 tokens of a 200k window); --trigger P rolls at utilization ≥ P (0.9 is
OpenClaw's threshold), --trigger 0 rolls whenever the context is above the
target. Tokens are measured with --tokenizer (auto: calibrated from the
session's usage records, else o200k).

Before evicting, the session is indexed for recall. When recall is disabled
(recall.enabled: false) or the index cannot be opened, roll falls back to a
safeguard compaction (a summary) with a warning and "fallback" in the JSON;
--no-fallback refuses instead.

Directories are walked for session transcripts in the pi layout
(sessions/--<cwd>--/*.jsonl) and the OpenClaw layout
(agents/<id>/sessions/*.jsonl); archives (.reset./.deleted.), backups and lock
files are skipped. Sessions locked by OpenClaw are skipped and reported (exit
code 4 unless --wait gets the lock). Standalone pi takes no lock: use
--older-than to leave live sessions alone.`,
		Example: `  ctxtool roll session.jsonl
  ctxtool roll --dry-run --trigger 0 --target-utilization 0.5 session.jsonl
  ctxtool roll --older-than 30m --json ~/.openclaw/agents ~/.pi/agent/sessions`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *RollOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	allowEmptyFlag(cmd, &o.AllowEmpty)
	configFlags(cmd, "compaction.rolling.targetUtilization", "compaction.rolling.minKeepMessages", "compaction.rolling.evictionNote",
		"compaction.rolling.trigger", "estimate.tokenizer", "model", "contextWindow")
	fl.BoolVar(&o.Roll.DryRun, "dry-run", false, "report what would be evicted, write nothing")
	fl.DurationVar(&o.Roll.Wait, "wait", 0, "wait up to this long for a locked session (default: skip it)")
	fl.BoolVar(&o.Roll.NoFallback, "no-fallback", false, "refuse instead of summarising when recall is unavailable")
	fl.IntVar(&o.Jobs, "jobs", 0, "sessions processed in parallel (default: number of CPUs)")
	fl.DurationVar(&o.OlderThan, "older-than", 0, "skip sessions modified more recently than this (live sessions)")
	addIndexFlag(cmd)
}

func (o *RollOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	fl := c.Flags()
	o.Paths = args
	o.JSON = f.JSON
	r := &o.Roll
	r.TargetUtilization = cfg.Float(fl, "compaction.rolling.targetUtilization")
	r.MinKeepMessages = cfg.Int(fl, "compaction.rolling.minKeepMessages")
	r.EvictionNote = cfg.Bool(fl, "compaction.rolling.evictionNote")
	r.Trigger = cfg.Float(fl, "compaction.rolling.trigger")
	// An explicit --trigger 0 forces a roll; 0 from the config is the
	// default "use the compaction threshold".
	r.Force = fl.Changed("trigger") && r.Trigger == 0
	r.ReserveTokens = cfg.Int(nil, "compaction.reserveTokens")
	o.Size = f.Measurer()
	// Disabled recall is never opened, so its settings (the embedder
	// above all) are not resolved and cannot fail the roll.
	if o.RecallEnabled = cfg.Bool(nil, "recall.enabled"); o.RecallEnabled {
		var err error
		if o.Recall, err = f.Recall(); err != nil {
			return err
		}
	}
	if o.Fallback == nil {
		o.useSafeguardFallback(f.Compaction())
	}
	return nil
}

// useSafeguardFallback sets the fallback to the safeguard compaction with
// the compaction service c, which compact uses too.
func (o *RollOptions) useSafeguardFallback(c Compaction) {
	// The fallback's summariser logs from the batch workers:
	// serialise everything roll writes to stderr.
	streams := *o.IO
	streams.ErrOut = &lockedWriter{w: o.IO.ErrOut}
	o.IO = &streams
	c.Settings.Strategy = compaction.StrategySafeguard
	c.Settings.Force = true // the roll trigger already decided
	o.Fallback = rollFallback(c, o.Size, o.IO.ErrOut)
}

func validateRoll(opts *RollOptions) error {
	o := opts.Roll
	// the key table's ranges, in the words a flag's check uses
	for _, err := range []error{config.CheckValue("compaction.rolling.targetUtilization", o.TargetUtilization),
		config.CheckValue("compaction.rolling.minKeepMessages", o.MinKeepMessages),
		config.CheckValue("compaction.rolling.trigger", o.Trigger)} {
		if err != nil {
			return err
		}
	}
	switch {
	case opts.Jobs < 0:
		return fmt.Errorf("--jobs %d: must be ≥ 1", opts.Jobs)
	case opts.OlderThan < 0:
		return fmt.Errorf("--older-than %v: must be positive", opts.OlderThan)
	case opts.Size.Method != "" && !estimate.ValidMethod(opts.Size.Method):
		return fmt.Errorf("--tokenizer %q: use one of %s", opts.Size.Method, strings.Join(estimate.Methods(), ", "))
	}
	return nil
}

// recallAdapter gives the roller the two calls it needs.
type recallAdapter struct{ ix *recall.Index }

// indexToCreate stands for the index a real roll would create, in a dry
// run, which neither indexes nor checks coverage.
type indexToCreate struct{}

func (indexToCreate) Covered(string) (bool, error) {
	return false, errors.New("dry run: no index is created")
}

func (indexToCreate) Index(context.Context, string) error {
	return errors.New("dry run: no index is created")
}

// exists reports whether path names something on disk.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (a recallAdapter) Covered(path string) (bool, error) { return a.ix.Covered(path) }

func (a recallAdapter) Index(ctx context.Context, path string) error {
	_, err := a.ix.Index(ctx, path)
	return err
}

func runRoll(ctx context.Context, opts *RollOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := validateRoll(opts); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	files, err := walkInputs(opts.IO.ErrOut, opts.Paths, walk.Options{Writable: true}, opts.AllowEmpty)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Explicit && f.Kind != walk.Transcript {
			// Refused like every read-only transcript (exit 1), not as a
			// usage error: the file exists and is read by the other commands.
			return exitcode.New(exitcode.Runtime, fmt.Errorf("%s: not rolled (%s): only primary session transcripts are written to; roll a copy exported with `ctxtool export FILE --to pi`", f.Path, f.Kind))
		}
	}

	r, closeIndex := newRoller(opts)
	defer closeIndex()
	if r.Recall == nil && len(files) > 0 {
		if opts.Roll.NoFallback {
			fmt.Fprintf(opts.IO.ErrOut, "warning: %v; sessions that need a roll are refused (--no-fallback)\n", r.RecallErr)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "warning: %v; sessions that need a roll get a safeguard compaction (a summary) instead — rolling without recall would be amnesia\n", r.RecallErr)
		}
	}

	prog := opts.IO.NewProgress("rolling", "sessions", len(files))
	rep := &rollReporter{opts: opts, prog: prog, files: len(files)}
	sum := r.Batch(ctx, files, rolling.BatchOptions{Jobs: opts.Jobs, OlderThan: opts.OlderThan, Progress: func(done, total int) { prog.Update(done, "") }},
		rep.report)
	prog.Clear()
	if rep.writeErr != nil {
		return exitcode.New(exitcode.Runtime, rep.writeErr)
	}
	if !opts.JSON {
		printRollTable(opts.IO, rep.notable, sum, opts.Roll.DryRun)
	}
	switch {
	case sum.Errors > 0:
		return exitcode.Silent(exitcode.Runtime)
	case sum.Locked > 0:
		return exitcode.Silent(exitcode.Locked)
	}
	return nil
}

// newRoller builds the roller, with the recall index when it is enabled and
// opens, else with the reason it is not there; closeIndex closes the index.
func newRoller(opts *RollOptions) (r *rolling.Roller, closeIndex func()) {
	r = &rolling.Roller{Options: opts.Roll, Size: opts.Size, Fallback: opts.Fallback}
	closeIndex = func() {}
	if !opts.RecallEnabled {
		r.RecallErr = fmt.Errorf("recall is disabled (recall.enabled: false)")
	} else if loc, err := opts.Recall.location(); err == nil && opts.Roll.DryRun && !recall.IsURL(loc) && !exists(loc) {
		// A dry run writes nothing, not even a new index: the roll it
		// plans would create one, so recall counts as there.
		r.Recall = indexToCreate{}
	} else if ix, err := opts.Recall.open(); err != nil {
		r.RecallErr = fmt.Errorf("the recall index cannot be opened: %w", err)
	} else {
		closeIndex = func() { ix.Close() }
		r.Recall = recallAdapter{ix}
	}
	return r, closeIndex
}

// rollReporter takes the batch's reports from its workers, one at a time:
// it prints their errors and warnings, writes the JSON lines, and keeps the
// reports the table lists.
type rollReporter struct {
	opts  *RollOptions
	prog  *iostreams.Progress
	files int // sessions in the batch

	mu       sync.Mutex
	writeErr error
	notable  []*rolling.Report
}

func (p *rollReporter) report(rep *rolling.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	opts, prog := p.opts, p.prog
	if rep.Error != "" && !rep.Locked {
		prog.Clear()
		fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %s\n", rep.Error)
	}
	// A usage record not trusted changes what a roll evicts: say so for
	// every session listed below (a large batch lists only those it rolls).
	if !opts.JSON && (p.files <= 20 || rep.Would()) {
		if len(rep.Warnings) > 0 {
			prog.Clear()
		}
		warnFile(opts.IO.ErrOut, rep.File, rep.Warnings)
	}
	if len(rep.MalformedLines) > 0 {
		prog.Clear()
		warnMalformed(opts.IO.ErrOut, rep.File, rep.MalformedLines, "rolls pi's context without it")
	}
	if opts.JSON {
		if err := writeJSONLine(opts.IO.Out, rep); err != nil && p.writeErr == nil {
			p.writeErr = err
		}
		return
	}
	if p.files <= 20 || rep.Would() || rep.Fallback != "" || rep.Error != "" {
		p.notable = append(p.notable, rep)
	}
}

func printRollTable(streams *IOStreams, reps []*rolling.Report, sum rolling.Summary, dryRun bool) {
	out := streams.Out
	if len(reps) > 0 {
		t := newTable(out).term(streams)
		t.row("FILE", "ROLLED", "EVICTED", "EVICTED TOKENS", "TOKENS", "KEPT", "RANGE / REASON")
		for _, r := range reps {
			rolled := "no"
			switch {
			case r.Would() && dryRun:
				rolled = "would"
			case r.Rolled:
				rolled = "yes"
			case r.Compacted:
				rolled = "compacted"
			case r.Locked:
				rolled = "locked"
			case r.Error != "":
				rolled = "error"
			case r.Skipped:
				rolled = "skipped"
			}
			tokens := humanInt(r.TokensBefore)
			if r.Would() {
				tokens += " → " + humanInt(r.KeptTokens)
			}
			if r.ContextWindow > 0 {
				tokens += fmt.Sprintf(" / %s", humanInt(r.ContextWindow))
			}
			what := r.Reason
			if r.Would() && r.FirstEvictedTimestamp != "" {
				what = r.FirstEvictedTimestamp + " … " + r.LastEvictedTimestamp
				if r.Reason != "" {
					what += " (" + r.Reason + ")"
				}
			}
			if r.Error != "" && !r.Locked {
				what = r.Error
			}
			t.row(displayPath(r.File), rolled, humanInt(r.EvictedCount), humanInt(r.EvictedTokens), tokens, humanInt(r.KeptMessages), what)
		}
		t.flush()
		fmt.Fprintln(out)
		// A dry run of one session shows exactly what would be appended.
		if len(reps) == 1 && dryRun && reps[0].Note != "" {
			fmt.Fprintf(out, "--- eviction note that would be appended (from line %d on is kept) ---\n%s\n\n", reps[0].FirstKeptLine, reps[0].Note)
		}
	}
	verb := "rolled"
	if dryRun {
		verb = "would roll"
	}
	fmt.Fprintf(out, "%d sessions: %d %s (%s messages, %s tokens evicted), %d unchanged, %d skipped, %d locked, %d fell back, %d errors; %.2fs (%.1f sessions/s)\n",
		sum.Sessions, sum.Rolled, verb, humanInt(sum.EvictedCount), humanInt(sum.EvictedTokens), sum.Unchanged, sum.Skipped,
		sum.Locked, sum.Fallback, sum.Errors, sum.Seconds, sum.PerSecond)
}

// rollFallback is the fallback for rolling without recall
// (docs/design/rolling-window.md): OpenClaw's
// safeguard compaction with the settings and the summariser compact would
// use (co, strategy safeguard), measured with size: the configured
// model when an endpoint is configured, else the built-in extractive
// summariser, which says so on errOut. The summariser is built, and the
// settings checked, when the first session needs it.
func rollFallback(co Compaction, size estimate.Options, errOut io.Writer) rolling.FallbackFunc {
	var (
		once   sync.Once
		sum    compaction.Summarizer
		sumErr error
	)
	return func(ctx context.Context, path string, o rolling.Options) (*rolling.Report, error) {
		once.Do(func() {
			if sumErr = co.validate(); sumErr == nil {
				sum, sumErr = co.pick(errOut)
			}
			if sumErr != nil {
				sumErr = fmt.Errorf("safeguard fallback: %w", sumErr)
			}
		})
		if sumErr != nil {
			return nil, sumErr
		}
		if co.Deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, co.Deadline)
			defer cancel()
		}
		res, err := compaction.CompactFile(ctx, path, compaction.Options{
			Settings: co.Settings, Summarizer: sum, Size: size, DryRun: o.DryRun, Wait: o.Wait,
		})
		if err != nil {
			return nil, err
		}
		return rolling.FallbackReport(res), nil
	}
}

// lockedWriter serialises writes from concurrent goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
