package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/prune"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// UnarchiveOptions are the inputs of `ctxtool unarchive`.
type UnarchiveOptions struct {
	IO    *IOStreams
	Paths []string
	To    string
	JSON  bool
}

func newUnarchiveCmd(f *Factory, runF func(*UnarchiveOptions) error) *cobra.Command {
	return command(f, &UnarchiveOptions{IO: f.IO}, runF, runUnarchive, &cobra.Command{
		Use:   "unarchive ARCHIVE|DIR...",
		Short: "Restore sessions archived by prune, byte for byte",
		Long: `Restore each archive 'ctxtool prune' wrote (NAME.jsonl.zst; a directory: every
one below it) to the path it was archived from, with its bytes (sha256
checked), mode and mtime, then remove the archive. It never replaces a file:
a path that holds the same bytes already just loses the archive, one that
holds others is refused (restore elsewhere with --to). Other .zst files
(Codex's own rollouts, OpenClaw's cold archives) are not touched.`,
		Example: `  ctxtool unarchive ~/.pi/agent/sessions/--home-dev-acme--/2026-01-03T10-00-00-000Z_8f2e.jsonl.zst
  ctxtool unarchive ~/.pi/agent/sessions`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *UnarchiveOptions) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.To, "to", "", "restore the (single) archive to this path instead of its original one")
}

func (o *UnarchiveOptions) resolve(f *Factory, _ *config.Config, _ *cobra.Command, args []string) error {
	o.Paths, o.JSON = args, f.JSON
	if o.To != "" && len(args) != 1 {
		return fmt.Errorf("--to names one file: give one archive")
	}
	return nil
}

// unarchived is one line of unarchive --json.
type unarchived struct {
	Archive  string `json:"archive"`
	Restored string `json:"restored,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Error    string `json:"error,omitempty"`
}

func runUnarchive(ctx context.Context, opts *UnarchiveOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = interruptible(ctx)
	archives, err := archivesIn(opts.Paths)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	var be batchExit
	dirs := map[string]bool{}
	for _, a := range archives {
		info, err := prune.Unarchive(ctx, a, opts.To)
		r := unarchived{Archive: a}
		if err != nil {
			r.Error = err.Error()
			be.fail(opts.IO.ErrOut, err)
		} else {
			r.Restored, r.SHA256, r.Size = info.Original, info.SHA256, info.Size
			if opts.To != "" {
				r.Restored = opts.To
			}
			dirs[filepath.Dir(a)] = true
		}
		if opts.JSON {
			data, _ := json.Marshal(r)
			fmt.Fprintf(opts.IO.Out, "%s\n", data)
		} else if err == nil {
			fmt.Fprintf(opts.IO.Out, "restored %s (%s, sha256 %s)\n", displayPath(r.Restored), prune.FormatBytes(r.Size), r.SHA256)
		}
	}
	for d := range dirs {
		if err := prune.WriteManifest(d); err != nil {
			be.fail(opts.IO.ErrOut, err)
		}
	}
	return be.err()
}

// archivesIn expands the arguments: a file is taken as given, a directory
// gives every ctxtool archive below it (hidden directories skipped).
func archivesIn(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (give an archive NAME.jsonl.zst or a directory)", p, safefile.PathCause(err))
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		filepath.WalkDir(p, func(f string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && f != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && strings.HasSuffix(f, prune.Suffix) {
				if _, ok, _ := prune.ReadInfo(f); ok {
					out = append(out, f)
				}
			}
			return nil
		})
	}
	return out, nil
}
