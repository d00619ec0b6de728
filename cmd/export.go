package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// ExportOptions are the inputs of `ctxtool export`.
type ExportOptions struct {
	IO     *IOStreams
	File   string
	To     string
	Output string
	Force  bool
	JSON   bool
}

func newExportCmd(f *Factory, runF func(*ExportOptions) error) *cobra.Command {
	return command(f, &ExportOptions{IO: f.IO}, runF, func(_ context.Context, o *ExportOptions) error { return runExport(o) }, &cobra.Command{
		Use:   "export FILE --to pi",
		Short: "Write any supported transcript as a pi v3 session",
		Long: `Write a Claude Code transcript, a Codex rollout, a *.jsonl.zst file or one
session of an OpenClaw SQLite store (store.sqlite#<session key>) as a pi v3
session file: the conversation the agent would send, with its usage records,
in pi's format. pi loads it, and every ctxtool command — compact, roll,
restore --append included — works on the copy. The original is only read.

Without -o the session goes to standard output. A pi file is copied
unchanged (it is a pi session already).`,
		Example: `  ctxtool export ~/.claude/projects/-home-me-app/3f2c….jsonl --to pi -o app.jsonl
  ctxtool export ~/.codex/sessions/2026/03/18/rollout-….jsonl --to pi > rollout.jsonl
  ctxtool export ~/.openclaw/agents/main/agent/openclaw-agent.sqlite#agent:main:main --to pi -o main.jsonl`,
		Args: cobra.ExactArgs(1),
	})
}

func (o *ExportOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.To, "to", "pi", "output format (pi: a pi v3 session JSONL)")
	fl.StringVarP(&o.Output, "output", "o", "", `write to this file ("-" or none: standard output)`)
	fl.BoolVar(&o.Force, "force", false, "replace an existing -o file")
}

// export reads no configuration (configFree): resolve gets no cfg.
func (o *ExportOptions) readsNoConfig() {}

func (o *ExportOptions) resolve(f *Factory, _ *config.Config, _ *cobra.Command, args []string) error {
	o.File = args[0]
	o.JSON = f.JSON
	return nil
}

func runExport(opts *ExportOptions) error {
	if opts.To != "pi" {
		return exitcode.Newf(exitcode.Usage, "--to %q: the only output format is pi", opts.To)
	}
	if err := checkInput(opts.File); err != nil {
		return err
	}
	if err := checkExportable(opts.File); err != nil {
		return exitcode.New(exitcode.Runtime, err)
	}
	// "-" is standard output, as it is standard input for FILE: a file
	// named "-" would be a surprise no one asked for.
	if opts.Output == "" || opts.Output == "-" {
		if opts.JSON {
			return exitcode.Newf(exitcode.Usage, "--json needs -o FILE (the session itself goes to standard output)")
		}
		if _, err := formats.Export(opts.File, opts.IO.Out); err != nil {
			return exitcode.New(exitcode.Runtime, err)
		}
		return nil
	}
	res, err := formats.ExportFile(opts.File, opts.Output, opts.Force)
	if err != nil {
		return exitcode.New(exitcode.Runtime, err)
	}
	if opts.JSON {
		return writeJSONLine(opts.IO.Out, res)
	}
	fmt.Fprintf(opts.IO.ErrOut, "%s (%s) → %s: pi v3 session, %d lines, %.1f MB\n", res.File, res.Format, res.Output, res.Lines, float64(res.Bytes)/1e6)
	return nil
}

// checkExportable refuses what is not a session: pi JSONL is exported as it
// is, so it must be one (a header, entries) — an empty, binary or
// header-less file "exported" unchanged would be a broken pi session.
func checkExportable(file string) error {
	if file == "-" {
		return nil
	}
	sn, err := formats.SniffFile(file)
	if err != nil || sn.Format != formats.Pi {
		return nil // the reader reports it, or converts it
	}
	s, err := transcript.Load(file)
	if err != nil {
		return err
	}
	defer s.Close()
	switch {
	case s.Header == nil && len(s.Entries) == 0 && len(s.Malformed) == 0:
		return fmt.Errorf("%s: empty file, not a session — nothing to export", file)
	case s.Header == nil && len(s.Entries) == 0:
		return fmt.Errorf("%s: not a session: no line of it is a JSON object (line %d of %d is not); ctxtool reads %s",
			file, s.Malformed[0].Line, s.Lines, formats.Readable)
	case s.Header == nil:
		return fmt.Errorf("%s: no pi session header (a {\"type\":\"session\"} line): pi would not load it as a session — check that it is a whole session file", file)
	}
	return nil
}
