// Package cmd holds the cobra commands: flags, wiring and printing only. All
// logic lives in pkg/. Each command has an options struct and a run function
// that tests call directly with test streams (the gh cli pattern).
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

// Version is set at build time with -ldflags "-X github.com/ctxtool/ctxtool/cmd.Version=…".
var Version = defaultVersion

// defaultVersion is Version when no release was stamped: --version then
// takes the module version that `go install …@vX` records, if any.
const defaultVersion = "0.1.0-dev"

// Factory is what every command gets: its streams, the configuration once
// global flags are parsed, and the services commands share (services.go).
type Factory struct {
	IO *IOStreams

	configFile   string
	openclawFile string
	JSON         bool
	// Now is the clock (nil: time.Now); see Clock.
	Now func() time.Time

	cfg *config.Config
	// flags are the running command's, which the services read.
	flags *pflag.FlagSet
}

// IOStreams is re-exported so command files need one import less.
type IOStreams = iostreams.IOStreams

// Config loads (once) and returns the resolved configuration.
func (f *Factory) Config() (*config.Config, error) {
	if f.cfg != nil {
		return f.cfg, nil
	}
	c, err := config.Load(f.configFile, f.openclawFile)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	f.cfg = c
	return c, nil
}

// Every subcommand is built by a constructor newXCmd(f, runF) around a
// fresh XOptions holding f's streams (the seam of gh's commands): the tree
// is built with runF nil; the tests of flag and config resolution
// (options_test.go) pass a runF that receives the resolved options instead
// of running the command. command is the one place that wiring is written.

// options are a command's inputs; they declare the command's flags and
// resolve themselves once the command line is parsed.
type options interface {
	// flags declares the command's flags on c, bound to the options.
	flags(c *cobra.Command)
	// resolve fills the options from the configuration, the flags of c
	// and the arguments (flag > environment > file > default). Its error
	// is the user's (a value out of range, flags that contradict each
	// other): it exits 2, as a usage error.
	resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error
}

// configFree marks the options of a command that reads no configuration
// (export): a broken config file or environment must not stop it, so the
// configuration is not loaded and resolve gets nil.
type configFree interface{ readsNoConfig() }

// command finishes c, whose help text and argument check the command
// file gives: it declares the flags of opts and runs the command as the
// seam says. Running loads the configuration, resolves opts, then calls
// runF with them when it is set, else run.
func command[O options](f *Factory, opts O, runF func(O) error, run func(context.Context, O) error, c *cobra.Command) *cobra.Command {
	opts.flags(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		f.flags = c.Flags()
		var cfg *config.Config
		if _, free := any(opts).(configFree); !free {
			var err error
			if cfg, err = f.Config(); err != nil {
				return err
			}
		}
		if err := opts.resolve(f, cfg, c, args); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		if runF != nil {
			return runF(opts)
		}
		return run(c.Context(), opts)
	}
	return c
}

// NewRootCmd builds the command tree around the given streams.
func NewRootCmd(io *IOStreams) (*cobra.Command, *Factory) { return newRoot(io, "") }

// newRoot builds the root command with every subcommand, or with only the
// one named only (see commandNamed).
func newRoot(io *IOStreams, only string) (*cobra.Command, *Factory) {
	f := &Factory{IO: io}
	root := &cobra.Command{
		Use:   "ctxtool",
		Short: "See and manage how full your AI coding agent's context is",
		Long: `ctxtool works on the session files of AI coding agents — pi, OpenClaw,
Claude Code and Codex. It tells how full a session's context window is,
shrinks a session by summarizing or dropping its oldest messages, searches
everything your sessions ever said, and checks session files for damage and
leaked secrets.

It writes to pi and OpenClaw sessions by appending (a line it did not write
is never changed; compact --truncate keeps a backup), under OpenClaw's
session lock. Claude Code and Codex sessions are read, never written.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVar(&f.configFile, "config", "", "config file (default ./ctxtool.yaml, then $XDG_CONFIG_HOME/ctxtool/config.yaml)")
	pf.StringVar(&f.openclawFile, "openclaw-config", "", "read agents.defaults.compaction/contextManagement from an openclaw.json (JSON5)")
	config.Flag(pf, "stateDir")
	pf.BoolVar(&f.JSON, "json", false, "machine output: one JSON object per line — per file, or per finding (lint), hit (search) or session (sessions); field names in the README's JSON fields table")
	// Flags standing for config keys are checked against the key table
	// (ranges, allowed values) before any command runs.
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := config.CheckFlags(c.Flags()); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	for _, c := range commands {
		if only == "" || c.name == only {
			root.AddCommand(c.build(f))
		}
	}
	usageArgs(root)
	return root, f
}

// commands are the root's subcommands by name (`--help` lists them sorted
// by name). TestCommandNames checks each name against its command's.
var commands = []struct {
	name  string
	build func(f *Factory) *cobra.Command
}{
	{"agent", newAgentCmd},
	{"budget", defaultRun(newBudgetCmd)},
	{"checkpoint", defaultRun(newCheckpointCmd)},
	{"compact", defaultRun(newCompactCmd)},
	{"config", newConfigCmd},
	{"estimate", defaultRun(newEstimateCmd)},
	{"export", defaultRun(newExportCmd)},
	{"flush", defaultRun(newFlushCmd)},
	{"hook", defaultRun(newHookCmd)},
	{"index", defaultRun(newIndexCmd)},
	{"install", defaultRun(newInstallCmd)},
	{"lint", defaultRun(newLintCmd)},
	{"man", defaultRun(newManCmd)},
	{"mcp", defaultRun(newMCPCmd)},
	{"pin", defaultRun(newPinCmd)},
	{"prune", defaultRun(newPruneCmd)},
	{"report", defaultRun(newReportCmd)},
	{"restore", defaultRun(newRestoreCmd)},
	{"roll", defaultRun(newRollCmd)},
	{"scrub", defaultRun(newScrubCmd)},
	{"search", defaultRun(newSearchCmd)},
	{"sessions", defaultRun(newSessionsCmd)},
	{"sources", defaultRun(newSourcesCmd)},
	{"statusline", defaultRun(newStatuslineCmd)},
	{"unarchive", defaultRun(newUnarchiveCmd)},
	{"uninstall", defaultRun(newUninstallCmd)},
}

// defaultRun is the builder of a command with its real run function (runF nil:
// tests pass one that captures the options instead).
func defaultRun[O any](newCmd func(*Factory, func(O) error) *cobra.Command) func(*Factory) *cobra.Command {
	return func(f *Factory) *cobra.Command { return newCmd(f, nil) }
}

// commandNamed is the subcommand that args (the command line after the
// program's name) run, when its first word names one: Execute then builds
// the root with that subcommand alone. Building all of them was about 0.4
// ms of each process, most of a short command's own work (a search at 1
// GB is 15-20 ms of CPU); cobra resolves the first word to the same
// command either way, and prints the same help for it. Anything else
// ("help", a flag first, a typo, completion, man) gets the whole tree.
func commandNamed(args []string) string {
	if len(args) == 0 {
		return ""
	}
	for _, c := range commands {
		if c.name == args[0] && c.name != "man" { // (man describes the whole tree)
			return c.name
		}
	}
	return ""
}

// usageArgs makes the positional-argument checks of c and its subcommands
// return usage errors (exit 2), as flag errors do (SetFlagErrorFunc): the
// exit code comes from the error's type, not from its text.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return exitcode.New(exitcode.Usage, err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// execute runs the command line and returns its error with the exit code it
// carries. Cobra resolves the command before running anything; an error it
// returns for the root itself, untyped, can only be that resolution failing
// (an unknown command): the root has no run function, and its flag errors
// are typed by SetFlagErrorFunc. That error is a usage error.
func execute(ctx context.Context, root *cobra.Command) error {
	cmd, err := root.ExecuteContextC(ctx)
	var ee *exitcode.Error
	if err != nil && cmd == root && !errors.As(err, &ee) {
		err = exitcode.New(exitcode.Usage, err)
	}
	return err
}

// Execute runs the CLI and returns the process exit code.
func Execute() int {
	// SIGINT/SIGTERM end every command within a second, with its temp
	// files removed and its locks released, whatever it is doing: the
	// context is cancelled, and the handler exits with 128+signal.
	ctx := interruptible(context.Background())
	io := iostreams.System()
	root, _ := newRoot(io, commandNamed(os.Args[1:]))
	err := execute(ctx, root)
	if isInterrupted() {
		select {} // the interrupt handler ends the process
	}
	if err == nil {
		return exitcode.OK
	}
	var ee *exitcode.Error
	if !(errors.As(err, &ee) && ee.Err == nil) {
		fmt.Fprintf(io.ErrOut, "ctxtool: %v\n", err)
	}
	return exitcode.Code(err)
}
