package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Data      string          `json:"data,omitempty"`
	MimeType  string          `json:"mimeType,omitempty"`
}

// Message is the full content of the context message an entry produces.
// Summaries of compaction and branch_summary entries come as role
// "compactionSummary"/"branchSummary" with Summary set.
type Message struct {
	Role    string
	Content []Block
	// ContentIsString is true when content was a plain string (it is then
	// the single text block of Content).
	ContentIsString bool

	ToolCallID string
	ToolName   string
	IsError    bool
	Details    json.RawMessage

	Command            string
	Output             string
	ExitCode           *int
	Cancelled          bool
	Truncated          bool
	ExcludeFromContext bool

	CustomType string
	Summary    string

	API        string
	Provider   string
	Model      string
	Usage      *Usage
	StopReason string
	ErrorMsg   string
	Timestamp  float64
}

// Text joins the text blocks (for assistants also nothing else).
func (m *Message) Text() string {
	if m.Summary != "" {
		return m.Summary
	}
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolCalls returns the toolCall blocks of an assistant message.
func (m *Message) ToolCalls() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == "toolCall" {
			out = append(out, b)
		}
	}
	return out
}

type rawMessage struct {
	Role               string          `json:"role"`
	Content            json.RawMessage `json:"content"`
	ToolCallID         string          `json:"toolCallId"`
	ToolName           string          `json:"toolName"`
	IsError            bool            `json:"isError"`
	Details            json.RawMessage `json:"details"`
	Command            string          `json:"command"`
	Output             string          `json:"output"`
	ExitCode           *int            `json:"exitCode"`
	Cancelled          bool            `json:"cancelled"`
	Truncated          bool            `json:"truncated"`
	ExcludeFromContext bool            `json:"excludeFromContext"`
	CustomType         string          `json:"customType"`
	API                string          `json:"api"`
	Provider           string          `json:"provider"`
	Model              string          `json:"model"`
	Usage              *Usage          `json:"usage"`
	StopReason         string          `json:"stopReason"`
	ErrorMessage       string          `json:"errorMessage"`
	Timestamp          float64         `json:"timestamp"`
}

type rawEntry struct {
	Message    json.RawMessage `json:"message"`
	Summary    string          `json:"summary"`
	Content    json.RawMessage `json:"content"`
	CustomType string          `json:"customType"`
	Details    json.RawMessage `json:"details"`
}

// Message decodes the full message an entry produces (message,
// custom_message, branch_summary and compaction entries). Other entry types
// give (nil, nil).
func (s *Session) Message(e *Entry) (*Message, error) {
	switch e.Type {
	case "message", "custom_message", "branch_summary", "compaction":
	default:
		return nil, nil
	}
	raw, err := s.Raw(e)
	if err != nil {
		return nil, err
	}
	m, err := DecodeMessage(e, raw)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", s.File, e.Line, err)
	}
	return m, nil
}

// DecodeMessage decodes the message of an entry from its line bytes.
func DecodeMessage(e *Entry, line []byte) (*Message, error) {
	var re rawEntry
	if err := json.Unmarshal(line, &re); err != nil {
		return nil, err
	}
	switch e.Type {
	case "compaction":
		return &Message{Role: "compactionSummary", Summary: re.Summary, Details: re.Details}, nil
	case "branch_summary":
		return &Message{Role: "branchSummary", Summary: re.Summary, Details: re.Details}, nil
	case "custom_message":
		m := &Message{Role: "custom", CustomType: re.CustomType, Details: re.Details}
		if err := decodeContent(re.Content, m); err != nil {
			return nil, err
		}
		return m, nil
	}
	var rm rawMessage
	if err := json.Unmarshal(re.Message, &rm); err != nil {
		return nil, err
	}
	m := &Message{
		Role: rm.Role, ToolCallID: rm.ToolCallID, ToolName: rm.ToolName, IsError: rm.IsError,
		Details: rm.Details, Command: rm.Command, Output: rm.Output, ExitCode: rm.ExitCode,
		Cancelled: rm.Cancelled, Truncated: rm.Truncated, ExcludeFromContext: rm.ExcludeFromContext,
		CustomType: rm.CustomType, API: rm.API, Provider: rm.Provider, Model: rm.Model,
		Usage: rm.Usage, StopReason: rm.StopReason, ErrorMsg: rm.ErrorMessage, Timestamp: rm.Timestamp,
	}
	if m.Role == "hookMessage" {
		m.Role = "custom"
	}
	if err := decodeContent(rm.Content, m); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeContent(raw json.RawMessage, m *Message) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		m.ContentIsString = true
		m.Content = []Block{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw, &m.Content)
}
