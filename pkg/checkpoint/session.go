package checkpoint

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// DefaultContextWindow is used when neither the caller nor the config
// names a window: OpenClaw's default for unknown models (the 200k of the
// seed's examples), the model table's value.
const DefaultContextWindow = models.DefaultContextWindow

// fromContext is FromSession on the session's context, which Take also
// measures: the branch is ctx.Path, walked once.
func fromContext(s *transcript.Session, ctx *transcript.Context) (Input, error) {
	// The absolute path: the checkpoint says which file it came from
	// wherever restore is run.
	in := Input{SessionFile: s.File, SessionID: s.Header.ID}
	if s.File != "-" {
		if abs, err := filepath.Abs(s.File); err == nil {
			in.SessionFile = abs
		}
	}
	lastCalls := -1 // index in in.Messages of the last message with tool calls
	n := 0
	for _, e := range ctx.Path {
		if e.Type == "message" || e.Type == "custom_message" {
			n++
		}
	}
	// Sized once: append's generations of a 1 GB branch's messages were
	// live together (150 MB of the peak heap).
	in.Messages = make([]Message, 0, n)
	for _, e := range ctx.Path {
		switch e.Type {
		case "message", "custom_message":
		case "compaction":
			in.Compactions = append(in.Compactions, compactionFiles(s, e))
			continue
		default:
			continue
		}
		msg, err := messageOf(s, e)
		if err != nil {
			return in, err
		}
		if msg == nil {
			continue
		}
		slimText(msg)
		if len(msg.ToolCalls) > 0 {
			// Only the last call's full arguments are read (pendingCall,
			// lastCall); older calls need just their path keys.
			if lastCalls >= 0 {
				slimArgs(&in.Messages[lastCalls])
			}
			lastCalls = len(in.Messages)
		}
		in.Messages = append(in.Messages, *msg)
	}
	in.SplitTurn = splitTurn(ctx)
	for _, e := range s.Entries {
		if e.Type == "compaction" {
			in.CompactionCount++
		}
	}
	return in, nil
}

// messageOf decodes a message or custom_message entry into what the
// builder reads (nil when the entry produces no message). The builder and
// the incremental capture share it, so both see the same text.
func messageOf(s *transcript.Session, e *transcript.Entry) (*Message, error) {
	if e.Type == "message" && e.Role == "toolResult" && !e.IsError && !e.Oversized {
		// Of a successful tool result only what the entry already holds is
		// read (slimText drops its text): decoding every tool output was
		// most of a checkpoint's CPU.
		return &Message{EntryID: e.ID, Role: e.Role, ToolCallID: e.ToolCallID, ToolName: e.ToolName, Time: e.Time()}, nil
	}
	return decodeMessage(s, e)
}

// decodeMessage is messageOf from the decoded line, every field filled.
func decodeMessage(s *transcript.Session, e *transcript.Entry) (*Message, error) {
	m, err := s.Message(e)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", s.File, e.Line, err)
	}
	if m == nil {
		return nil, nil
	}
	msg := &Message{
		EntryID: e.ID, Role: m.Role, CustomType: m.CustomType, Text: m.Text(),
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError, StopReason: m.StopReason,
		Time: e.Time(),
	}
	if e.Type == "custom_message" {
		msg.Role = "custom"
	}
	if m.Role == "bashExecution" {
		msg.Text = "$ " + m.Command
	}
	for _, b := range m.ToolCalls() {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Arguments})
	}
	return msg, nil
}

// slimText drops the text the builder and the capture never read, so a
// checkpoint of a gigabyte session does not hold every tool output of the
// branch in memory (2.7 GB peak at 1 GB): of a tool result only the first
// line of an error is read (firstLine: open items, learnings, the capture's
// errors). User, assistant and bash texts are read whole (gists, lengths,
// task lists) and kept.
func slimText(m *Message) {
	if m.Role != "toolResult" {
		return
	}
	if m.IsError {
		m.Text = firstLine(m.Text)
	} else {
		m.Text = ""
	}
}

// slimArgs cuts a tool call's arguments to the keys callPaths and
// isModifyCall read (written files' contents are most of a session's bytes).
// Arguments that are not a JSON object are kept: nothing reads paths in them.
func slimArgs(m *Message) {
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		var args map[string]json.RawMessage
		if json.Unmarshal(tc.Args, &args) != nil {
			continue
		}
		kept := map[string]json.RawMessage{}
		for _, k := range append([]string{"command", "paths"}, pathKeys...) {
			if v, ok := args[k]; ok {
				kept[k] = v
			}
		}
		if len(kept) == len(args) {
			continue
		}
		if b, err := json.Marshal(kept); err == nil {
			tc.Args = b
		}
	}
}

// splitTurn: the compaction in force kept a turn from its middle (the first
// kept entry is not a user message, pi's isSplitTurn) and nothing has been
// said since, so the turn it cut is still the one in progress.
func splitTurn(ctx *transcript.Context) bool {
	if ctx.Compaction == nil || ctx.KeptStart < 0 || ctx.KeptStart >= len(ctx.Path) {
		return false
	}
	if ctx.Path[ctx.KeptStart].Role == "user" {
		return false
	}
	for _, e := range ctx.Path[ctx.CompactionIndex+1:] {
		if e.Role != "" {
			return false
		}
	}
	return true
}

// compactionFiles reads pi's details {readFiles, modifiedFiles} of a compaction.
func compactionFiles(s *transcript.Session, e *transcript.Entry) CompactionInfo {
	raw, err := s.Raw(e)
	if err != nil {
		return CompactionInfo{}
	}
	var c struct {
		Details struct {
			ReadFiles     []string `json:"readFiles"`
			ModifiedFiles []string `json:"modifiedFiles"`
		} `json:"details"`
	}
	_ = json.Unmarshal(raw, &c) // details are free-form; anything else means no files
	return CompactionInfo{ReadFiles: c.Details.ReadFiles, ModifiedFiles: c.Details.ModifiedFiles}
}
