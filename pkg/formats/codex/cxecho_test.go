package codex

import (
	"strings"
	"testing"
)

// echo finds the first event_msg envelope in a line's head by its tail:
// the same lines as a search for the whole envelope.
func TestEchoFindsTheFirstEnvelope(t *testing.T) {
	env := `"type":"event_msg","payload":{"type":"`
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`{"timestamp":"2026-03-02T09:00:07.346Z",` + env + `agent_message","message":"hi"}}`, true},
		{`{"timestamp":"2026-03-02T09:00:07.346Z",` + env + `token_count","info":null}}`, false},
		{`{"timestamp":"2026-03-02T09:00:07.346Z",` + env + `task_started"}}`, false},
		{`{"timestamp":"2026-03-02T09:00:07.346Z","type":"response_item","payload":{"type":"message"}}`, false},
		// a tail whose lead differs, then the envelope
		{`{"a":"x_msg","payload":{"type":"y",` + env + `user_message"}}`, true},
		{`{"type":"event_msg","payload":{"type":"` + `token_count",` + env + `user_message"}}`, false},
		{`_msg","payload":{"type":"`, false},
		{`{"x":"` + strings.Repeat("a", 150) + `",` + env + `user_message"}}`, false}, // past the head
	} {
		if got := echo([]byte(tc.line)); got != tc.want {
			t.Errorf("echo(%.60q…) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
