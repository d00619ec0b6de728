package facts

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// MaxToolText bounds how much of one tool output is scanned: the first
// MaxToolText bytes and the last MaxToolText/5 (a command's verdict is
// usually at its end). Conversation text is scanned whole.
const MaxToolText = 20000

// FromMessage returns the sources of one context message: its text
// (thinking is left out: it is the model's scratchpad, not a statement of
// the work), each tool call's arguments (identifiers and numbers only), a
// tool result or bash execution with its output bounded by MaxToolText.
func FromMessage(e *transcript.Entry, m *transcript.Message) []Source {
	if m == nil {
		return nil
	}
	src := Source{Line: e.Line, EntryID: e.ID(), Role: m.Role}
	var out []Source
	switch m.Role {
	case "user":
		t, injected := CleanUserText(m.Text())
		if injected {
			return nil // a prompt the runtime wrote, not the user's words
		}
		src.Text = t
	case "assistant":
		src.Text = m.Text()
		if IsInjectedReply(src.Text) {
			src.Text = ""
		}
		out = append(out, src)
		for _, c := range m.ToolCalls() {
			out = append(out, Source{Text: argumentsText(c.Arguments), Line: e.Line, EntryID: e.ID(), Role: "toolCall"})
		}
		return out
	case "bashExecution":
		src.Text = "$ " + m.Command + "\n" + boundTool(m.Output)
		if m.ExitCode != nil && *m.ExitCode != 0 {
			src.IsError = true
		}
	case "toolResult":
		src.Text = boundTool(m.Text())
		src.IsError = m.IsError || ToolFailed(src.Text)
	default:
		src.Text = m.Text()
	}
	return append(out, src)
}

// FromEntries loads the messages of entries from s and returns their
// sources in order. Entries that produce no message are skipped.
func FromEntries(s *transcript.Session, entries []*transcript.Entry) ([]Source, error) {
	var out []Source
	for _, e := range entries {
		if e.Role() == "" {
			continue
		}
		m, err := s.Message(e)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", s.File, e.Line, err)
		}
		out = append(out, FromMessage(e, m)...)
	}
	return out, nil
}

func boundTool(t string) string {
	if len(t) <= MaxToolText+MaxToolText/5 {
		return t
	}
	head, tail := t[:MaxToolText], t[len(t)-MaxToolText/5:]
	return strings.ToValidUTF8(head, "") + "\n…\n" + strings.ToValidUTF8(tail, "")
}

// argumentsText flattens tool-call arguments to their string values, one
// per line, keys in sorted order (numbers and booleans are left out).
func argumentsText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var parts []string
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			parts = append(parts, t)
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k])
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return strings.Join(parts, "\n")
}

// reJSONFailure is a tool result that reports its failure in its JSON
// body rather than with isError (OpenClaw's tools: {"status": "error", …},
// {"error": "missing_brave_api_key", …}).
var reJSONFailure = lazyre.New(`^\s*\{\s*"(?:status"\s*:\s*"error"|error"\s*:\s*"|ok"\s*:\s*false)`)

// ToolFailed reports whether a tool result's text says the call failed
// although the result is not flagged as an error.
func ToolFailed(text string) bool { return reJSONFailure().MatchString(text) }
