package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/human"
)

// CompactOptions are the inputs of `ctxtool compact`.
type CompactOptions struct {
	IO    *IOStreams
	Files []string
	JSON  bool
	// Compaction is the settings and the summarizer set (a service).
	Compaction
	// Size measures the context (--tokenizer, --model, --context-window
	// and the config), as estimate, roll and checkpoint do.
	Size   estimate.Options
	DryRun bool
	// IfNeeded gates the compaction on the strategy's trigger.
	IfNeeded bool
	Truncate bool
	// IndexBackup puts a --truncate backup in the recall index, so what
	// the rewrite dropped stays searchable (nil: recall is disabled).
	IndexBackup func(ctx context.Context, path string) error
	Idle        time.Duration
	Wait        time.Duration
	// MemoryFlush runs the pre-compaction memory flush first (Flush).
	MemoryFlush bool
	Flush       MemoryFlushSettings
	// Audit prints the dropped facts (human output); FailOnDropped >= 0
	// refuses a summary dropping more facts than that (exit 3).
	Audit         bool
	FailOnDropped int
	Hooks         compaction.Hooks
}

func newCompactCmd(f *Factory, runF func(*CompactOptions) error) *cobra.Command {
	return command(f, &CompactOptions{IO: f.IO}, runF, runCompact, &cobra.Command{
		Use:   "compact FILE|DIR...",
		Short: "Summarize old history and append a compaction entry (pi/OpenClaw format)",
		// The defaults quoted are the package constants, so the help cannot
		// drift from what runs.
		Long: fmt.Sprintf(`Summarize the older part of a session's active context and append one
compaction entry, exactly as pi or OpenClaw would: pi then rebuilds the
context as the summary followed by the kept recent messages.

The kept tail is sized with the best estimator available (calibrated from
the session's own usage records), and the cut never separates a tool call
from its result. The previous compaction's summary is carried forward and
the messages it kept are summarised or kept again, never dropped.

Strategies (--strategy, config compaction.mode):
  default    pi: trigger at window − reserve (%d), keep ~%d tokens
  safeguard  OpenClaw: reserve floor %d, staged chunk summaries, the last
             3 user turns verbatim, required sections, ≤ %s characters
  summarize  single pass, first request verbatim, last 6 messages
             kept, tool output previewed (first 500 + last 200 characters)
The rules of each strategy are in the repository's docs/design/
(pi-baseline.md, openclaw-compaction.md, single-pass-summary.md).

Summarizers (--summarizer):
  llm         any OpenAI-compatible endpoint (llm.baseURL, llm.model,
              llm.apiKey / OPENAI_API_KEY, OPENAI_BASE_URL)
  extractive  built in, deterministic, offline
  auto        llm when configured, else extractive (says which on stderr)

It compacts on request, like pi's /compact: whenever there is history to
summarize. --if-needed (for hooks and cron) leaves a session below the
strategy's trigger alone. Nothing is written with --dry-run; a failed or
empty summary writes nothing and exits 1.`,
			compaction.DefaultReserveTokens, compaction.DefaultKeepRecentTokens, compaction.DefaultReserveTokensFloor,
			humanInt(compaction.MaxSummaryChars)),
		Example: `  ctxtool compact session.jsonl --summarizer extractive --dry-run
  ctxtool compact session.jsonl --strategy safeguard --json
  ctxtool compact session.jsonl --if-needed        # from a hook: only above the trigger
  OPENAI_API_KEY=… ctxtool compact session.jsonl --summarizer llm --llm-model gpt-4o-mini`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *CompactOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	configFlags(cmd, "compaction.mode", "compaction.summarizer", "compaction.keepRecentTokens", "compaction.reserveTokens",
		"compaction.customInstructions", "contextWindow", "model", "llm.model", "estimate.tokenizer")
	fl.BoolVar(&o.DryRun, "dry-run", false, "show what would be summarized and kept; write nothing")
	fl.BoolVar(&o.Truncate, "truncate", false, "rewrite the file as header + compaction + kept tail (original kept as <file>.bak.<stamp>)")
	fl.DurationVar(&o.Idle, "idle", compaction.DefaultIdle, "with --truncate: refuse a session written to less than this long ago (an agent is active; exit 4)")
	fl.DurationVar(&o.Wait, "wait", 0, "wait this long for the session lock (default: fail at once, exit 4)")
	fl.BoolVar(&o.IfNeeded, "if-needed", false, "compact only when the context is above the strategy's trigger (hooks, cron)")
	// --force was needed before compact compacted on request; old scripts keep working.
	fl.Bool("force", false, "compact even below the trigger (the default; kept for old scripts)")
	_ = fl.MarkHidden("force")
	fl.BoolVar(&o.MemoryFlush, "memory-flush", false, "first append the durable facts of the summarised history to <workspace>/memory/YYYY-MM-DD.md (see 'ctxtool flush')")
	fl.StringVar(&o.Flush.Workspace, "workspace", "", "the agent's workspace, for --memory-flush")
	fl.BoolVar(&o.Audit, "audit", false, "list the facts of the summarised region the summary dropped (always in --json as audit)")
	fl.IntVar(&o.FailOnDropped, "fail-on-dropped", -1, "exit 3 and write nothing when the summary drops more than N facts (CI gate)")
}

func (o *CompactOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	if err := o.fromConfig(f, c); err != nil {
		return err
	}
	if o.MemoryFlush {
		if err := o.loadFlush(f); err != nil {
			return err
		}
	}
	o.Files = args
	o.JSON = f.JSON
	if o.Truncate && !o.DryRun && cfg.Bool(nil, "recall.enabled") && o.IndexBackup == nil {
		rs, err := f.Recall()
		if err != nil {
			return err
		}
		o.IndexBackup = backupIndexer(rs)
	}
	return nil
}

// backupIndexer returns the function that puts a --truncate backup in the
// recall index rs names. compact has no --index flag: the index is the
// one recall.url or the state directory names.
func backupIndexer(rs recallSettings) func(ctx context.Context, path string) error {
	return func(ctx context.Context, path string) error {
		ix, err := rs.open()
		if err != nil {
			return err
		}
		defer ix.Close()
		_, err = ix.Index(ctx, path)
		return err
	}
}

// fromConfig resolves flags, environment and config into the options.
func (o *CompactOptions) fromConfig(f *Factory, c *cobra.Command) error {
	o.load(f)
	if o.IfNeeded && boolFlag(c.Flags(), "force") {
		return fmt.Errorf("--if-needed and --force contradict each other: leave out --force (compact compacts on request)")
	}
	return o.validate()
}

// load reads the compaction settings, the summarizer set, the measurer
// and the compaction hooks.
func (o *CompactOptions) load(f *Factory) {
	o.Compaction = f.Compaction()
	o.Size = f.Measurer()
	o.Hooks = compaction.Hooks{
		BeforeCompaction: f.cfg.String(nil, "compaction.hooks.beforeCompaction"),
		AfterCompaction:  f.cfg.String(nil, "compaction.hooks.afterCompaction"),
		Timeout:          f.cfg.Duration(nil, "compaction.hooks.timeout"),
	}
}

func boolFlag(fs *pflag.FlagSet, name string) bool {
	b, _ := fs.GetBool(name)
	return b
}

// summarizer picks the summariser and says which on stderr.
func (o *CompactOptions) summarizer() (compaction.Summarizer, error) { return o.pick(o.IO.ErrOut) }

func runCompact(ctx context.Context, o *CompactOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sum, err := o.summarizer()
	if err != nil {
		return err
	}
	if o.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Deadline)
		defer cancel()
	}
	files, err := o.files()
	if err != nil {
		return err
	}
	var exit batchExit
	for _, file := range files {
		if err := o.compactFile(ctx, sum, file, &exit); err != nil {
			return err
		}
	}
	return exit.err()
}

// compactFile compacts one file and reports it; a failure is the file's
// (exit). It returns an error only when the report could not be written.
func (o *CompactOptions) compactFile(ctx context.Context, sum compaction.Summarizer, file string, exit *batchExit) error {
	defer limitMemoryFor(file)()
	if err := checkInput(file); err != nil {
		exit.fail(o.IO.ErrOut, err)
		if o.JSON {
			return writeJSONLine(o.IO.Out, o.failedResult(file, sum, err))
		}
		return nil
	}
	if o.MemoryFlush {
		if err := flushBeforeCompaction(ctx, o, file); err != nil {
			exit.fail(o.IO.ErrOut, err)
			return nil
		}
	}
	res, err := compaction.CompactFile(ctx, file, o.compactionOptions(sum))
	if err == nil {
		recordCompaction(ctx, o, res)
	}
	if err == nil && res.Backup != "" && o.IndexBackup != nil {
		// Nothing leaves search: the lines the rewrite dropped are in
		// the backup, which directory walks skip (as OpenClaw's memory
		// search does); index it by name now. It stays in the index:
		// index prunes only files that no longer exist.
		err = o.indexBackup(ctx, file, res)
	}
	if err != nil {
		exit.fail(o.IO.ErrOut, err)
		if res == nil {
			res = o.failedResult(file, sum, err)
		}
	}
	warnMalformed(o.IO.ErrOut, file, res.MalformedLines, "compacts pi's context without it")
	warnFile(o.IO.ErrOut, file, res.Warnings)
	if o.JSON {
		return writeJSONLine(o.IO.Out, res)
	}
	printCompact(o, res, err)
	return nil
}

// compactionOptions are the options compaction.Run takes for each file.
func (o *CompactOptions) compactionOptions(sum compaction.Summarizer) compaction.Options {
	set := o.Settings
	set.Force = !o.IfNeeded
	opts := compaction.Options{
		Settings: set, Summarizer: sum, Size: o.Size, DryRun: o.DryRun, Truncate: o.Truncate, Idle: o.Idle, Wait: o.Wait,
		Hooks: o.Hooks,
		Logf:  func(format string, args ...any) { fmt.Fprintf(o.IO.ErrOut, format+"\n", args...) },
	}
	if o.FailOnDropped >= 0 {
		opts.FailOnDropped = &o.FailOnDropped
	}
	return opts
}

// indexBackup puts res's --truncate backup in the recall index and marks it
// indexed; the error says the file was compacted all the same.
func (o *CompactOptions) indexBackup(ctx context.Context, file string, res *compaction.Result) error {
	if err := o.IndexBackup(ctx, res.Backup); err != nil {
		return fmt.Errorf("%s: compacted, but the backup %s holding the dropped lines is not searchable yet: %w (run 'ctxtool index %s')",
			file, res.Backup, err, res.Backup)
	}
	res.BackupIndexed = true
	return nil
}

// failedResult is the result reported for a file that failed before
// compaction.Run gave one.
func (o *CompactOptions) failedResult(file string, sum compaction.Summarizer, err error) *compaction.Result {
	return &compaction.Result{File: file, Error: err.Error(), Strategy: o.Settings.Strategy, Summarizer: sum.Name()}
}

func printCompact(o *CompactOptions, r *compaction.Result, runErr error) {
	w := o.IO.Out
	t := newTable(w).term(o.IO)
	t.row("file", displayPath(r.File))
	t.row("result", compactStatus(r, runErr))
	if r.Reason != "" {
		t.row("reason", r.Reason)
	}
	if r.Error != "" && r.Error != r.Reason {
		t.row("error", r.Error)
	}
	t.row("strategy", r.Strategy+" / "+r.Summarizer+" summarizer")
	if p := r.Preparation(); p != nil && p.FirstKept != nil {
		compactPlanRows(t, r)
	}
	compactTokenRows(t, r, runErr)
	if r.SummaryTokens > 0 {
		t.row("summary", humanInt(r.SummaryTokens)+" tokens")
	}
	if r.LLMCalls > 0 {
		t.row("llm", fmt.Sprintf("%d calls, %s input / %s output tokens", r.LLMCalls, humanInt(r.LLMInputTokens), humanInt(r.LLMOutputTokens)))
	}
	if r.Fallback != "" {
		t.row("fallback", r.Fallback)
	}
	if a := r.Audit; a != nil {
		t.row("audit", auditLine(a, o.Audit))
	}
	if r.QualityRetries > 0 {
		t.row("retries", fmt.Sprintf("%d (summariser asked again for dropped identifiers)", r.QualityRetries))
	}
	if r.Backup != "" {
		t.row("backup", r.Backup)
	}
	t.flush()
	if o.Audit && r.Audit != nil && len(r.Audit.Dropped) > 0 {
		printDroppedFacts(w, r.Audit.Dropped)
	}
	if r.DryRun && r.Summary != "" {
		fmt.Fprintf(w, "\n--- summary that would be written (%d characters) ---\n%s\n", len([]rune(r.Summary)), strings.TrimRight(r.Summary, "\n"))
	}
	fmt.Fprintln(w)
}

// compactStatus is the result row: what happened, or would with --dry-run.
func compactStatus(r *compaction.Result, runErr error) string {
	switch {
	case runErr != nil:
		return "failed"
	case r.DryRun && r.Reason == "":
		return "would compact (dry run)"
	case r.DryRun:
		return "would not compact (dry run)"
	case !r.Compacted:
		return "not compacted"
	}
	return "compacted"
}

// compactPlanRows are the rows of the plan: what is summarized and kept,
// and the trigger.
func compactPlanRows(t *table, r *compaction.Result) {
	span := "—"
	if r.SummarizedFromLine > 0 {
		span = fmt.Sprintf("lines %d–%d", r.SummarizedFromLine, r.SummarizedToLine)
	}
	t.row("summarized", fmt.Sprintf("%s messages (%s)", humanInt(r.SummarizedMessages), span))
	if r.SplitTurn {
		t.row("split turn", fmt.Sprintf("%d messages of the cut turn summarized separately", r.TurnPrefixMessages))
	}
	kept := fmt.Sprintf("%s messages from line %d (entry %s)", humanInt(r.KeptMessages), r.FirstKeptLine, r.FirstKeptEntryID)
	t.row("kept", kept)
	if r.KeepRecentTokens > 0 {
		t.row("kept size", fmt.Sprintf("~%s tokens by %s (asked %s)", humanInt(r.KeptTokensEstimated), r.Estimator, humanInt(r.KeepRecentTokens)))
	}
	if r.PreviousSummary {
		t.row("previous", "summary carried forward")
	}
	if r.Threshold <= 0 && r.Strategy != compaction.StrategySummarize {
		t.row("trigger", fmt.Sprintf("every prompt: window %s − reserve %s leaves no room (context %s)", humanInt(r.ContextWindow), humanInt(r.ContextWindow-r.Threshold), humanInt(r.ContextTokens)))
	} else {
		t.row("trigger", fmt.Sprintf("%s of %s tokens (window %s)", humanInt(r.ContextTokens), humanInt(r.Threshold), humanInt(r.ContextWindow)))
	}
}

// compactTokenRows are the sizes before and after, or the unchanged size
// when nothing was (or would be) written.
func compactTokenRows(t *table, r *compaction.Result, runErr error) {
	if planned := r.Compacted || (r.DryRun && r.Reason == "" && runErr == nil); planned {
		after := humanInt(r.TokensAfter)
		if r.SummaryTokens == 0 && r.DryRun {
			after += " (kept only)"
		}
		t.row("tokens", fmt.Sprintf("%s → %s (pi heuristic: the messages pi rebuilds)", humanInt(r.TokensBefore), after))
		t.row("next request", fmt.Sprintf("%s → %s (%s, system prompt and tools included: what estimate reports)",
			humanInt(r.ContextTokens), humanInt(r.NextRequestTokens), r.Estimator))
	} else if r.TokensBefore > 0 {
		t.row("tokens", fmt.Sprintf("%s (pi heuristic), unchanged: nothing written", humanInt(r.TokensBefore)))
		t.row("next request", fmt.Sprintf("%s (%s, %s of the window)", humanInt(r.ContextTokens), r.Estimator, human.Percent(r.Utilization)))
	}
}

// oneLineCut collapses whitespace and cuts s to n runes.
func oneLineCut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// auditLine is the audit row: the facts of the summarised region and those
// the summary dropped, by class; listed says --audit prints them below.
func auditLine(a *compaction.Audit, listed bool) string {
	line := fmt.Sprintf("%d facts in the summarised region, %d dropped", a.Facts, len(a.Dropped))
	if len(a.Dropped) > 0 {
		var parts []string
		for _, c := range facts.Classes() {
			if n := a.DroppedByClass[c]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, c))
			}
		}
		line += " (" + strings.Join(parts, ", ") + ")"
		if !listed {
			line += "; --audit lists them"
		}
	}
	return line
}

// printDroppedFacts lists the facts the summary dropped (--audit).
func printDroppedFacts(w io.Writer, dropped []facts.Fact) {
	fmt.Fprintf(w, "\n--- facts the summary dropped (%d) ---\n", len(dropped))
	at := newTable(w)
	for _, f := range dropped {
		at.row(fmt.Sprintf("line %d", f.Line), string(f.Class), oneLineCut(f.Value, 160))
	}
	at.flush()
}

// files are the sessions to compact: a directory is walked for its
// transcripts under --dry-run only, since a compaction rewrites each file
// and one mistyped directory must not rewrite a hundred sessions.
func (o *CompactOptions) files() ([]string, error) {
	if !o.DryRun {
		for _, f := range o.Files {
			if st, err := os.Stat(f); err == nil && st.IsDir() {
				return nil, exitcode.Newf(exitcode.Usage, "%s is a directory: compact rewrites sessions, so name the files (or add --dry-run to see what it would do to each session in it)", f)
			}
		}
	}
	return sessionFiles(o.IO.ErrOut, o.Files, false, false)
}
