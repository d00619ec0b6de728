package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/agentlink"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// AgentWindowOptions are the inputs of `ctxtool agent window`.
type AgentWindowOptions struct {
	IO       *IOStreams
	Enabled  bool
	Window   agentlink.WindowOptions
	MaxInput int64
}

func newAgentWindowCmd(f *Factory, runF func(*AgentWindowOptions) error) *cobra.Command {
	return command(f, &AgentWindowOptions{IO: f.IO}, runF, runAgentWindow, &cobra.Command{
		Use:   "window",
		Short: "Plan the rolling window of one agent request (JSON on stdin, JSON on stdout)",
		Long: `Read the messages an agent is about to send (docs/agent-contract.md, "window")
and answer which oldest ones to leave out of this request and the note that
replaces them, so the request stays under compaction.rolling.targetUtilization
of the context window (at least compaction.rolling.minKeepMessages kept, no
tool result without its call). The agent's session keeps every message; the
shim's recall tool ('ctxtool agent recall') searches what was left out.

With agent.window off (the default) the answer is a decline and the agent
sends its messages as they are.`,
		Example: `  ctxtool agent window < request.json`,
		Args:    cobra.NoArgs,
	})
}

func (o *AgentWindowOptions) flags(c *cobra.Command) {
	configFlags(c, "compaction.rolling.targetUtilization", "compaction.rolling.minKeepMessages")
	c.Flags().Int64Var(&o.MaxInput, "max-input", agentlink.DefaultMaxInput, "refuse a request larger than this many bytes")
}

func (o *AgentWindowOptions) resolve(_ *Factory, cfg *config.Config, c *cobra.Command, _ []string) error {
	o.Enabled = cfg.Bool(nil, "agent.window")
	o.Window = agentlink.WindowOptions{TargetUtilization: cfg.Float(c.Flags(), "compaction.rolling.targetUtilization"),
		MinKeepMessages: cfg.Int(c.Flags(), "compaction.rolling.minKeepMessages"), Tool: "recall"}
	return nil
}

func runAgentWindow(_ context.Context, o *AgentWindowOptions) error {
	req, err := agentlink.DecodeWindow(o.IO.In, o.MaxInput)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	var res *agentlink.WindowResponse
	if !o.Enabled {
		res = &agentlink.WindowResponse{Version: agentlink.Version, Decline: "the rolling window is off (agent.window: false)"}
	} else if res, err = agentlink.Window(req, o.Window); err != nil {
		return exitcode.New(exitcode.Runtime, err)
	}
	return writeJSONLine(o.IO.Out, res)
}

// AgentRecallOptions are the inputs of `ctxtool agent recall`.
type AgentRecallOptions struct {
	IO         *IOStreams
	Recall     recallSettings
	MaxResults int
	MinScore   float64
}

// agentRecallRequest is the recall tool's call: the session and the query.
type agentRecallRequest struct {
	Version int               `json:"version"`
	Agent   string            `json:"agent"`
	Session agentlink.Session `json:"session"`
	Query   string            `json:"query"`
}

// agentRecallAnswer is what the tool returns to the model (Text) and the
// hits behind it.
type agentRecallAnswer struct {
	Version int          `json:"version"`
	Text    string       `json:"text"`
	Hits    []recall.Hit `json:"hits"`
}

func newAgentRecallCmd(f *Factory, runF func(*AgentRecallOptions) error) *cobra.Command {
	return command(f, &AgentRecallOptions{IO: f.IO}, runF, runAgentRecall, &cobra.Command{
		Use:   "recall",
		Short: "Search an agent's own session for the recall tool (JSON on stdin, JSON on stdout)",
		Long: `Read {version, agent, session: {file}, query} on stdin, bring the session file
into the recall index (only what was appended since the last time), search it
and answer {version, text, hits}: text is what the agent's recall tool returns
to the model (the best passages with their citations).`,
		Example: `  echo '{"version":1,"agent":"pi","session":{"file":"s.jsonl"},"query":"vault code"}' | ctxtool agent recall`,
		Args:    cobra.NoArgs,
	})
}

func (o *AgentRecallOptions) flags(c *cobra.Command) {
	configFlags(c, "recall.maxResults", "recall.minScore")
	addIndexFlag(c)
}

func (o *AgentRecallOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, _ []string) error {
	o.MaxResults = cfg.Int(c.Flags(), "recall.maxResults")
	o.MinScore = cfg.Float(c.Flags(), "recall.minScore")
	var err error
	o.Recall, err = f.Recall()
	return err
}

func runAgentRecall(ctx context.Context, o *AgentRecallOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	data, err := io.ReadAll(io.LimitReader(o.IO.In, 1<<20))
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	var req agentRecallRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return exitcode.Newf(exitcode.Usage, "the recall request on stdin is not JSON: %v", err)
	}
	switch {
	case req.Version != agentlink.Version:
		return exitcode.Newf(exitcode.Usage, "the recall request speaks contract version %d, this ctxtool %d: reinstall the shim (ctxtool install %s)", req.Version, agentlink.Version, req.Agent)
	case req.Session.File == "":
		return exitcode.Newf(exitcode.Usage, "the recall request has no session.file to search")
	case strings.TrimSpace(req.Query) == "":
		return exitcode.Newf(exitcode.Usage, "the recall request has an empty query")
	}
	ix, err := o.Recall.open()
	if err != nil {
		return err
	}
	defer ix.Close()
	var indexErr error
	if err := ix.IndexFiles(ctx, []string{req.Session.File}, func(_ recall.Stats, err error) {
		indexErr = errors.Join(indexErr, err)
	}); err != nil {
		return exitcode.New(exitcode.Runtime, err)
	}
	if indexErr != nil {
		return exitcode.New(exitcode.Runtime, fmt.Errorf("indexing %s: %w", req.Session.File, indexErr))
	}
	res, err := ix.Search(ctx, req.Query, recall.SearchOptions{MaxResults: o.MaxResults, MinScore: o.MinScore, Session: req.Session.File})
	if err != nil {
		return exitcode.New(exitcode.Runtime, err)
	}
	ans := agentRecallAnswer{Version: agentlink.Version, Hits: res.Hits}
	var b strings.Builder
	if len(res.Hits) == 0 {
		fmt.Fprintf(&b, "No earlier message of this session matches %q.", req.Query)
	}
	for i, h := range res.Hits {
		fmt.Fprintf(&b, "%d. %s", i+1, h.Citation)
		if h.Timestamp != "" {
			fmt.Fprintf(&b, " (%s)", h.Timestamp)
		}
		fmt.Fprintf(&b, "\n%s\n", h.Snippet)
	}
	ans.Text = strings.TrimSpace(b.String())
	if ans.Hits == nil {
		ans.Hits = []recall.Hit{}
	}
	return writeJSONLine(o.IO.Out, ans)
}
