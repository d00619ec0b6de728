package cmd

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
)

// ConfigExampleOptions are the inputs of `config example`.
type ConfigExampleOptions struct {
	IO *IOStreams
}

func (o *ConfigExampleOptions) flags(*cobra.Command) {}

// readsNoConfig: printing the example must work while the user's own
// config is the thing that is broken.
func (o *ConfigExampleOptions) readsNoConfig() {}

func (o *ConfigExampleOptions) resolve(*Factory, *config.Config, *cobra.Command, []string) error {
	return nil
}

func newConfigCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Show ctxtool's configuration file format",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newConfigExampleCmd(f, nil))
	return c
}

func newConfigExampleCmd(f *Factory, runF func(*ConfigExampleOptions) error) *cobra.Command {
	return command(f, &ConfigExampleOptions{IO: f.IO}, runF, runConfigExample, &cobra.Command{
		Use:   "example",
		Short: "Print an example config file with every key, its default and what it does",
		Long: `Print a complete configuration file: every key with its default value,
what it does, and the flag and environment variable that override it.
Save it as ./ctxtool.yaml or $XDG_CONFIG_HOME/ctxtool/config.yaml and edit
the keys you want to change; the rest can be deleted.`,
		Example: `  ctxtool config example > ctxtool.yaml`,
		Args:    cobra.NoArgs,
	})
}

func runConfigExample(_ context.Context, opts *ConfigExampleOptions) error {
	_, err := io.WriteString(opts.IO.Out, config.Example())
	return err
}
