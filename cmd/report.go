package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/report"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// ReportOptions are the inputs of `ctxtool report`.
type ReportOptions struct {
	IO     *IOStreams
	File   string
	Output string
	Top    int
	Size   estimate.Options
}

func newReportCmd(f *Factory, runF func(*ReportOptions) error) *cobra.Command {
	return command(f, &ReportOptions{IO: f.IO}, runF, func(_ context.Context, o *ReportOptions) error { return runReport(o) }, &cobra.Command{
		Use:   "report SESSION -o report.html",
		Short: "Draw a picture of a session as one HTML file",
		Long: `Write one self-contained HTML page about a session: what fills its context
now (system prompt and tools, user, assistant, tool output by tool, images,
summary), how the context grew request by request with the compactions
marked, and the biggest messages with their line numbers. The page loads
nothing from the network: open it in any browser, attach it to an issue.

Its numbers are estimate's: 'ctxtool estimate --per-message --json' gives
the same ones.`,
		Example: `  ctxtool report session.jsonl -o report.html
  ctxtool report --tokenizer heuristic --top 20 session.jsonl -o report.html`,
		Args: cobra.ExactArgs(1),
	})
}

func (o *ReportOptions) flags(cmd *cobra.Command) {
	configFlags(cmd, "estimate.tokenizer", "model", "contextWindow")
	fl := cmd.Flags()
	fl.StringVarP(&o.Output, "output", "o", "", "the HTML file to write (required)")
	fl.IntVar(&o.Top, "top", 10, "how many of the biggest messages to list")
}

func (o *ReportOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.File = args[0]
	o.Size = f.Measurer()
	if o.Output == "" {
		return fmt.Errorf("report needs -o FILE.html: where to write the page")
	}
	if o.Top < 1 {
		return fmt.Errorf("--top %d: must be at least 1", o.Top)
	}
	return nil
}

func runReport(o *ReportOptions) error {
	if !estimate.ValidMethod(o.Size.Method) {
		return exitcode.Newf(exitcode.Usage, "--tokenizer %q: use one of %s", o.Size.Method, strings.Join(estimate.Methods(), ", "))
	}
	if err := checkInput(o.File); err != nil {
		return err
	}
	r, err := report.Build(o.File, o.Size, o.Top)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := r.WriteHTML(&b); err != nil {
		return err
	}
	if err := safefile.WriteFile(o.Output, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "%s: %s tokens, %d parts, %d requests, %d compactions → %s\n",
		displayPath(o.File), humanInt(r.Tokens), len(r.Parts), len(r.Requests), len(r.Compactions), displayPath(o.Output))
	return nil
}
