package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/scrub"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// ScrubOptions are the inputs of `ctxtool scrub`.
type ScrubOptions struct {
	IO     *IOStreams
	Files  []string
	JSON   bool
	DryRun bool
	Idle   time.Duration
	Wait   time.Duration
}

func newScrubCmd(f *Factory, runF func(*ScrubOptions) error) *cobra.Command {
	return command(f, &ScrubOptions{IO: f.IO}, runF, runScrub, &cobra.Command{
		Use:   "scrub FILE...",
		Short: "Rewrite a pi session with its secrets redacted",
		Long: `Rewrite a pi session with every secret lint reports replaced by
[secret:<kind>:<fingerprint>] (lint's fingerprint). Nothing else changes:
the same lines, ids and parents, so pi loads the same conversation.

The rewrite is compact --truncate's: under the session lock, the original
kept as FILE.bak.<stamp> (mode 0600: it still holds the secrets — delete it
once the result is checked), and lines an agent appends meanwhile carried
over. A file without secrets is left as it is. Other agents' transcripts
are refused (ctxtool never writes them): export a pi copy and scrub that.`,
		Example: `  ctxtool lint session.jsonl                  # which secrets, where
  ctxtool scrub --dry-run session.jsonl
  ctxtool scrub session.jsonl && rm session.jsonl.bak.*`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *ScrubOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&o.DryRun, "dry-run", false, "say what would be redacted; write nothing")
	fl.DurationVar(&o.Idle, "idle", compaction.DefaultIdle, "refuse a session written to less than this long ago (an agent is active; exit 4)")
	fl.DurationVar(&o.Wait, "wait", 0, "wait this long for the session lock (default: fail at once, exit 4)")
}

// scrub reads no configuration (configFree): resolve gets no cfg.
func (o *ScrubOptions) readsNoConfig() {}

func (o *ScrubOptions) resolve(f *Factory, _ *config.Config, _ *cobra.Command, args []string) error {
	o.Files = args
	o.JSON = f.JSON
	return nil
}

func runScrub(ctx context.Context, o *ScrubOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var exit batchExit
	for _, file := range o.Files {
		res, err := scrub.Run(ctx, file, scrub.Options{DryRun: o.DryRun, Idle: o.Idle, Wait: o.Wait})
		if err != nil {
			exit.fail(o.IO.ErrOut, err)
			continue
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(o.IO.ErrOut, "warning: %s: %s\n", file, w)
		}
		if o.JSON {
			if err := writeJSONLine(o.IO.Out, res); err != nil {
				return err
			}
			continue
		}
		switch {
		case len(res.Secrets) == 0:
			fmt.Fprintf(o.IO.Out, "%s: no secrets, left as it is\n", file)
		case res.DryRun:
			fmt.Fprintf(o.IO.Out, "%s: would redact %d secrets on %d lines (dry run)\n", file, len(res.Secrets), res.Lines)
		default:
			fmt.Fprintf(o.IO.Out, "%s: redacted %d secrets on %d lines; the original, secrets included, is %s\n", file, len(res.Secrets), res.Lines, res.Backup)
		}
		for _, s := range res.Secrets {
			fmt.Fprintf(o.IO.Out, "  line %d: %s → %s\n", s.Line, s.Kind, secrets.Marker(s.Kind, s.Fingerprint))
		}
	}
	return exit.err()
}
