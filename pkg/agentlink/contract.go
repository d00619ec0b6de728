// Package agentlink is the contract between a running agent and ctxtool:
// a thin shim in the agent's language (pi's extension, OpenClaw's plugin,
// embedded here and written out by InstallPi / InstallOpenClaw) hands the
// agent's compaction preparation to `ctxtool agent compact` as JSON on
// stdin and returns ctxtool's answer as the agent's own compaction (and,
// inside the agent's loop, asks `agent window`, `agent recall` and
// `agent augment`). All the logic — the strategy, the
// summariser, the fact audit — stays in Go, in pkg/compaction; this
// package turns the agent's messages into a session pkg/compaction reads,
// keeps the agent's cut, and shapes the answer. docs/agent-contract.md is
// the contract's reference.
//
// It must not print: the command in cmd/agent.go owns the streams and the
// exit codes.
package agentlink

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/compaction"
)

// Version is the contract's version. A request names the version its shim
// speaks; an answer carries the version it was written in. A change that
// an older shim or binary would misread gets a new number.
const Version = 1

// DefaultMaxInput bounds a request: the preparation is at most a context
// window of messages (images included as base64), far below this.
const DefaultMaxInput = 64 << 20

// Request is what a shim sends: the agent's preparation and who it is.
type Request struct {
	// Version is the contract version the shim speaks (1).
	Version int `json:"version"`
	// Agent is "pi"; AgentVersion the agent's own version, when known.
	Agent        string `json:"agent"`
	AgentVersion string `json:"agentVersion,omitempty"`
	// Reason is why the agent compacts: manual, threshold or overflow.
	Reason  string  `json:"reason,omitempty"`
	Session Session `json:"session"`
	// Preparation is pi's CompactionPreparation, its Sets as arrays.
	Preparation Preparation `json:"preparation"`
	// KeptMessages are the messages the agent keeps after the cut (from
	// the first kept entry on); optional. The fact audit counts a fact as
	// kept when it is still in them.
	KeptMessages []json.RawMessage `json:"keptMessages,omitempty"`
	// PreviousDetails is the `details` of the compaction in force, so the
	// file lists stay cumulative across compactions ctxtool wrote (pi
	// ignores the details of compactions an extension wrote).
	PreviousDetails    json.RawMessage `json:"previousDetails,omitempty"`
	CustomInstructions string          `json:"customInstructions,omitempty"`
	// SummarizationInstructions are OpenClaw's (its compaction provider's
	// params.summarizationInstructions): how identifiers must survive.
	SummarizationInstructions *SummarizationInstructions `json:"summarizationInstructions,omitempty"`
	// AgentSummary is the agent's own summary of the preparation's
	// messages, for `ctxtool agent augment`.
	AgentSummary string `json:"agentSummary,omitempty"`
	// AgentModel is the model the agent summarises with when ctxtool
	// declines (pi: "provider/id"); empty when the shim does not say. With
	// agent.summarySource auto (the default), a request that names one is
	// answered in augment mode.
	AgentModel string `json:"agentModel,omitempty"`
}

// SummarizationInstructions are OpenClaw's identifier rules for a summary.
type SummarizationInstructions struct {
	IdentifierPolicy       string `json:"identifierPolicy,omitempty"`
	IdentifierInstructions string `json:"identifierInstructions,omitempty"`
}

// Agents are the agents the contract knows. OpenClaw's compaction provider
// hands over only the messages to summarise and the previous summary
// (preparation.messagesToSummarize, preparation.previousSummary); OpenClaw
// keeps its own cut, so an answer to it has no firstKeptEntryId.
var Agents = []string{"pi", "openclaw"}

// Session identifies the agent's session; ctxtool only reads it for
// reports (the preparation carries every message it summarises).
type Session struct {
	File string `json:"file,omitempty"`
	ID   string `json:"id,omitempty"`
	Cwd  string `json:"cwd,omitempty"`
	// Key is OpenClaw's session key (agent:main:main), when known.
	Key string `json:"key,omitempty"`
}

// Preparation mirrors pi 1.6's CompactionPreparation.
type Preparation struct {
	FirstKeptEntryID    string            `json:"firstKeptEntryId"`
	MessagesToSummarize []json.RawMessage `json:"messagesToSummarize"`
	TurnPrefixMessages  []json.RawMessage `json:"turnPrefixMessages"`
	IsSplitTurn         bool              `json:"isSplitTurn"`
	TokensBefore        int               `json:"tokensBefore"`
	PreviousSummary     string            `json:"previousSummary,omitempty"`
	FileOps             FileOps           `json:"fileOps"`
	Settings            AgentSettings     `json:"settings"`
}

// FileOps are pi's file operation sets, as arrays.
type FileOps struct {
	Read    []string `json:"read"`
	Written []string `json:"written"`
	Edited  []string `json:"edited"`
}

// AgentSettings are the agent's compaction settings. pi's cut was made
// with keepRecentTokens; ctxtool sizes its summary from the same numbers.
type AgentSettings struct {
	Enabled          *bool `json:"enabled,omitempty"`
	ReserveTokens    int   `json:"reserveTokens"`
	KeepRecentTokens int   `json:"keepRecentTokens"`
}

// Response is ctxtool's answer: a compaction, or a decline (the agent then
// compacts by itself).
type Response struct {
	Version int `json:"version"`
	// Decline, when set, is why ctxtool leaves this compaction to the
	// agent; the other fields are then empty.
	Decline string `json:"decline,omitempty"`
	// Augment, with a decline, says the agent's own summary is to stand
	// and `ctxtool agent augment` adds what it dropped afterwards.
	Augment          bool     `json:"augment,omitempty"`
	Summary          string   `json:"summary,omitempty"`
	FirstKeptEntryID string   `json:"firstKeptEntryId,omitempty"`
	TokensBefore     int      `json:"tokensBefore,omitempty"`
	Details          *Details `json:"details,omitempty"`
}

// Details is the compaction entry's `details`: pi's cumulative file lists
// plus what ctxtool did.
type Details struct {
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
	// Ctxtool marks the entry as ctxtool's and says how it was made.
	Ctxtool DetailsCtxtool `json:"ctxtool"`
}

// DetailsCtxtool is details.ctxtool.
type DetailsCtxtool struct {
	Contract   int    `json:"contract"`
	Strategy   string `json:"strategy"`
	Summarizer string `json:"summarizer"`
	// Audit counts the facts of the summarised messages (and previous
	// summary) and lists those neither the summary nor the kept messages
	// carry. A dropped fact's line is the 1-based position of its message
	// in messagesToSummarize followed by turnPrefixMessages (0: the
	// previous summary): pi's messages have no lines ctxtool could name.
	Audit *compaction.DetailsAudit `json:"audit,omitempty"`
	// Fallback is the summariser's error when a mechanical extract stands
	// in for its summary.
	Fallback string `json:"fallback,omitempty"`
}

// InputError is a request ctxtool cannot use: the shim's or the agent's
// fault, never worth a retry (exit 2).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// Decode reads one request of at most max bytes (0: DefaultMaxInput) and
// checks it. Every error is an *InputError naming the field at fault.
func Decode(r io.Reader, max int64) (*Request, error) {
	var req Request
	if err := decodeOne(r, max, "JSON object", &req); err != nil {
		return nil, err
	}
	return &req, req.check()
}

// decodeOne reads exactly one JSON value of at most max bytes (0:
// DefaultMaxInput) into v; what names it in errors ("JSON object").
func decodeOne(r io.Reader, max int64, what string, v any) error {
	if max <= 0 {
		max = DefaultMaxInput
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return inputErrorf("reading the request on stdin: %v", err)
	}
	if int64(len(data)) > max {
		return inputErrorf("the request on stdin is larger than %d bytes (--max-input raises the limit)", max)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return inputErrorf("no request on stdin: send one JSON object (docs/agent-contract.md)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return inputErrorf("the request on stdin is not a contract v%d %s: %s", Version, what, jsonError(data, err))
	}
	if dec.More() {
		return inputErrorf("the request on stdin has more than one JSON value: send exactly one object")
	}
	return nil
}

// jsonError says where in data a decoding error is.
func jsonError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%v at byte %d", err, syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q must be %v, not a JSON %s", typ.Field, typ.Type, typ.Value)
	}
	return err.Error()
}

func (r *Request) check() error {
	switch {
	case r.Version == 0:
		return inputErrorf("the request has no \"version\": this ctxtool speaks contract version %d", Version)
	case r.Version != Version:
		return inputErrorf("the request speaks contract version %d, this ctxtool speaks %d: reinstall the shim with this binary (ctxtool install %s)",
			r.Version, Version, strings.TrimSpace(r.Agent))
	case !slices.Contains(Agents, r.Agent):
		return inputErrorf("agent %q: this ctxtool's contract knows %q", r.Agent, Agents)
	}
	p := &r.Preparation
	if err := checkMessages("preparation.messagesToSummarize", p.MessagesToSummarize); err != nil {
		return err
	}
	if err := checkMessages("preparation.turnPrefixMessages", p.TurnPrefixMessages); err != nil {
		return err
	}
	if err := checkMessages("keptMessages", r.KeptMessages); err != nil {
		return err
	}
	if p.TokensBefore < 0 || p.Settings.KeepRecentTokens < 0 || p.Settings.ReserveTokens < 0 {
		return inputErrorf("preparation: tokensBefore and settings must not be negative")
	}
	if len(r.PreviousDetails) > 0 && !bytes.Equal(bytes.TrimSpace(r.PreviousDetails), []byte("null")) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(r.PreviousDetails, &obj) != nil {
			return inputErrorf("previousDetails must be a JSON object (the details of the compaction in force)")
		}
	}
	return nil
}

// checkMessages checks that each message is an object with a role.
func checkMessages(field string, msgs []json.RawMessage) error {
	for i, raw := range msgs {
		var m struct {
			Role *string `json:"role"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return inputErrorf("%s[%d]: not a message object: %s", field, i, jsonError(raw, err))
		}
		if m.Role == nil || *m.Role == "" {
			return inputErrorf("%s[%d]: the message has no \"role\"", field, i)
		}
	}
	return nil
}
