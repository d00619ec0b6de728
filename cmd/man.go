package cmd

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/ctxtool/ctxtool/pkg/config"
)

// ManOptions are the inputs of `man`.
type ManOptions struct {
	IO  *IOStreams
	Dir string
	// root is the command tree the pages describe.
	root *cobra.Command
}

func (o *ManOptions) flags(c *cobra.Command) {
	c.Flags().StringVar(&o.Dir, "dir", "", "write the pages into this directory (created if missing)")
	_ = c.MarkFlagRequired("dir")
}

// readsNoConfig: the pages describe the commands, not the user's settings.
func (o *ManOptions) readsNoConfig() {}

func (o *ManOptions) resolve(_ *Factory, _ *config.Config, c *cobra.Command, _ []string) error {
	o.root = c.Root()
	return nil
}

func newManCmd(f *Factory, runF func(*ManOptions) error) *cobra.Command {
	return command(f, &ManOptions{IO: f.IO}, runF, runMan, &cobra.Command{
		Use:   "man --dir DIR",
		Short: "Write man pages for ctxtool and each of its commands",
		Long: `Write one man page (section 1) for ctxtool and one for each command into
DIR, from the same text as --help. Install them where man looks, e.g.:

  ctxtool man --dir ~/.local/share/man/man1 && man ctxtool-compact`,
		Example: `  ctxtool man --dir /tmp/ctxtool-man`,
		Args:    cobra.NoArgs,
	})
}

func runMan(_ context.Context, opts *ManOptions) error {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return fmt.Errorf("man: %w (choose a directory you can write)", err)
	}
	header := &doc.GenManHeader{Title: "CTXTOOL", Section: "1", Source: "ctxtool " + Version, Manual: "ctxtool manual"}
	opts.root.DisableAutoGenTag = true
	if err := doc.GenManTree(opts.root, header, opts.Dir); err != nil {
		return fmt.Errorf("man: writing pages into %s: %w", opts.Dir, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "man pages written to %s\n", opts.Dir)
	return nil
}
