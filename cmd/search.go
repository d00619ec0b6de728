package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
	// Scope: --agent, --project, --session, --since, --until (Session is
	// the flag's value as given).
	Scope          recall.Scope
	Since, Until   string
	Agent, Project string
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

A score is the share of the query a chunk holds (each word weighted by how
rare it is), whether one line holds all of it, and BM25 against the best the
query could reach, with what the user and the assistant wrote above tool
output; a little less for old chunks. It is comparable across queries: about
0.85 for every word once in a message, 0.4 for half of the query. A top-k is
always the start of a longer top list.

Search covers every indexed session unless narrowed: --agent (pi,
claude-code, codex, openclaw/<id>, or openclaw for every OpenClaw agent),
--project (a working directory and those below it; "." is the current one),
--session (one file), --since / --until (a date, a time, or an age such as
7d or 36h).

Each hit cites its JSONL line range (path#Lstart-Lend) and says which agent
and project its session belongs to. With --json every hit is one JSON object
on its own line (path, startLine, endLine, score, snippet, citation,
entryIds, timestamp, source, agent, project); no hits print nothing.`,
		Example: `  ctxtool search "advisory lock settlement"
  ctxtool search --session sess.jsonl --max-results 3 --json ORD-1234
  ctxtool search --agent openclaw --since 7d "deploy checklist"
  ctxtool search 迁移脚本`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *SearchOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	configFlags(cmd, "recall.maxResults", "recall.minScore")
	fl.StringVar(&o.Session, "session", "", "search only this session file")
	fl.StringVar(&o.Agent, "agent", "", "search only this agent's sessions (pi, claude-code, codex, openclaw/<id>, openclaw)")
	fl.StringVar(&o.Project, "project", "", "search only sessions whose working directory is this one or below it")
	fl.StringVar(&o.Since, "since", "", "only chunks from this time on (2026-03-02, an RFC 3339 time, or an age: 7d, 36h)")
	fl.StringVar(&o.Until, "until", "", "only chunks before this time (as --since)")
	addIndexFlag(cmd)
}

func (o *SearchOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Query = strings.Join(args, " ")
	o.JSON = f.JSON
	o.MaxResults = cfg.Int(c.Flags(), "recall.maxResults")
	o.MinScore = cfg.Float(c.Flags(), "recall.minScore")
	var err error
	if o.Scope, err = searchScope(o.Agent, o.Project, o.Session, o.Since, o.Until, time.Now()); err != nil {
		return err
	}
	o.Recall, err = f.Recall()
	return err
}

// searchScope resolves search's scope flags (a relative --project is taken
// from the current directory; ages count back from now).
func searchScope(agent, project, session, since, until string, now time.Time) (recall.Scope, error) {
	sc := recall.Scope{Agent: strings.TrimSuffix(agent, "/"), Session: session}
	if project != "" {
		abs, err := filepath.Abs(project)
		if err != nil {
			return sc, fmt.Errorf("--project %s: %w", project, err)
		}
		sc.Project = abs
	}
	var err error
	if sc.Since, err = parseWhen("--since", since, now); err != nil {
		return sc, err
	}
	if sc.Until, err = parseWhen("--until", until, now); err != nil {
		return sc, err
	}
	if !sc.Since.IsZero() && !sc.Until.IsZero() && !sc.Since.Before(sc.Until) {
		return sc, fmt.Errorf("--since %s is not before --until %s", since, until)
	}
	return sc, nil
}

// parseWhen reads a --since / --until value: a date (UTC), an RFC 3339
// time, or an age back from now (a Go duration, or whole days: 7d).
func parseWhen(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: give a date (2026-03-02), an RFC 3339 time (2026-03-02T15:04:05Z) or an age (7d, 36h)", flag, v)
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
		if err := indexFound(ctx, opts, loc); err != nil {
			return err
		}
	}
	ix, err := opts.Recall.open()
	if err != nil {
		return err
	}
	defer ix.Close()
	scope := opts.Scope
	if scope.Session == "" {
		scope.Session = opts.Session
	}
	res, err := ix.Search(ctx, opts.Query, recall.SearchOptions{
		MaxResults: opts.MaxResults, MinScore: opts.MinScore, Scope: scope})
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
	if n := res.StaleNote(); n != "" {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", n)
	}
	if why := ix.Emptied(); why != "" {
		fmt.Fprintf(opts.IO.ErrOut, "note: %s\n", why)
	} else if res.Empty {
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
		// (the citation names the session file and its lines)
		fmt.Fprintf(opts.IO.Out, "\n   agent %s, project %s\n", h.Agent, orNone(h.Project))
		for _, l := range strings.Split(h.Snippet, "\n") {
			fmt.Fprintf(opts.IO.Out, "   %s\n", l)
		}
	}
	return nil
}

// orNone is s, or "(none)" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// indexFound fills a missing index with the sessions every agent keeps
// under the home directory before the first search, so a bare
// `ctxtool search WORDS` works on a machine where nothing was indexed yet;
// what index prints goes to stderr, after a note saying where the index is.
func indexFound(ctx context.Context, opts *SearchOptions, loc string) error {
	fmt.Fprintf(opts.IO.ErrOut, "note: no recall index at %s yet: indexing the sessions found under ~ first ('ctxtool index PATH...' chooses others)\n", displayPath(loc))
	io := *opts.IO
	io.Out = opts.IO.ErrOut
	err := runIndex(ctx, &IndexOptions{IO: &io, Recall: opts.Recall})
	if err != nil {
		return exitcode.Newf(exitcode.Runtime, "no recall index at %s, and indexing the sessions found under ~ failed: %v (run 'ctxtool index PATH...' first, same --state-dir / --index)", loc, err)
	}
	return nil
}
