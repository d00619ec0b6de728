package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/human"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// RestoreOptions are the inputs of `ctxtool restore`.
type RestoreOptions struct {
	IO         *IOStreams
	Target     string // FILE or SESSION_KEY
	SessionKey string
	Format     string
	Append     bool
	List       bool
	ID         string
	Wait       time.Duration
	StateDir   string
	JSON       bool
	Now        func() time.Time // clock of the appended entry; nil: time.Now
	Ctx        context.Context
	// KeepSecrets prints and appends checkpoints unredacted
	// (recall.redact: false).
	KeepSecrets bool
}

func newRestoreCmd(f *Factory, runF func(*RestoreOptions) error) *cobra.Command {
	return command(f, &RestoreOptions{IO: f.IO}, runF, func(_ context.Context, o *RestoreOptions) error { return runRestore(o) }, &cobra.Command{
		Use:   "restore FILE|SESSION_KEY",
		Short: "Render a checkpoint as the post-compaction resume text",
		Long: `Render the latest checkpoint of a session (or --id cp_NNN) as the lean resume
text an agent reads after a compaction (about 600-700 tokens, never more than
800). A corrupt latest checkpoint falls back to the previous one, with a
warning.

The argument is a session file (its key: OpenClaw's sessions.json key, else
the session's own id; or --session-key) or a session key. --append adds the
text to the session file as a custom_message entry (customType
ctxtool.checkpoint) under OpenClaw's session lock, so the agent sees it on
its next turn. It refuses (exit 1) a checkpoint taken from another session,
and appends nothing when the session's last entry is that text already.`,
		Example: `  ctxtool restore session.jsonl
  ctxtool restore --append session.jsonl          # right after a compaction
  ctxtool restore --list telegram:user123
  ctxtool restore --id cp_002 --format yaml telegram:user123`,
		Args: cobra.ExactArgs(1),
	})
}

func (o *RestoreOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.Format, "format", "text", "text|yaml|json")
	enumCompletion(cmd, "format", restoreFormats)
	fl.BoolVar(&o.Append, "append", false, "append the resume text to the session FILE as a custom_message entry")
	fl.BoolVar(&o.List, "list", false, "list the session's checkpoints")
	fl.StringVar(&o.ID, "id", "", "checkpoint to render (cp_NNN; default the latest)")
	fl.StringVar(&o.SessionKey, "session-key", "", "session key when FILE's own key is not the right one (the checkpoint must still come from FILE's session)")
	fl.DurationVar(&o.Wait, "wait", 0, "with --append: wait this long for the session lock")
}

func (o *RestoreOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Now = f.Clock()
	o.Target = args[0]
	o.JSON = f.JSON
	o.StateDir = cfg.StateDir(c.Flags())
	o.Ctx = c.Context()
	o.KeepSecrets = keepSecrets(cfg)
	return nil
}

// restoreFormats are the values of restore --format.
var restoreFormats = []string{"text", "yaml", "json"}

func runRestore(opts *RestoreOptions) error {
	t, err := opts.target()
	if err != nil {
		return err
	}
	store := &checkpoint.Store{StateDir: opts.StateDir, KeepSecrets: opts.KeepSecrets}
	if opts.List {
		return printCheckpoints(opts, store, t)
	}
	ctx := opts.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	rep, cp, err := store.Restore(ctx, checkpoint.RestoreOptions{Name: opts.Target, Target: t, ID: opts.ID,
		Append: opts.Append, Wait: opts.Wait, Now: opts.Now, Count: restoreCounter()})
	for _, w := range rep.Warnings {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", w)
	}
	if err != nil {
		return err
	}
	if opts.Append {
		return printAppended(opts, rep)
	}
	if !opts.KeepSecrets {
		secrets.RedactFields(cp) // a checkpoint written before redaction
	}
	return printRestore(opts, cp, rep)
}

// target checks the flags and resolves the argument to the session.
func (o *RestoreOptions) target() (checkpoint.Target, error) {
	if !slices.Contains(restoreFormats, o.Format) {
		return checkpoint.Target{}, exitcode.Newf(exitcode.Usage, "--format %q: use text, yaml or json", o.Format)
	}
	if o.ID != "" && !checkpoint.ValidID(o.ID) {
		return checkpoint.Target{}, exitcode.Newf(exitcode.Usage, "--id %q: give a checkpoint id like cp_003 (see --list)", o.ID)
	}
	t, err := checkpoint.ResolveTarget(o.Target, o.SessionKey)
	if err != nil {
		return t, errMissing(o.Target)
	}
	if o.Append && t.File == "" {
		return t, exitcode.Newf(exitcode.Usage, "--append needs a session FILE; %q is not a file", o.Target)
	}
	if o.Append && o.List {
		return t, exitcode.Newf(exitcode.Usage, "--append and --list do not go together")
	}
	return t, nil
}

// printAppended says what restore --append appended, or why nothing.
func printAppended(opts *RestoreOptions, rep *checkpoint.RestoreReport) error {
	warnMalformed(opts.IO.ErrOut, rep.File, rep.MalformedLines, "appends after it")
	if opts.JSON {
		return writeJSONLine(opts.IO.Out, rep)
	}
	if !rep.Appended {
		fmt.Fprintf(opts.IO.Out, "nothing appended to %s: %s\n", rep.File, rep.Reason)
		return nil
	}
	id := rep.EntryID
	if id == "" {
		id = "(v1, no id)"
	}
	fmt.Fprintf(opts.IO.Out, "appended %s resume text (%d tokens) to %s: custom_message %s on line %d\n",
		rep.CheckpointID, rep.ResumeTokens, rep.File, id, rep.Line)
	return nil
}

// printRestore prints the checkpoint: the report with --json, else the
// resume text or the checkpoint in --format.
func printRestore(opts *RestoreOptions, cp *checkpoint.Checkpoint, rep *checkpoint.RestoreReport) error {
	if opts.JSON {
		if opts.Format != "text" {
			rep.Checkpoint = cp
		}
		return writeJSONLine(opts.IO.Out, rep)
	}
	switch opts.Format {
	case "yaml":
		data, err := checkpoint.Marshal(cp)
		if err != nil {
			return err
		}
		_, err = opts.IO.Out.Write(data)
		return err
	case "json":
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(cp)
	}
	_, err := fmt.Fprint(opts.IO.Out, rep.Text)
	return err
}

func printCheckpoints(opts *RestoreOptions, store *checkpoint.Store, t checkpoint.Target) error {
	rows, err := store.Listings(t.Key)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSONLine(opts.IO.Out, map[string]any{"file": t.File, "sessionKey": t.Key, "dir": store.Dir(t.Key), "checkpoints": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no checkpoints for session key %q in %s\n", t.Key, store.Dir(t.Key))
		return nil
	}
	tw := newTable(opts.IO.Out).term(opts.IO)
	tw.row("ID", "CREATED", "TRIGGER", "TOKENS", "UTIL", "PREVIOUS", "STATUS")
	for _, r := range rows {
		status := "ok"
		if r.Error != "" {
			status = "corrupt"
		}
		if r.Latest {
			status += " (latest)"
		}
		prev := r.Previous
		if prev == "" {
			prev = "-"
		}
		tw.row(r.ID, r.CreatedAt, r.Trigger, humanInt(r.InputTokens), human.Percent(r.Utilization), prev, status)
	}
	tw.flush()
	return nil
}
