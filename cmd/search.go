package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// SearchOptions are the inputs of `ctxtool search`.
type SearchOptions struct {
	IO         *IOStreams
	Query      string
	MaxResults int
	MinScore   float64
	Session    string
	JSON       bool
	Recall     recallSettings
}

func newSearchCmd(f *Factory, runF func(*SearchOptions) error) *cobra.Command {
	return command(f, &SearchOptions{IO: f.IO}, runF, runSearch, &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search the recall index of session transcripts",
		Long: `Search everything 'ctxtool index' has indexed — including messages that
compactions and rolls removed from the active context — the way OpenClaw's
memory_search does: BM25 keyword search scored 0..1 (plus 0.7 × embedding
similarity when llm.embeddingModel is set), hits below --min-score dropped.
Queries with Chinese, Japanese or Korean text match substrings.

Each hit cites its JSONL line range (path#Lstart-Lend). With --json every hit
is one JSON object on its own line (path, startLine, endLine, score, snippet,
citation, entryIds, timestamp, source); no hits print nothing.`,
		Example: `  ctxtool search "advisory lock settlement"
  ctxtool search --session sess.jsonl --max-results 3 --json ORD-1234
  ctxtool search 迁移脚本`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *SearchOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	configFlags(cmd, "recall.maxResults", "recall.minScore")
	fl.StringVar(&o.Session, "session", "", "search only this session file")
	addIndexFlag(cmd)
}

func (o *SearchOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Query = strings.Join(args, " ")
	o.JSON = f.JSON
	o.MaxResults = cfg.Int(c.Flags(), "recall.maxResults")
	o.MinScore = cfg.Float(c.Flags(), "recall.minScore")
	var err error
	o.Recall, err = resolveRecall(cfg, c.Flags())
	return err
}

func runSearch(ctx context.Context, opts *SearchOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.MaxResults <= 0 {
		return exitcode.Newf(exitcode.Usage, "--max-results %d: must be at least 1", opts.MaxResults)
	}
	if opts.MinScore < 0 || opts.MinScore > 1 {
		return exitcode.Newf(exitcode.Usage, "--min-score %v: must be between 0 and 1", opts.MinScore)
	}
	loc, err := opts.Recall.location()
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	if _, err := os.Stat(loc); !recall.IsURL(loc) && errors.Is(err, os.ErrNotExist) {
		return exitcode.Newf(exitcode.Runtime, "no recall index at %s: run 'ctxtool index PATH...' first (same --state-dir / --index)", loc)
	}
	ix, err := opts.Recall.open()
	if err != nil {
		return err
	}
	defer ix.Close()
	res, err := ix.Search(ctx, opts.Query, recall.SearchOptions{
		MaxResults: opts.MaxResults, MinScore: opts.MinScore, Session: opts.Session})
	if err != nil {
		return exitcode.New(exitcode.Runtime, err)
	}
	if !opts.Recall.KeepSecrets {
		// The index is redacted when built; this also covers rows an older
		// index or another machine's ctxtool wrote.
		for i := range res.Hits {
			res.Hits[i].Snippet = secrets.Redact(res.Hits[i].Snippet)
		}
	}
	if res.Fallback != "" {
		fmt.Fprintf(opts.IO.ErrOut, "note: %s\n", res.Fallback)
	}
	if res.Empty {
		fmt.Fprintf(opts.IO.ErrOut, "note: the index at %s holds no sessions (an index made by an earlier ctxtool is emptied when opened): run 'ctxtool index PATH...' to fill it\n", ix.Path())
	}
	if opts.JSON {
		for _, h := range res.Hits {
			if err := writeJSONLine(opts.IO.Out, h); err != nil {
				return err
			}
		}
		return nil
	}
	if len(res.Hits) == 0 {
		fmt.Fprintf(opts.IO.Out, "no hits for %q with score ≥ %.2f\n", opts.Query, opts.MinScore)
		return nil
	}
	for i, h := range res.Hits {
		if i > 0 {
			fmt.Fprintln(opts.IO.Out)
		}
		fmt.Fprintf(opts.IO.Out, "%d. %s  score %.3f", i+1, h.Citation, h.Score)
		if h.Timestamp != "" {
			fmt.Fprintf(opts.IO.Out, "  %s", h.Timestamp)
		}
		fmt.Fprintln(opts.IO.Out)
		for _, l := range strings.Split(h.Snippet, "\n") {
			fmt.Fprintf(opts.IO.Out, "   %s\n", l)
		}
	}
	return nil
}
