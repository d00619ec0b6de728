package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The one-pass decodeMessage gives exactly what decoding with
// encoding/json (the previous implementation, kept here as the reference)
// gives, on every fixture and every real transcript available; DecodeWords
// the same less the fields only a model reads.
func TestDecodeMessageMatchesEncodingJSON(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/external/*.jsonl")
	more, _ := filepath.Glob("../../testdata/*.jsonl")
	gen, _ := filepath.Glob("../../internal/sessiongen/testdata/*.jsonl")
	spec, _ := filepath.Glob("testdata/*.jsonl")
	files = append(append(append(files, more...), gen...), spec...)
	if wild := "../../../shared/fixtures/wild"; dirExists(wild) {
		filepath.Walk(wild, func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".jsonl") {
				files = append(files, p)
			}
			return nil
		})
	}
	decoded := 0
	var words Message // reused, as the checkpoint builder reuses it
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			continue // not a pi session (other formats in the wild set)
		}
		for _, e := range s.Entries {
			raw, err := s.Raw(e)
			if err != nil {
				t.Fatal(err)
			}
			switch e.Type() {
			case "message", "custom_message", "branch_summary", "compaction":
			default:
				continue
			}
			want, werr := referenceDecode(e, raw)
			got, gerr := decodeMessage(e, raw)
			if werr != nil {
				continue // the reference refuses (a field of an odd type); ours is lenient
			}
			if gerr != nil {
				t.Fatalf("%s:%d: %v", f, e.Line, gerr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:%d:\n got %+v\nwant %+v", f, e.Line, got, want)
			}
			if err := DecodeWords(e, raw, &words); err != nil || !sameWords(&words, got) {
				t.Fatalf("%s:%d: DecodeWords (%v):\n got %+v\nfrom %+v", f, e.Line, err, words, got)
			}
			decoded++
		}
		s.Close()
	}
	t.Logf("%d messages from %d files decoded identically", decoded, len(files))
	if decoded < 1000 {
		t.Fatalf("only %d messages compared", decoded)
	}
}

// sameWords reports whether w, from DecodeWords, is m, from decodeMessage,
// less what DecodeWords leaves out.
func sameWords(w, m *Message) bool {
	want, got := *m, *w
	want.Details, want.Output, want.Usage, want.API, want.Provider, want.Model, want.ErrorMsg = nil, "", nil, "", "", "", ""
	var blocks []Block
	for _, b := range m.Content {
		if b.Type == "text" || b.Type == "toolCall" {
			b.Thinking, b.Data, b.MimeType = "", "", ""
			blocks = append(blocks, b)
		}
	}
	if len(got.Content) != len(blocks) {
		return false
	}
	for i := range blocks {
		if !reflect.DeepEqual(got.Content[i], blocks[i]) {
			return false
		}
	}
	got.Content, want.Content = nil, nil
	return reflect.DeepEqual(got, want)
}

func dirExists(p string) bool { st, err := os.Stat(p); return err == nil && st.IsDir() }

type refRawMessage struct {
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
type refRawEntry struct {
	Message    json.RawMessage `json:"message"`
	Summary    string          `json:"summary"`
	Content    json.RawMessage `json:"content"`
	CustomType string          `json:"customType"`
	Details    json.RawMessage `json:"details"`
}

func referenceDecode(e *Entry, line []byte) (*Message, error) {
	var re refRawEntry
	if err := json.Unmarshal(line, &re); err != nil {
		return nil, err
	}
	switch e.Type() {
	case "compaction":
		return &Message{Role: "compactionSummary", Summary: re.Summary, Details: re.Details}, nil
	case "branch_summary":
		return &Message{Role: "branchSummary", Summary: re.Summary, Details: re.Details}, nil
	case "custom_message":
		m := &Message{Role: "custom", CustomType: re.CustomType, Details: re.Details}
		if err := refDecodeContent(re.Content, m); err != nil {
			return nil, err
		}
		return m, nil
	}
	var rm refRawMessage
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
	if err := refDecodeContent(rm.Content, m); err != nil {
		return nil, err
	}
	return m, nil
}

func refDecodeContent(raw json.RawMessage, m *Message) error {
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
