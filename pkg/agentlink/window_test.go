package agentlink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// windowMessages is a conversation of n messages, a tool call and its
// result at callAt and callAt+1.
func windowMessages(n, callAt int) []json.RawMessage {
	var out []json.RawMessage
	for i := 0; i < n; i++ {
		var m map[string]any
		text := strings.Repeat("word ", 60) + fmt.Sprint(i)
		switch {
		case i == callAt:
			m = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": "call_9", "name": "read", "arguments": map[string]any{"path": "/etc/x"}}}, "timestamp": 1796181000000 + i}
		case i == callAt+1:
			m = map[string]any{"role": "toolResult", "toolCallId": "call_9", "toolName": "read", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1796181000000 + i}
		case i%2 == 0:
			m = map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1796181000000 + i}
		default:
			m = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1796181000000 + i}
		}
		data, _ := json.Marshal(m)
		out = append(out, data)
	}
	return out
}

// The window leaves out the shortest prefix that brings the request under
// the target, never between a tool call and its result, and its note
// names the recall tool; a request under the target is sent whole.
func TestWindow(t *testing.T) {
	msgs := windowMessages(60, 35)
	req := &WindowRequest{Version: 1, Agent: "pi", Session: Session{File: "/s/a.jsonl"}, Messages: msgs, ContextWindow: 8000, OverheadTokens: 1000}
	res, err := Window(req, WindowOptions{TargetUtilization: 0.5, MinKeepMessages: 4, Tool: "recall"})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstKept <= 0 || !res.TargetMet || res.KeptTokens > 4000 || res.TargetTokens != 4000 {
		t.Fatalf("window %+v", res)
	}
	if res.FirstKept == 36 {
		t.Error("the window split a tool call from its result")
	}
	if !strings.Contains(res.Note, "call the `recall` tool") || !strings.Contains(res.Note, fmt.Sprintf("Removed now: %d messages", res.Evicted)) {
		t.Errorf("note %q", res.Note)
	}
	kept := 1000 + (len(res.Note)+3)/4
	for _, m := range msgs[res.FirstKept:] {
		kept += (len(m) + 3) / 4
	}
	if kept > 4000 {
		t.Errorf("what is kept (%d tokens with the note and overhead) is over the target", kept)
	}

	small := &WindowRequest{Version: 1, Agent: "pi", Messages: msgs[:6], ContextWindow: 8000}
	if res, err = Window(small, WindowOptions{TargetUtilization: 0.5, MinKeepMessages: 4}); err != nil || res.FirstKept != 0 || res.Note != "" {
		t.Errorf("a small request: %+v %v", res, err)
	}

	for _, bad := range []string{`{"version":1,"agent":"pi","messages":[],"contextWindow":0}`, `{"version":2,"agent":"pi","contextWindow":10}`,
		`{"version":1,"agent":"pi","messages":[{"content":"x"}],"contextWindow":10}`} {
		if _, err := DecodeWindow(bytes.NewReader([]byte(bad)), 0); err == nil {
			t.Errorf("DecodeWindow accepted %s", bad)
		}
	}
}
