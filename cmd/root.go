// Package cmd holds the cobra commands: flags, wiring and printing only. All
// logic lives in pkg/. Each command has an options struct and a run function
// that tests call directly with test streams (the gh cli pattern).
package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Version is set at build time with -ldflags "-X github.com/ctxtool/ctxtool/cmd.Version=…".
var Version = "0.1.0-dev"

// Factory is what every command gets: its streams and a way to load the
// configuration once global flags are parsed.
type Factory struct {
	IO *IOStreams

	configFile   string
	openclawFile string
	JSON         bool

	cfg *config.Config
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

// runE returns the RunE of a command: it loads the config, resolve fills
// opts from it, the flags of c and the arguments, and then runF, when set
// (tests of flag and config resolution), receives them instead of run.
func runE[O any](f *Factory, opts O, runF func(O) error,
	resolve func(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error,
	run func(context.Context, O) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		if err := resolve(f, cfg, c, args); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return run(c.Context(), opts)
	}
}

// commandBuilders are the subcommands; each command file adds itself in init().
var commandBuilders []func(*Factory) *cobra.Command

// register adds a command builder; the tree is built without runF (which
// tests pass to see the resolved options instead of running).
func register[O any](newCmd func(*Factory, func(O) error) *cobra.Command) {
	commandBuilders = append(commandBuilders, func(f *Factory) *cobra.Command { return newCmd(f, nil) })
}

// NewRootCmd builds the command tree around the given streams.
func NewRootCmd(io *IOStreams) (*cobra.Command, *Factory) {
	f := &Factory{IO: io}
	root := &cobra.Command{
		Use:   "ctxtool",
		Short: "Manage the context window of pi and OpenClaw agent sessions",
		Long: `ctxtool measures, compacts, rolls and checkpoints the JSONL session
transcripts of the pi coding agent and OpenClaw. It only appends to session
files (never rewrites a line it did not write) and respects OpenClaw's session
lock.`,
		Version:       Version,
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
	pf.BoolVar(&f.JSON, "json", false, "machine output: one JSON object per input file, one per line")
	// Flags standing for config keys are checked against the key table
	// (ranges, allowed values) before any command runs.
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := config.CheckFlags(c.Flags()); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		return nil
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%v (see '%s --help')", err, c.CommandPath()))
	})
	for _, b := range commandBuilders {
		c := b(f)
		usageArgs(c)
		root.AddCommand(c)
	}
	return root, f
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
	ctx := safefile.Context(context.Background())
	io := iostreams.System()
	root, _ := NewRootCmd(io)
	err := execute(ctx, root)
	if safefile.Interrupted() {
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
