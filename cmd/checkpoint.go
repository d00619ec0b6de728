package cmd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/human"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// CheckpointOptions are the inputs of `ctxtool checkpoint`.
type CheckpointOptions struct {
	IO   *IOStreams
	File string
	// Paths are --capture's files and directories (File is Paths[0]).
	Paths []string
	// AllowEmpty: finding no session file in Paths is not an error.
	AllowEmpty      bool
	SessionKey      string
	Trigger         string
	Force           bool
	Capture         bool // record incremental state only (checkpoint --capture)
	StateDir        string
	Keep            int
	DedupeThreshold float64
	// Size measures the context (--tokenizer, --model, --context-window
	// and the config), as estimate, compact and roll do.
	Size   estimate.Options
	DryRun bool
	JSON   bool
	Now    func() time.Time // nil: time.Now
	Wait   time.Duration    // state lock wait
	// KeepSecrets writes checkpoints unredacted (recall.redact: false).
	KeepSecrets bool
}

func newCheckpointCmd(f *Factory, runF func(*CheckpointOptions) error) *cobra.Command {
	return command(f, &CheckpointOptions{IO: f.IO}, runF, func(_ context.Context, o *CheckpointOptions) error { return runCheckpoint(o) }, &cobra.Command{
		Use:   "checkpoint FILE",
		Short: "Write a structured YAML checkpoint of a session's working state",
		Long: `Write a checkpoint (schema openclaw/checkpoint v1) of the session's working
state: topic, status, decisions, files and tools, thread, open items and
learnings. It is built mechanically from the transcript — no model call — and
stored in <state-dir>/context/checkpoints/<session key>/cp_NNN.yaml with a
_latest.json pointer; the newest checkpoint.keep (5) are kept.

No checkpoint is written when the context grew or shrank by less than
checkpoint.dedupeThreshold (5%) since the last one, or, with
--trigger auto-80pct, while the context is below 80% of the window. --force
writes anyway. 'ctxtool restore' renders a checkpoint as resume text.

--capture writes no checkpoint: it reads only the lines appended since the
last capture and records, in <state-dir>/context/state/<session key>/, the
tools used, the files read and modified (path arguments of successful
calls), failed tool calls, the current topic (last user message) and
decisions (a reply under 50 characters to an answer over 500). It is
OpenClaw's per-event incremental capture for a command line: run it from a
cron job or a hook. A last line without its newline (still being written)
waits for the next run; a file rewritten or truncated since the last capture
is read again from after the latest checkpoint (or from its start). Every
checkpoint captures first, then bundles that state and resets it, so what a
session recorded survives a reset to a new file under the same key.`,
		Example: `  ctxtool checkpoint session.jsonl
  ctxtool checkpoint --trigger auto-80pct --json session.jsonl   # from a hook, every turn
  ctxtool checkpoint --capture --json session.jsonl              # from cron, every minute
  ctxtool checkpoint --session-key telegram:user123 --force - < session.jsonl`,
		Args: cobra.ArbitraryArgs,
		// After the flags' checks, before the configuration is read.
		PreRunE: func(c *cobra.Command, args []string) error {
			capture := boolFlag(c.Flags(), "capture")
			if len(args) == 0 && !capture {
				return exitcode.Newf(exitcode.Usage, "checkpoint needs a session FILE (only --capture, with no path, reads every agent's sessions under ~)")
			}
			if len(args) > 1 && !capture {
				return exitcode.Newf(exitcode.Usage, "checkpoint takes one session FILE (only --capture takes several files and directories)")
			}
			return nil
		},
	})
}

func (o *CheckpointOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	allowEmptyFlag(cmd, &o.AllowEmpty)
	fl.StringVar(&o.SessionKey, "session-key", "", "session key (default: OpenClaw's sessions.json key for the file, else the session's own id from its header)")
	fl.StringVar(&o.Trigger, "trigger", checkpoint.TriggerManual, "auto-80pct|compaction|session-end|manual")
	enumCompletion(cmd, "trigger", checkpoint.Triggers())
	fl.BoolVar(&o.Force, "force", false, "write even under the 5% dedupe and the 80% gate")
	fl.DurationVar(&o.Wait, "wait", checkpoint.DefaultStateLockWait, "how long to wait for another capture of the same session to finish")
	fl.BoolVar(&o.Capture, "capture", false, "record incremental state from the lines appended since the last capture; write no checkpoint")
	configFlags(cmd, "contextWindow", "model", "estimate.tokenizer", "checkpoint.keep", "checkpoint.dedupeThreshold")
	fl.BoolVar(&o.DryRun, "dry-run", false, "report what would be written (utilization, gate, dedupe); write nothing, capture nothing")
}

func (o *CheckpointOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Now = f.Clock()
	o.Paths = args
	if len(args) > 0 {
		o.File = args[0]
	}
	o.JSON = f.JSON
	o.StateDir = cfg.StateDir(c.Flags())
	o.Keep = cfg.Int(c.Flags(), "checkpoint.keep")
	o.DedupeThreshold = cfg.Float(c.Flags(), "checkpoint.dedupeThreshold")
	o.Size = f.Measurer()
	o.KeepSecrets = keepSecrets(cfg)
	return nil
}

// checkpointGCPercent is a checkpoint's GOGC. Its pass over the branch
// reads every message once, and the garbage of that (about the messages'
// text) comes on top of the loaded session: at GOGC's default of 100 the
// heap grew to twice the session before a collection (1 GB session: 870 to
// 960 MB peak RSS, where estimate peaks at 585 to 654 MB). At 33 the heap
// stays within a third above what is live, for about 1.5 s more CPU at 1 GB.
const checkpointGCPercent = 33

func runCheckpoint(opts *CheckpointOptions) error {
	if opts.Capture {
		return runCapture(opts) // --trigger does not apply
	}
	if m := opts.Size.Method; m != "" && !estimate.ValidMethod(m) {
		return exitcode.Newf(exitcode.Usage, "--tokenizer %q: use one of %s", m, strings.Join(estimate.Methods(), ", "))
	}
	if !checkpoint.ValidTrigger(opts.Trigger) {
		return exitcode.Newf(exitcode.Usage, "--trigger %q: use auto-80pct, compaction, session-end or manual", opts.Trigger)
	}
	if opts.File == "-" && opts.SessionKey == "" {
		return exitcode.Newf(exitcode.Usage, "reading the session from stdin: name its key with --session-key")
	}
	if err := checkInput(opts.File); err != nil {
		return err
	}
	if st, err := os.Stat(opts.File); err == nil && st.IsDir() {
		files, err := sessionFiles(opts.IO.ErrOut, []string{opts.File}, false, false)
		if err != nil {
			return err
		}
		if len(files) > 1 {
			return exitcode.Newf(exitcode.Usage, "%s holds %d sessions: a checkpoint is of one session, so name its file (or use --capture, which takes every session of a directory)", opts.File, len(files))
		}
		opts.File = files[0]
	}
	defer setGCPercent(checkpointGCPercent)()
	res, err := checkpoint.Take(checkpoint.TakeOptions{
		File: opts.File, SessionKey: opts.SessionKey, Trigger: opts.Trigger, Force: opts.Force, Wait: opts.Wait,
		Store:           &checkpoint.Store{StateDir: opts.StateDir, Keep: opts.Keep, KeepSecrets: opts.KeepSecrets},
		DedupeThreshold: opts.DedupeThreshold, Size: opts.Size, DryRun: opts.DryRun,
		Now: opts.Now, Count: restoreCounter(),
	})
	if err != nil {
		return err
	}
	warnMalformed(opts.IO.ErrOut, opts.File, res.MalformedLines, "reads the session without it")
	if done, err := warnOrJSON(opts, res.Warnings, res); done {
		return err
	}
	out := opts.IO.Out
	switch {
	case res.Written:
		fmt.Fprintf(out, "%s written: %s\n", res.CheckpointID, res.Path)
	case res.DryRun:
		fmt.Fprintf(out, "%s\n", res.Reason)
	default:
		fmt.Fprintf(out, "no checkpoint written: %s\n", res.Reason)
	}
	fmt.Fprintf(out, "  %-13s %s\n", "session key", res.SessionKey)
	fmt.Fprintf(out, "  %-13s %d / %d tokens (%s)\n", "context", res.InputTokens, res.ContextWindow, human.Percent(res.Utilization))
	fmt.Fprintf(out, "  %-13s %d tokens\n", "restore text", res.ResumeTokens)
	if res.Previous != "" {
		fmt.Fprintf(out, "  %-13s %s\n", "previous", res.Previous)
	}
	if res.Gauge != "" {
		fmt.Fprintln(out, res.Gauge)
	}
	return nil
}

// runCapture is checkpoint --capture: incremental state only, for each
// session file named or found in the directories named (as roll walks
// them), so one cron line can capture every session of a machine.
func runCapture(opts *CheckpointOptions) error {
	paths := opts.Paths
	if len(paths) == 0 && opts.File != "" {
		paths = []string{opts.File}
	}
	discovered := len(paths) == 0
	paths, err := readPaths(opts.IO.ErrOut, paths)
	if err != nil {
		return err
	}
	if slices.Contains(paths, "-") {
		return exitcode.Newf(exitcode.Usage, "--capture needs a session FILE: it remembers how far it read, which stdin cannot tell")
	}
	if opts.Force {
		return exitcode.Newf(exitcode.Usage, "--capture writes no checkpoint: --force does not apply")
	}
	files, err := walkInputs(opts.IO.ErrOut, paths, walk.Options{}, opts.AllowEmpty)
	if err != nil {
		return err
	}
	if discovered {
		noticeFound(opts.IO.ErrOut, files)
	}
	if opts.SessionKey != "" && len(files) > 1 {
		return exitcode.Newf(exitcode.Usage, "--session-key names one session, but %d session files were found: give one FILE", len(files))
	}
	var exit batchExit
	for _, f := range files {
		if err := captureOne(opts, f.Path); err != nil {
			if len(files) == 1 {
				return err
			}
			exit.fail(opts.IO.ErrOut, err)
			if opts.JSON {
				if err := writeJSONLine(opts.IO.Out, map[string]string{"file": f.Path, "error": err.Error()}); err != nil {
					return err
				}
			}
		}
	}
	return exit.err()
}

// captureOne captures one session file.
func captureOne(opts *CheckpointOptions, file string) error {
	res, err := checkpoint.Capture(checkpoint.CaptureOptions{
		File: file, SessionKey: opts.SessionKey, Wait: opts.Wait,
		Store: &checkpoint.Store{StateDir: opts.StateDir, Keep: opts.Keep, KeepSecrets: opts.KeepSecrets}, Now: opts.Now,
	})
	if err != nil {
		return err
	}
	warnMalformed(opts.IO.ErrOut, file, res.MalformedLines, "captures without it")
	if done, err := warnOrJSON(opts, res.Warnings, res); done {
		return err
	}
	out := opts.IO.Out
	if !res.Captured {
		fmt.Fprintf(out, "%s: nothing captured: %s\n", displayPath(file), res.Reason)
		return nil
	}
	fmt.Fprintf(out, "%s: captured lines %d-%d (%d new): %d tool result(s) (%d failed), %d decision(s)\n",
		displayPath(file), res.FromLine, res.ToLine, res.NewLines, res.ToolResults, res.ToolErrors, res.Decisions)
	fmt.Fprintf(out, "  %-13s %s\n", "session key", res.SessionKey)
	if res.Restarted {
		fmt.Fprintf(out, "  %-13s %s\n", "note", res.Reason)
	}
	return nil
}

// warnOrJSON prints warnings to stderr and, with --json, the result line;
// done says the JSON was written and the text output is not wanted.
func warnOrJSON(opts *CheckpointOptions, warnings []string, res any) (done bool, err error) {
	for _, w := range warnings {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", w)
	}
	if opts.JSON {
		return true, writeJSONLine(opts.IO.Out, res)
	}
	return false, nil
}

// restoreCounter measures resume texts (o200k).
func restoreCounter() func(string) int { return checkpoint.DefaultCount }
