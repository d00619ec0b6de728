package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/agentlink"
	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/pins"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// AgentCompactOptions are the inputs of `ctxtool agent compact`.
type AgentCompactOptions struct {
	IO *IOStreams
	// SummarySource is agent.summarySource: augment (the agent's own
	// summary stands; ctxtool only adds what it dropped), ctxtool, or auto
	// (augment when the request names the agent's model).
	SummarySource string
	// Compact is the compaction service, the settings and summarizer set
	// `compact` uses (config file and environment).
	Compact  Compaction
	MaxInput int64
	// StateDir holds the pins and checkpoints augment adds.
	StateDir string
}

// newAgentCmd is `ctxtool agent`: the commands an agent's shim runs.
func newAgentCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "agent",
		Short: "Commands the agent shims run inside pi and OpenClaw (see 'ctxtool install')",
		Long: `Commands an agent runs through the shim 'ctxtool install' wrote. They speak
the versioned JSON contract of docs/agent-contract.md on stdin and stdout.`,
		Args: cobra.NoArgs,
	}
	c.AddCommand(newAgentCompactCmd(f, nil))
	c.AddCommand(newAgentWindowCmd(f, nil), newAgentRecallCmd(f, nil), newAgentAugmentCmd(f, nil))
	return c
}

func newAgentCompactCmd(f *Factory, runF func(*AgentCompactOptions) error) *cobra.Command {
	return command(f, &AgentCompactOptions{IO: f.IO}, runF, runAgentCompact, &cobra.Command{
		Use:   "compact",
		Short: "Answer an agent's compaction request (JSON on stdin) with ctxtool's summary (JSON on stdout)",
		Long: fmt.Sprintf(`Read one compaction request (contract version %d, docs/agent-contract.md) on
stdin: the agent's preparation — the messages to summarize, the split turn's
prefix, the previous summary, the file operations, the agent's settings, the
reason and the session's identity. Summarize it with ctxtool's configured
strategy and summarizer (compaction.mode, compaction.summarizer: the offline
extractive one unless an LLM is configured), keeping the agent's cut, and
write one JSON answer on stdout: {version, summary, firstKeptEntryId,
tokensBefore, details: {readFiles, modifiedFiles, ctxtool: {strategy,
summarizer, audit}}} or {version, decline}.

Exit status: 0 an answer (or a decline) on stdout; 2 the request is unusable
(not JSON, another contract version, too large); 1 the summarizer failed.
Nothing is written on stdout unless the exit status is 0.`, agentlink.Version),
		Example: `  ctxtool agent compact < request.json`,
		Args:    cobra.NoArgs,
	})
}

func (o *AgentCompactOptions) flags(c *cobra.Command) {
	configFlags(c, "compaction.mode", "compaction.summarizer", "llm.model")
	c.Flags().Int64Var(&o.MaxInput, "max-input", agentlink.DefaultMaxInput, "refuse a request larger than this many bytes")
}

func (o *AgentCompactOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.SummarySource = cfg.String(nil, "agent.summarySource")
	o.StateDir = cfg.StateDir(c.Flags())
	o.Compact = f.Compaction()
	// No session to measure: the window planned for is the override.
	o.Compact.Settings.ContextWindow = f.Window().ContextWindow
	if err := o.Compact.validate(); err != nil {
		return err
	}
	if o.MaxInput <= 0 {
		return fmt.Errorf("--max-input %d: must be positive", o.MaxInput)
	}
	return nil
}

func runAgentCompact(ctx context.Context, o *AgentCompactOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := agentlink.Decode(o.IO.In, o.MaxInput)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	augment := o.SummarySource == "augment"
	if o.SummarySource == "auto" {
		// auto: the agent's summary, augmented, when the agent has a model
		// to write one (the shim names it); an older shim names none.
		augment = req.AgentModel != ""
	}
	if augment {
		return writeJSONLine(o.IO.Out, agentlink.Response{Version: agentlink.Version, Augment: true,
			Decline: "agent.summarySource is augment: the agent's own summary stands, ctxtool adds what it dropped (ctxtool agent augment)"})
	}
	sum, err := o.Compact.pick(o.IO.ErrOut)
	if err != nil {
		return err
	}
	res, err := agentlink.Compact(ctx, req, agentlink.Options{Settings: o.Compact.Settings, Summarizer: sum})
	if err != nil {
		var in *agentlink.InputError
		if errors.As(err, &in) {
			return exitcode.New(exitcode.Usage, err)
		}
		return exitcode.New(exitcode.Runtime, err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.IO.Out, "%s\n", data)
	return err
}

func newAgentAugmentCmd(f *Factory, runF func(*AgentCompactOptions) error) *cobra.Command {
	return command(f, &AgentCompactOptions{IO: f.IO}, runF, runAgentAugment, &cobra.Command{
		Use:   "augment",
		Short: "Audit the agent's own summary (JSON on stdin) and answer what it dropped (JSON on stdout)",
		Long: `Read a compaction request (docs/agent-contract.md) whose agentSummary is the
summary the agent's own model wrote, audit it against the facts of the
summarised messages and the previous summary, as ctxtool audits its own
summaries, and answer {version, additions, audit}: additions lists the facts
the summary dropped (empty when it kept them all), for the shim to add to the
agent's next request.`,
		Example: `  ctxtool agent augment < request.json`,
		Args:    cobra.NoArgs,
	})
}

func runAgentAugment(ctx context.Context, o *AgentCompactOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := agentlink.Decode(o.IO.In, o.MaxInput)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	summary := req.AgentSummary
	if summary == "" && req.Session.File != "" {
		if summary, err = lastCompactionSummary(req.Session.File); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
	}
	res, err := agentlink.Augment(ctx, req, summary, agentlink.Options{Settings: o.Compact.Settings}, augmentContext(o, req))
	if err != nil {
		var in *agentlink.InputError
		if errors.As(err, &in) {
			return exitcode.New(exitcode.Usage, err)
		}
		return exitcode.New(exitcode.Runtime, err)
	}
	return writeJSONLine(o.IO.Out, res)
}

// augmentContext is what an augmentation adds besides the dropped facts:
// the pins of the session's project and the resume text of its latest
// checkpoint (the shim takes one just before the compaction). Either
// missing is no error: a line on stderr says why.
func augmentContext(o *AgentCompactOptions, req *agentlink.Request) agentlink.AugmentContext {
	var more agentlink.AugmentContext
	if req.Session.Cwd != "" {
		ps, err := pins.Load(o.StateDir, req.Session.Cwd)
		if err != nil {
			fmt.Fprintf(o.IO.ErrOut, "ctxtool agent augment: pins: %v\n", err)
		}
		for _, p := range ps {
			more.Pins = append(more.Pins, p.Text)
		}
	}
	key := req.Session.Key
	if key == "" && req.Session.File != "" {
		key = checkpoint.KeyFromFile(req.Session.File)
	}
	if key != "" {
		cp, _, err := (&checkpoint.Store{StateDir: o.StateDir}).Latest(key)
		switch {
		case err == nil:
			more.Resume = checkpoint.Render(cp, checkpoint.RenderOptions{})
		case !errors.Is(err, checkpoint.ErrNoCheckpoint):
			fmt.Fprintf(o.IO.ErrOut, "ctxtool agent augment: checkpoint: %v\n", err)
		}
	}
	return more
}

// lastCompactionSummary is the summary of the compaction in force of a
// session (a file or "store.sqlite#key"): the agent's own, for augment.
func lastCompactionSummary(path string) (string, error) {
	s, err := transcript.Load(path)
	if err != nil {
		return "", err
	}
	defer s.Close()
	c := s.Context()
	if c.Compaction == nil {
		return "", fmt.Errorf("%s: no compaction to augment", path)
	}
	raw, err := s.Raw(c.Compaction)
	if err != nil {
		return "", err
	}
	var e struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return "", fmt.Errorf("%s line %d: %w", path, c.Compaction.Line, err)
	}
	return e.Summary, nil
}
