package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/prune"
	"github.com/ctxtool/ctxtool/pkg/sources"
)

// SourcesOptions are the inputs of `ctxtool sources`.
type SourcesOptions struct {
	IO *IOStreams
	// Home is the directory the stores are looked for under.
	Home string
	JSON bool
	// Now is the clock of the ages shown (nil: time.Now).
	Now func() time.Time
}

func newSourcesCmd(f *Factory, runF func(*SourcesOptions) error) *cobra.Command {
	return command(f, &SourcesOptions{IO: f.IO}, runF, runSources, &cobra.Command{
		Use:   "sources",
		Short: "List every agent's session store under the home directory, and what ctxtool cannot read",
		Long: `List the session stores of every agent under the home directory: pi
(~/.pi/agent/sessions), OpenClaw (~/.openclaw/agents/*/sessions and each
agent's SQLite store), Claude Code (~/.claude/projects), Codex
(~/.codex/sessions, plain and .zst rollouts, and its thread_history
databases), and Gemini CLI (~/.gemini/tmp) and opencode
(~/.local/share/opencode) when present.

For each store: the sessions ctxtool reads, their size, the newest, and
what ctxtool cannot read and why (and what the walk skipped: backups,
locks, …). Nothing is read but directory entries and each session's first
bytes. --json prints one object per store.`,
		Example: `  ctxtool sources
  ctxtool sources --home /backup/laptop --json`,
		Args: cobra.NoArgs,
	})
}

func (o *SourcesOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.Home, "home", "", "look under this directory instead of $HOME")
}

// sources reads no configuration (configFree).
func (o *SourcesOptions) readsNoConfig() {}

func (o *SourcesOptions) resolve(f *Factory, _ *config.Config, _ *cobra.Command, _ []string) error {
	o.JSON = f.JSON
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	return nil
}

func runSources(_ context.Context, opts *SourcesOptions) error {
	stores := sources.Inventory(opts.Home)
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		for _, s := range stores {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}
	if len(stores) == 0 {
		fmt.Fprintf(opts.IO.Out, "no agent session store under %s\n", opts.Home)
		return nil
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	t := newTable(opts.IO.Out).fit(opts.IO.Width())
	t.row("AGENT", "STORE", "KIND", "SESSIONS", "BYTES", "NEWEST", "CANNOT READ")
	var notes []string
	for _, s := range stores {
		newest := "-"
		if !s.Newest.IsZero() {
			newest = prune.FormatAge(now.Sub(s.Newest))
		}
		unread := "-"
		if n := unreadableFiles(s); n > 0 {
			unread = humanInt(n)
		}
		t.row(string(s.Agent), displayPath(s.Path), s.Kind, humanInt(s.Sessions), prune.FormatBytes(s.Bytes), newest, unread)
		for _, u := range s.Unreadable {
			notes = append(notes, fmt.Sprintf("cannot read %s (%d file(s), %s): %s", displayPath(u.Path), u.Files, prune.FormatBytes(u.Bytes), u.Why))
		}
		if len(s.Skipped) > 0 {
			var parts []string
			for why, n := range s.Skipped {
				parts = append(parts, fmt.Sprintf("%d %s", n, why))
			}
			sort.Strings(parts)
			notes = append(notes, fmt.Sprintf("skipped in %s: %s", displayPath(s.Path), strings.Join(parts, ", ")))
		}
	}
	t.flush()
	if len(notes) > 0 {
		fmt.Fprintln(opts.IO.Out)
		for _, n := range notes {
			fmt.Fprintln(opts.IO.Out, n)
		}
	}
	return nil
}

func unreadableFiles(s sources.StoreSummary) int {
	n := 0
	for _, u := range s.Unreadable {
		n += max(u.Files, 1)
	}
	return n
}
