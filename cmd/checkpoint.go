package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
)

// CheckpointOptions are the inputs of `ctxtool checkpoint`.
type CheckpointOptions struct {
	IO              *IOStreams
	File            string
	SessionKey      string
	Trigger         string
	Force           bool
	StateDir        string
	Keep            int
	DedupeThreshold float64
	ContextWindow   int
	ModelWindows    map[string]int
	JSON            bool
	Now             func() time.Time // nil: time.Now
}

func init() { register(newCheckpointCmd) }

func newCheckpointCmd(f *Factory) *cobra.Command {
	opts := &CheckpointOptions{IO: f.IO}
	cmd := &cobra.Command{
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
writes anyway. 'ctxtool restore' renders a checkpoint as resume text.`,
		Example: `  ctxtool checkpoint session.jsonl
  ctxtool checkpoint --trigger auto-80pct --json session.jsonl   # from a hook, every turn
  ctxtool checkpoint --session-key telegram:user123 --force - < session.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			opts.File = args[0]
			opts.JSON = f.JSON
			opts.StateDir = cfg.StateDir(c.Flags())
			opts.Keep = cfg.Int(c.Flags(), "keep", "checkpoint.keep")
			opts.DedupeThreshold = cfg.Float(c.Flags(), "dedupe-threshold", "checkpoint.dedupeThreshold")
			opts.ContextWindow = cfg.Int(c.Flags(), "context-window", "contextWindow")
			opts.ModelWindows = modelWindows(cfg)
			return runCheckpoint(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.SessionKey, "session-key", "", "session key (default: derived from the file name, or OpenClaw's sessions.json)")
	fl.StringVar(&opts.Trigger, "trigger", checkpoint.TriggerManual, "auto-80pct|compaction|session-end|manual")
	fl.BoolVar(&opts.Force, "force", false, "write even under the 5% dedupe and the 80% gate")
	fl.Int("context-window", 0, "context window in tokens (default: from the session's model)")
	fl.Int("keep", checkpoint.DefaultKeep, "checkpoints kept per session key (config checkpoint.keep)")
	fl.Float64("dedupe-threshold", checkpoint.DefaultDedupeThreshold, "skip when input tokens changed by less than this fraction (config checkpoint.dedupeThreshold)")
	return cmd
}

func runCheckpoint(opts *CheckpointOptions) error {
	if !checkpoint.ValidTrigger(opts.Trigger) {
		return exitcode.Newf(exitcode.Usage, "--trigger %q: use auto-80pct, compaction, session-end or manual", opts.Trigger)
	}
	if opts.File == "-" && opts.SessionKey == "" {
		return exitcode.Newf(exitcode.Usage, "reading the session from stdin: name its key with --session-key")
	}
	res, err := checkpoint.Take(checkpoint.TakeOptions{
		File: opts.File, SessionKey: opts.SessionKey, Trigger: opts.Trigger, Force: opts.Force,
		Store:           &checkpoint.Store{StateDir: opts.StateDir, Keep: opts.Keep},
		DedupeThreshold: opts.DedupeThreshold, ContextWindow: opts.ContextWindow,
		WindowFor: func(model string) int {
			w, _ := resolveWindow(model, 0, opts.ModelWindows)
			return w
		},
		Now: opts.Now, Count: restoreCounter(),
	})
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", w)
	}
	if opts.JSON {
		return writeJSONLine(opts.IO.Out, res)
	}
	out := opts.IO.Out
	if res.Written {
		fmt.Fprintf(out, "%s written: %s\n", res.CheckpointID, res.Path)
	} else {
		fmt.Fprintf(out, "no checkpoint written: %s\n", res.Reason)
	}
	fmt.Fprintf(out, "  %-13s %s\n", "session key", res.SessionKey)
	fmt.Fprintf(out, "  %-13s %d / %d tokens (%.1f%%)\n", "context", res.InputTokens, res.ContextWindow, res.Utilization*100)
	fmt.Fprintf(out, "  %-13s %d tokens\n", "restore text", res.Tokens)
	if res.Previous != "" {
		fmt.Fprintf(out, "  %-13s %s\n", "previous", res.Previous)
	}
	if res.Gauge != "" {
		fmt.Fprintln(out, res.Gauge)
	}
	return nil
}

// restoreCounter measures resume texts (o200k).
func restoreCounter() func(string) int { return checkpoint.DefaultCount }
