package compaction

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// ExecSummarizer is `--summarizer exec:COMMAND`: an external command
// (OpenClaw's compaction.provider, pi's session_before_compact extension)
// that receives the whole preparation as JSON on stdin (ExecInput) and
// writes the summary on stdout. It replaces the strategy's summariser
// calls: the command gets everything once and owns the summary; ctxtool
// still plans, appends pi's file lists, audits and writes.
type ExecSummarizer struct {
	Command string
	// Timeout bounds the command (0: DefaultExecTimeout).
	Timeout time.Duration
}

// DefaultExecTimeout bounds an exec summariser (llm.deadline's default).
const DefaultExecTimeout = 10 * time.Minute

func init() {
	registerSource("exec:", func(command string, env Env) (Summarizer, error) {
		return &ExecSummarizer{Command: strings.TrimSpace(command), Timeout: env.Deadline}, nil
	})
}

// Name implements Summarizer.
func (e *ExecSummarizer) Name() string { return "exec" }

// Capabilities implements Summarizer: the command takes the whole
// preparation at once.
func (e *ExecSummarizer) Capabilities() Capabilities {
	return Capabilities{Whole: e.SummarizePreparation}
}

// Summarize implements Summarizer for a single request (a strategy calling
// it piecewise): the request's transcript and previous summary go in
// ExecInput's preparation, without entries.
func (e *ExecSummarizer) Summarize(ctx context.Context, r *Request) (string, error) {
	in := &ExecInput{Type: "summarize-request", Kind: string(r.Kind), Layout: string(r.Layout), Transcript: r.Transcript,
		CustomInstructions: r.Instructions, BudgetTokens: r.BudgetTokens}
	in.Preparation.PreviousSummary = r.PreviousSummary
	return e.run(ctx, in)
}

// ExecInput is what an exec summariser reads on stdin. Its preparation
// has the field names of pi's CompactionPreparation (docs/design/pi-baseline.md).
type ExecInput struct {
	// Type is "compaction" for a whole preparation.
	Type        string `json:"type"`
	SessionFile string `json:"sessionFile,omitempty"`
	Strategy    string `json:"strategy,omitempty"`
	Kind        string `json:"kind,omitempty"`
	Layout      string `json:"layout,omitempty"`
	Preparation struct {
		FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
		TokensBefore     int    `json:"tokensBefore"`
		IsSplitTurn      bool   `json:"isSplitTurn"`
		// MessagesToSummarize and TurnPrefixMessages are the messages as
		// stored in the session (the `message` object of message entries,
		// the whole entry for custom_message and branch_summary).
		MessagesToSummarize []json.RawMessage `json:"messagesToSummarize"`
		TurnPrefixMessages  []json.RawMessage `json:"turnPrefixMessages"`
		PreviousSummary     string            `json:"previousSummary,omitempty"`
		FileOps             struct {
			Read    []string `json:"read"`
			Written []string `json:"written"`
			Edited  []string `json:"edited"`
		} `json:"fileOps"`
		Settings struct {
			ReserveTokens    int `json:"reserveTokens"`
			KeepRecentTokens int `json:"keepRecentTokens"`
		} `json:"settings"`
	} `json:"preparation"`
	// Entries locate each message: entry id and 1-based line, in the order
	// of messagesToSummarize then turnPrefixMessages.
	Entries []ExecEntry `json:"entries,omitempty"`
	// Transcript is the same messages serialised as ctxtool sends them to
	// a model (labelled paragraphs, tool output previewed).
	Transcript         string `json:"transcript,omitempty"`
	CustomInstructions string `json:"customInstructions,omitempty"`
	// BudgetTokens is the summary budget ctxtool's own summariser keeps.
	BudgetTokens int `json:"budgetTokens,omitempty"`
}

// ExecEntry locates one message of ExecInput.
type ExecEntry struct {
	ID   string `json:"id"`
	Line int    `json:"line"`
}

// SummarizePreparation runs the command on a whole preparation.
func (e *ExecSummarizer) SummarizePreparation(ctx context.Context, s *transcript.Session, p *Preparation, set Settings, msgs, prefix []*Msg, ops *FileOps) (string, error) {
	in := &ExecInput{Type: "compaction", SessionFile: s.File, Strategy: set.Strategy,
		Transcript:         serialize(append(append([]*Msg{}, msgs...), prefix...), headPreview(2000), 4000),
		CustomInstructions: set.CustomInstructions, BudgetTokens: set.SummaryBudget()}
	pp := &in.Preparation
	if p.FirstKept != nil {
		pp.FirstKeptEntryID = p.FirstKept.ID()
	}
	pp.TokensBefore, pp.IsSplitTurn, pp.PreviousSummary = p.UsageBefore, p.SplitTurn, p.PreviousSummary
	var err error
	if pp.MessagesToSummarize, err = rawMessages(s, msgs, &in.Entries); err != nil {
		return "", err
	}
	if pp.TurnPrefixMessages, err = rawMessages(s, prefix, &in.Entries); err != nil {
		return "", err
	}
	pp.FileOps.Read, pp.FileOps.Written, pp.FileOps.Edited = listOf(ops.Read), listOf(ops.Written), listOf(ops.Edited)
	pp.Settings.ReserveTokens, pp.Settings.KeepRecentTokens = set.ReserveTokens, set.KeepRecentTokens
	return e.run(ctx, in)
}

func (e *ExecSummarizer) run(ctx context.Context, in *ExecInput) (string, error) {
	payload, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	out, err := runCommand(ctx, e.Command, payload, timeout, map[string]string{"CTXTOOL_SESSION": in.SessionFile})
	if err != nil {
		return "", fmt.Errorf("--summarizer exec: %w", err)
	}
	text := strings.TrimSpace(string(out))
	if text == "" {
		return "", fmt.Errorf("--summarizer exec: %q wrote no summary on stdout", e.Command)
	}
	return text, nil
}

// rawMessages returns the stored message objects of msgs and records where
// each came from.
func rawMessages(s *transcript.Session, msgs []*Msg, where *[]ExecEntry) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		raw, err := s.Raw(m.E)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", s.File, m.E.Line, err)
		}
		if m.E.Type() == "message" {
			var entry struct {
				Message json.RawMessage `json:"message"`
			}
			if json.Unmarshal(raw, &entry) == nil && len(entry.Message) > 0 {
				raw = entry.Message
			}
		}
		out = append(out, json.RawMessage(append([]byte(nil), raw...)))
		*where = append(*where, ExecEntry{ID: m.E.ID(), Line: m.E.Line})
	}
	return out, nil
}

// listOf is a set's members, sorted; [] (not null) when empty.
func listOf(set map[string]bool) []string {
	return append([]string{}, slices.Sorted(maps.Keys(set))...)
}
