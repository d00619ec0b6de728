package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/pins"
)

// PinOptions are the inputs of `ctxtool pin`.
type PinOptions struct {
	IO       *IOStreams
	JSON     bool
	Text     string
	List     bool
	Remove   int
	Dir      string
	StateDir string
}

func newPinCmd(f *Factory, runF func(*PinOptions) error) *cobra.Command {
	return command(f, &PinOptions{IO: f.IO}, runF, runPin, &cobra.Command{
		Use:   `pin "TEXT" | --list | --rm N`,
		Short: "Pin a fact for this project: it is handed back to the agent after every compaction",
		Long: `Pin a short fact (a rule, a decision, an identifier) for the project of the
working directory (its git root, else the directory). After every Claude Code
or Codex compaction the SessionStart hook ('ctxtool install claude-code|codex')
puts the project's pins back into the agent's context, whatever its summary
kept. Pins live in <state dir>/pins/<project>-<hash>.txt, one a line; a
project may also check in .ctxtool/pins.md, whose "- " lines are pins too.`,
		Example: `  ctxtool pin "never push to main; open a PR"
  ctxtool pin --list
  ctxtool pin --rm 1`,
		Args: cobra.MaximumNArgs(1),
	})
}

func (o *PinOptions) flags(c *cobra.Command) {
	c.Flags().BoolVar(&o.List, "list", false, "list the project's pins")
	c.Flags().IntVar(&o.Remove, "rm", 0, "remove pin `N` (see --list)")
	c.Flags().StringVar(&o.Dir, "dir", "", "the project directory (default: the working directory)")
}

func (o *PinOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.JSON = f.JSON
	o.StateDir = cfg.StateDir(c.Flags())
	if len(args) == 1 {
		o.Text = args[0]
	}
	n := 0
	for _, b := range []bool{o.Text != "", o.List, c.Flags().Changed("rm")} {
		if b {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf(`give one of: "TEXT" to pin, --list, --rm N`)
	}
	if o.Dir == "" {
		var err error
		if o.Dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	return nil
}

func runPin(_ context.Context, o *PinOptions) error {
	switch {
	case o.List:
		ps, err := pins.Load(o.StateDir, o.Dir)
		if err != nil {
			return err
		}
		if o.JSON {
			for _, p := range ps {
				data, _ := json.Marshal(p)
				fmt.Fprintf(o.IO.Out, "%s\n", data)
			}
			return nil
		}
		if len(ps) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no pins for %s (%s)\n", pins.Root(o.Dir), pins.File(o.StateDir, o.Dir))
			return nil
		}
		for _, p := range ps {
			n := fmt.Sprint(p.N)
			if p.N == 0 {
				n = "-" // checked in: edit the file
			}
			fmt.Fprintf(o.IO.Out, "%3s  %s\n", n, p.Text)
		}
		return nil
	case o.Text != "":
		n, err := pins.Add(o.StateDir, o.Dir, o.Text)
		if err != nil {
			return err
		}
		return pinSay(o, "pinned", n, strings.Join(strings.Fields(o.Text), " "))
	default:
		text, err := pins.Remove(o.StateDir, o.Dir, o.Remove)
		if err != nil {
			return err
		}
		return pinSay(o, "removed", o.Remove, text)
	}
}

func pinSay(o *PinOptions, what string, n int, text string) error {
	if o.JSON {
		data, _ := json.Marshal(map[string]any{what: n, "text": text, "file": pins.File(o.StateDir, o.Dir)})
		fmt.Fprintf(o.IO.Out, "%s\n", data)
		return nil
	}
	fmt.Fprintf(o.IO.Out, "%s %d: %s\n", what, n, text)
	return nil
}
