package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/prune"
	"github.com/ctxtool/ctxtool/pkg/sources"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// PruneOptions are the inputs of `ctxtool prune`.
type PruneOptions struct {
	IO    *IOStreams
	Paths []string
	// Home is where the default stores are looked for (no PATHS).
	Home   string
	JSON   bool
	Apply  bool
	Policy prune.Policy
	// Now is the clock of the policies (nil: time.Now).
	Now func() time.Time
}

func newPruneCmd(f *Factory, runF func(*PruneOptions) error) *cobra.Command {
	return command(f, &PruneOptions{IO: f.IO}, runF, runPrune, &cobra.Command{
		Use:   "prune [PATH...]",
		Short: "Archive old sessions (zstd, verified, reversible) so the stores don't fill the disk",
		Long: `Compress old sessions into *.jsonl.zst archives that every ctxtool command
still reads (estimate, lint, index, search, checkpoint, export), so nothing
leaves recall; 'ctxtool unarchive' restores the original bytes exactly.

It is a dry run unless --apply: a table per agent and project (sessions,
bytes, oldest, newest, archived, bytes reclaimed) and what it would do to each
session, or --json. With no PATH it prunes every store it finds under the home
directory: pi (~/.pi/agent/sessions), OpenClaw (~/.openclaw/agents/*/sessions;
the SQLite store is read-only and reported as not prunable), Claude Code
(~/.claude/projects) and Codex (~/.codex/sessions; its own .zst rollouts are
left as they are).

Policies: --older-than archives sessions last written longer ago; --keep-last
keeps the newest N of each project whatever their age; --max-total archives
further sessions, oldest first, while all sessions take more than that. Live
sessions are never touched: written within --idle, named current in an
OpenClaw sessions.json, or locked (skipped, exit code 4).

Each archive is written to a temp file, synced, decompressed and compared
with the original's sha256 before it replaces the original; a session
appended to meanwhile is left alone. A kill -9 at any moment leaves every
session readable (the original, or the verified archive); the next run puts
back whatever a killed run had moved aside. Each directory that holds
archives gets a manifest, ctxtool-archives.json (path, sha256, size, session).

--delete (with --apply) removes the archives made more than --delete-after
ago, printing the sha256 of each before removing it. Nothing else is ever
deleted.`,
		Example: `  ctxtool prune
  ctxtool prune --older-than 14d --keep-last 5 ~/.pi/agent/sessions
  ctxtool prune --apply --max-total 20GB
  ctxtool prune --apply --delete --delete-after 180d --json`,
		Args: cobra.ArbitraryArgs,
	})
}

func (o *PruneOptions) flags(cmd *cobra.Command) {
	configFlags(cmd, "prune.olderThan", "prune.keepLast", "prune.maxTotal", "prune.idle", "prune.archiveDir", "prune.dedupe", "prune.deleteAfter")
	fl := cmd.Flags()
	fl.BoolVar(&o.Apply, "apply", false, "archive (and with --delete, delete) for real; without it prune only reports")
	fl.BoolVar(&o.Policy.Delete, "delete", false, "remove archives made more than --delete-after ago (their sha256 is printed first)")
}

func (o *PruneOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Now = f.Clock()
	fl := c.Flags()
	o.Paths = args
	o.JSON = f.JSON
	p := &o.Policy
	var err error
	if p.OlderThan, err = prune.ParseAge(cfg.String(fl, "prune.olderThan")); err != nil {
		return fmt.Errorf("--older-than: %w", err)
	}
	if p.MaxTotal, err = prune.ParseBytes(cfg.String(fl, "prune.maxTotal")); err != nil {
		return fmt.Errorf("--max-total: %w", err)
	}
	if p.DeleteAfter, err = prune.ParseAge(cfg.String(fl, "prune.deleteAfter")); err != nil {
		return fmt.Errorf("--delete-after: %w", err)
	}
	p.KeepLast = cfg.Int(fl, "prune.keepLast")
	p.Idle = cfg.Duration(fl, "prune.idle")
	if p.Idle < 0 {
		return fmt.Errorf("--idle %v: must be ≥ 0", p.Idle)
	}
	p.ArchiveDir = cfg.String(fl, "prune.archiveDir")
	p.Dedupe = cfg.Bool(fl, "prune.dedupe")
	if p.Delete && p.DeleteAfter <= 0 {
		return fmt.Errorf("--delete needs --delete-after > 0: archives are deleted only once they are that old")
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	return nil
}

func runPrune(ctx context.Context, opts *PruneOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = interruptible(ctx)
	paths := opts.Paths
	if len(paths) == 0 {
		paths = sources.Paths(sources.Find(opts.Home))
		if len(paths) == 0 {
			return exitcode.New(exitcode.Usage, fmt.Errorf("no session store under %s (looked for %s): name the directories to prune", opts.Home, sources.Looked))
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	var recovered []string
	if opts.Apply {
		// A killed run may have moved originals aside: put them back first,
		// so the walk sees them (and reuses their verified archives).
		r, err := prune.Recover(append(append([]string{}, paths...), opts.Policy.ArchiveDir))
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %v\n", err)
		}
		recovered = r
	}
	// Housekeeping, not a gate: a store with nothing in it has nothing
	// to prune, which is not an error.
	files, err := walkInputs(opts.IO.ErrOut, paths, walk.Options{}, true)
	if err != nil {
		return err
	}
	rep := prune.Plan(files, opts.Policy, now())
	rep.Recovered = recovered
	if opts.Apply {
		prog := opts.IO.NewProgress("pruning", "sessions", rep.Totals.Archive+rep.Totals.Delete)
		err = prune.Apply(ctx, rep, opts.Policy, prune.ApplyOptions{
			Archive:  prune.ArchiveOptions{Idle: opts.Policy.Idle, Now: opts.Now},
			Progress: func(done, total int) { prog.Update(done, "") },
			BeforeDelete: func(s *prune.Session) {
				prog.Clear()
				fmt.Fprintf(opts.IO.ErrOut, "deleting %s (sha256 %s, verified)\n", s.File, s.SHA256)
			},
		})
		prog.Clear()
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "ctxtool: manifest: %v\n", err)
		}
	}
	if opts.JSON {
		data, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "%s\n", data)
	} else {
		printPruneTable(opts.IO, rep, now())
	}
	switch {
	case rep.Totals.Errors > 0:
		return exitcode.Silent(exitcode.Runtime)
	case rep.Totals.Locked > 0:
		return exitcode.Silent(exitcode.Locked)
	}
	return nil
}

// printPruneTable prints the groups, then every session prune acts on or
// skips (kept sessions are only counted), then the totals.
func printPruneTable(streams *IOStreams, rep *prune.Report, now time.Time) {
	out := streams.Out
	for _, r := range rep.Recovered {
		fmt.Fprintf(out, "recovered %s (put back after an interrupted run)\n", displayPath(r))
	}
	verb := "ARCHIVED"
	if rep.DryRun {
		verb = "ARCHIVE"
	}
	t := newTable(out).term(streams)
	t.row("AGENT", "PROJECT", "SESSIONS", "BYTES", "OLDEST", "NEWEST", verb, "SKIPPED", "RECLAIMED")
	for _, g := range rep.Groups {
		t.row(string(g.Agent), displayPath(g.Project), humanInt(g.Sessions), prune.FormatBytes(g.Bytes),
			prune.FormatAge(now.Sub(g.Oldest)), prune.FormatAge(now.Sub(g.Newest)),
			humanInt(g.Archive), humanInt(g.Skipped), reclaimed(g.Reclaimed, rep.DryRun))
	}
	t.flush()
	fmt.Fprintln(out)
	t = newTable(out).term(streams)
	t.row("FILE", "AGENT", "BYTES", "AGE", "ACTION", "RECLAIMED", "WHY")
	for _, s := range rep.Sessions {
		if s.Action == prune.Keep && (len(rep.Sessions) > 20 || s.Reason == "") {
			continue
		}
		action := string(s.Action)
		if rep.DryRun && (s.Action == prune.ToArchive || s.Action == prune.ToDelete) {
			action = "would " + action
		}
		why := s.Reason
		if s.Action == prune.Deleted || s.Action == prune.ToDelete {
			why += " sha256 " + s.SHA256
		}
		t.row(displayPath(s.File), string(s.Agent), prune.FormatBytes(s.Bytes), prune.FormatAge(now.Sub(s.ModTime)),
			action, reclaimed(s.Reclaimed, s.Estimated), why)
	}
	t.flush()
	tot := rep.Totals
	archived, deleted := "archived", "deleted"
	if rep.DryRun {
		archived, deleted = "would archive", "would delete"
	}
	fmt.Fprintf(out, "\n%d sessions, %s: %s %d, %s %d, skipped %d, errors %d; reclaimed %s",
		tot.Sessions, prune.FormatBytes(tot.Bytes), archived, tot.Archive, deleted, tot.Delete, tot.Skipped, tot.Errors, reclaimed(tot.Reclaimed, rep.DryRun))
	if tot.Deduped > 0 {
		fmt.Fprintf(out, " (images: %s replaced by references, %s added to the image store)", prune.FormatBytes(tot.Deduped), prune.FormatBytes(tot.BlobsAdded))
	}
	if rep.DryRun {
		fmt.Fprint(out, " (dry run: --apply to do it)")
	}
	fmt.Fprintln(out)
}

func reclaimed(n int64, estimated bool) string {
	if n == 0 {
		return "-"
	}
	if estimated {
		return "≈" + prune.FormatBytes(n)
	}
	return prune.FormatBytes(n)
}
