package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/hooks"
)

// StatuslineOptions are the inputs of `ctxtool statusline`.
type StatuslineOptions struct {
	IO       *IOStreams
	JSON     bool
	Agent    string
	StateDir string
	Home     string
	Roots    []string
}

func (o *StatuslineOptions) readsNoConfig() {}

func newStatuslineCmd(f *Factory, runF func(*StatuslineOptions) error) *cobra.Command {
	return command(f, &StatuslineOptions{IO: f.IO}, runF, runStatusline, &cobra.Command{
		Use:   "statusline",
		Short: "Print the context used against the point where the agent compacts by itself (Claude Code's statusLine)",
		Long: `Read Claude Code's statusline JSON on stdin and print one line: the context
used (current_usage, else the transcript's last usage) against the point where
the agent will compact by itself — the session's own evidence when it has
compacted before (compact_boundary preTokens), else Claude Code's rule
(window − 20k output reserve − 13k buffer). For Codex (--agent codex) the
rollout's model_auto_compact_token_limit, else 90% of model_context_window.

It reads only the transcript lines added since the last render. Errors print
"ctx ?" and go to the hook log; the exit status is 0.`,
		Example: `  ctxtool statusline < statusline.json`,
		Args:    cobra.NoArgs,
	})
}

func (o *StatuslineOptions) flags(c *cobra.Command) {
	c.Flags().StringVar(&o.Agent, "agent", hooks.ClaudeCode, "claude-code|codex")
}

func (o *StatuslineOptions) resolve(f *Factory, _ *config.Config, c *cobra.Command, _ []string) error {
	if o.Agent != hooks.ClaudeCode && o.Agent != hooks.Codex {
		return fmt.Errorf("--agent %q: want claude-code or codex", o.Agent)
	}
	o.JSON = f.JSON
	o.StateDir = hookStateDir(f, c)
	o.Home, _ = os.UserHomeDir()
	o.Roots = hookRoots()
	return nil
}

func runStatusline(_ context.Context, o *StatuslineOptions) error {
	h := &hooks.Handler{StateDir: o.StateDir, Home: o.Home, ExtraRoots: o.Roots}
	in, err := hooks.ParseStatus(o.IO.In)
	var g *hooks.Gauge
	if err == nil {
		g, err = h.Status(in, o.Agent)
	}
	if err != nil {
		hookLogger(o.StateDir, time.Now)(o.Agent, "statusline", "-", err.Error())
		fmt.Fprintln(o.IO.Out, "ctx ?")
		return nil
	}
	if o.JSON {
		data, _ := json.Marshal(g)
		fmt.Fprintf(o.IO.Out, "%s\n", data)
		return nil
	}
	fmt.Fprintln(o.IO.Out, g.String())
	return nil
}
