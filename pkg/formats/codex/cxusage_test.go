package codex_test

import (
	"strconv"
	"testing"
)

// Codex 0.171 writes a token_usage_record (with the response's usage)
// right after each reply's items, and the token_count event only after
// the reply's tool outputs (the real codex's rollouts, internal/agentkit).
// Read by token_count alone, each reply took the usage of the reply
// before it: the first tool call had none and the last reply its
// predecessor's. The record's usage is the reply's; a "usage" of
// another shape elsewhere is no error (the item is still read).
func TestCodexUsageRecordBelongsToItsReply(t *testing.T) {
	usage := func(in, total int) string {
		return `{"input_tokens":` + itoa(in) + `,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0,"total_tokens":` + itoa(total) + `}`
	}
	lines := []string{
		`{"timestamp":"2026-12-02T05:43:46.594Z","type":"session_meta","payload":{"id":"01a23547-c887-7f90-97e4-2b7b5ccab601","timestamp":"2026-12-02T05:43:46.572Z","cwd":"/p","cli_version":"0.171.0","model_provider":"fake"}}`,
		`{"timestamp":"2026-12-02T05:43:46.600Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"List the dumps."}]}}`,
		`{"timestamp":"2026-12-02T05:43:46.700Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"}}`,
		`{"timestamp":"2026-12-02T05:43:46.700Z","type":"token_usage_record","payload":{"response_id":"resp_1","usage":` + usage(1000, 1001) + `}}`,
		`{"timestamp":"2026-12-02T05:43:46.800Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a.sql"}}`,
		`{"timestamp":"2026-12-02T05:43:46.827Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":` + usage(1000, 1001) + `,"last_token_usage":` + usage(1000, 1001) + `,"model_context_window":258400}}}`,
		`{"timestamp":"2026-12-02T05:43:46.900Z","type":"response_item","payload":{"type":"message","role":"assistant","usage":"n/a","content":[{"type":"output_text","text":"One dump."}]}}`,
		`{"timestamp":"2026-12-02T05:43:46.900Z","type":"token_usage_record","payload":{"response_id":"resp_2","usage":` + usage(1100, 1101) + `}}`,
		`{"timestamp":"2026-12-02T05:43:46.950Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":` + usage(2100, 2102) + `,"last_token_usage":` + usage(1100, 1101) + `,"model_context_window":258400}}}`,
	}
	s := loadLines(t, "rollout-2026-12-02T05-43-46-01a23547-c887-7f90-97e4-2b7b5ccab601.jsonl", lines)
	var got []int
	for _, m := range s.Context().Messages {
		if m.Role == "assistant" {
			got = append(got, m.Entry.Usage.ContextTokens())
		}
	}
	if len(got) != 2 || got[0] != 1001 || got[1] != 1101 {
		t.Errorf("the replies' context tokens are %v; want [1001 1101] (each its own record's)", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
