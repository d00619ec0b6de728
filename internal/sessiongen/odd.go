package sessiongen

import (
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// oddAgentTranscripts writes into dir the hand-written Claude Code and
// Codex transcripts whose values the pi line spells differently from the
// source or reads in a lossy way, and returns their paths: escapes the
// pi line writes raw and the reverse, invalid UTF-8, CJK, images, counts
// of every width (beyond 2^53 too), ids as a UUID's bytes and as text,
// timestamps at and before the epoch, year 1, 30 February and escaped,
// malformed lines. Every test that reads AgentCorpus runs on them:
// pkg/formats's TestMeasuredLinesAreTheWrittenOnes (each measured length
// to the byte) and pkg/transcript's TestProducedEqualsParsed (the values
// handed over equal what the pi parser reads), so an odd line added for
// one is checked by both.
func oddAgentTranscripts(t testing.TB, dir string) []string {
	t.Helper()
	names := make([]string, 0, len(oddAgent))
	for name := range oddAgent {
		names = append(names, name)
	}
	sort.Strings(names)
	files := make([]string, len(names))
	for i, name := range names {
		files[i] = filepath.Join(dir, name)
		text := oddAgent[name]
		ToTestFile(t, files[i], func(w io.Writer) (int, error) { return io.WriteString(w, text) })
	}
	return files
}

// oddAgent holds them by file name. The *-escaped files escape what the
// pi line writes raw and the reverse, replace invalid UTF-8 (in ids too)
// and carry counts of every width: each a length the measuring writer
// must get to the byte; the *-odd files give the same values plainer, in a
// tree with tool calls and results.
var oddAgent = map[string]string{
	"cc-escaped.jsonl": strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s\u00e9\"q","cwd":"/tmp/\/x\u0001","timestamp":"2025-03-01T10:00:00+02:00","message":{"role":"user","content":"caf\u00e9 漢字 \ud83d\ude00 \/ \u001f"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2025-03-01T08:00:01Z","message":{"id":"m1","model":"claude-\u00e9\n","role":"assistant","content":[{"type":"thinking","thinking":"hm 漢","signature":"sig"},{"type":"tool_use","id":"t\"1","name":"Ba\u0007sh","input":{"cmd":"ls \u00e9","n":1.50}},{"type":"text","text":"ok"}],"usage":{"input_tokens":0,"output_tokens":-1,"cache_read_input_tokens":9007199254740993}}}`,
		"{\"type\":\"user\",\"uuid\":\"r1\",\"parentUuid\":\"a1\",\"timestamp\":\"bad time\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\\\"1\",\"content\":[{\"type\":\"text\",\"text\":\"out \xff\xfe 漢\"}]}]}}",
		"{\"type\":\"user\",\"uuid\":\"r2\xff\",\"parentUuid\":\"r1\",\"timestamp\":\"2025-03-01T08:00:02.5Z\",\"message\":{\"role\":\"user\",\"content\":\"\xed\xa0\x80 lone surrogate bytes \xef\xbf\xbd\"}}",
		`{"type":"assistant","uuid":"a2","parentUuid":"r2","timestamp":"2025-03-01T08:00:03Z","message":{"id":"m2","model":"claude-x","role":"assistant","content":"plain \"reply\"","stop_reason":"max_tokens","usage":{"input_tokens":-9007199254740993,"output_tokens":123456789012}}}`,
		`{"type":"system","subtype":"compact_boundary","uuid":"c1","parentUuid":null,"timestamp":"2025-03-01T08:00:04Z","compactMetadata":{"preTokens":90071992547409930}}`,
		`{"type":"user","uuid":"u2","parentUuid":"c1","isCompactSummary":true,"timestamp":"2025-03-01T08:00:05Z","message":{"role":"user","content":[{"type":"text","text":"summary 漢 \u2028"},{"type":"text","text":"more"}]}}`,
		`{"type":"user","uuid":"u3","parentUuid":"u2","timestamp":"2025-03-01T08:00:06Z","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"BBBB"}}]}}`,
		`not json`,
		``,
	}, "\n"),
	// Ids the converter hands as a UUID's 16 bytes (canonical lower case)
	// beside ones it hands as text: upper case, escaped, suffixed "#n".
	"cc-ids.jsonl": strings.Join([]string{
		`{"type":"user","uuid":"7d48cbd2-6615-4dd8-87f6-38f12b8167d6","parentUuid":null,"timestamp":"2025-03-01T08:00:00Z","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","uuid":"0A48CBD2-6615-4DD8-87F6-38F12B8167D6","parentUuid":"7d48cbd2-6615-4dd8-87f6-38f12b8167d6","timestamp":"2025-03-01T08:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"stop_reason":"tool_use"}}`,
		`{"type":"user","uuid":"\u0030b48cbd2-6615-4dd8-87f6-38f12b8167d6","parentUuid":"0A48CBD2-6615-4DD8-87F6-38F12B8167D6","timestamp":"2025-03-01T08:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"and"}]}}`,
		`{"type":"assistant","uuid":"00000000-0000-0000-0000-000000000000","parentUuid":"0b48cbd2-6615-4dd8-87f6-38f12b8167d6","timestamp":"2025-03-01T08:00:03Z","message":{"id":"m2","role":"assistant","content":"done","stop_reason":"end_turn"}}`,
		`{"type":"user","uuid":"0c48cbd2-6615-4dd8-87f6-38f12b8167d6","parentUuid":"00000000-0000-0000-0000-000000000000","timestamp":"2025-03-01T08:00:04Z","message":{"role":"user","content":"bye"}}`,
	}, "\n"),
	"cc-odd.jsonl": strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s\u00e9","cwd":"/tmp/\/x","timestamp":"2025-03-01T10:00:00+02:00","message":{"role":"user","content":"caf\u00e9 漢字 \ud83d\ude00 \/ \u001f"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2025-03-01T08:00:01Z","message":{"id":"m1","model":"claude-\u00e9","role":"assistant","content":[{"type":"thinking","thinking":"hm 漢","signature":"sig"},{"type":"tool_use","id":"t\u00e91","name":"Bash","input":{ "cmd" : "ls 漢", "n": 1.50, "e": 1E3 }}],"stop_reason":"tool_use","usage":{"input_tokens":9007199254740993,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":4}}}`,
		"{\"type\":\"user\",\"uuid\":\"r1\",\"parentUuid\":\"a1\",\"timestamp\":\"bad time\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\\u00e91\",\"content\":[{\"type\":\"text\",\"text\":\"out \xff\xfe 漢\"},{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AAAA\"}}],\"is_error\":true},{\"type\":\"text\",\"text\":\"and this\"}]}}",
		`{"type":"assistant","uuid":"a2","parentUuid":"r1","timestamp":"2025-03-01T08:00:03Z","message":{"id":"m2","model":"claude-x","role":"assistant","content":"plain \"reply\"","stop_reason":"max_tokens","usage":{"input_tokens":-9007199254740993,"output_tokens":1}}}`,
		``,
	}, "\n"),
	"cx-escaped.jsonl": strings.Join([]string{
		`{"timestamp":"2025-09-01T00:00:00Z","type":"session_meta","payload":{"id":"se\u00e9ss","timestamp":"2025-09-01T00:00:00Z","cwd":"/w\\x","model_provider":"open\"ai"}}`,
		`{"timestamp":"2025-09-01T00:00:00Z","type":"turn_context","payload":{"model":"gpt-\u00e9\t"}}`,
		`{"timestamp":"2025-09-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":"plain \"q\" \\ \n\t\u001f end 漢"}}`,
		`{"timestamp":"2025-09-01T00:00:02Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"a\nb"},{"type":"summary_text","text":""},{"type":"summary_text","text":"c \u00e9"}]}}`,
		`{"timestamp":"2025-09-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":""},{"type":"output_text","text":"x\u4e2dy"},{"type":"output_text","text":"\u0041"}]}}`,
		`{"timestamp":"2025-09-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"sh\"ell","call_id":"c\u00e91","arguments":"{\"a\": [1, 2.0, \"\\u00e9\"]}"}}`,
		`{"timestamp":"2025-09-01T00:00:04Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c2","input":"*** Begin\n\u0000 \u00e9"}}`,
		`{"timestamp":"2025-09-01T00:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":-5,"cached_input_tokens":9007199254740993,"output_tokens":0,"total_tokens":1234567890123},"model_context_window":272000}}}`,
		`{"timestamp":"2025-09-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c\u00e91","output":[{"type":"input_text","text":"one\r\n"},{"type":"input_text","text":"two 漢"}]}}`,
		`{"timestamp":"2025-09-01T00:00:06Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":{"content":"bad \u00e9","success":false}}}`,
		`{"timestamp":"2025-09-01T00:00:07Z","type":"compacted","payload":{"message":"sum \u00e9 \"x\"","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"kept 漢"}]}]}}`,
		`{"timestamp":"2025-09-01T00:00:08Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"dev \t"},{"type":"input_image","image_url":"data:image/png;base64,QUJD"}]}}`,
		`{"timestamp":"not a time","type":"response_item","payload":{"type":"local_shell_call","call_id":"c3","action":{"command":["ls", "-l"]}}}`,
		`{"timestamp":"1970-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"epoch"}}`,
		`{"timestamp":"0001-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"year one"}}`,
		`{"timestamp":"2025-02-30T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"no such day"}}`,
		`{"timestamp":"\u0032025-09-01T00:00:11.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"escaped"}}`,
		`{"timestamp":"2025-09-01T00:00:12.345Z","type":"response_item","payload":{"type":"message","role":"user","content":"pi form"}}`,
		`{"timestamp":"1969-12-31T23:59:59.999Z","type":"response_item","payload":{"type":"message","role":"user","content":"before the epoch"}}`,
		`{broken`,
	}, "\n"),
	"cx-odd.jsonl": strings.Join([]string{
		`{"timestamp":"2025-09-01T00:00:00Z","type":"session_meta","payload":{"id":"sess","timestamp":"2025-09-01T00:00:00Z","cwd":"/w","model_provider":"openai"}}`,
		`{"timestamp":"2025-09-01T00:00:01Z","type":"turn_context","payload":{"model":"gpt-5 \u00e9"}}`,
		`{"timestamp":"2025-09-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules 漢"}]}}`,
		`{"timestamp":"2025-09-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi \/"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}}`,
		`{"timestamp":"2025-09-01T00:00:04Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"think"}]}}`,
		`{"timestamp":"2025-09-01T00:00:05Z","type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c\u00e91","arguments":"{\"cmd\": [\"ls\", 1e2]}"}}`,
		`{"timestamp":"2025-09-01T00:00:06Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c\u00e91","output":{"content":"ok 漢","success":false}}}`,
		`{"timestamp":"2025-09-01T00:00:07Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":10,"cached_input_tokens":20,"output_tokens":3,"total_tokens":90071992547409930},"model_context_window":1000}}}`,
		`{"timestamp":"2025-09-01T00:00:08Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c2","input":"*** patch"}}`,
		`{"timestamp":"2025-09-01T00:00:09Z","type":"compacted","payload":{"message":"sum","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"kept"}]}]}}`,
		`{"timestamp":"2025-09-01T00:00:10Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
	}, "\n"),
	// Texts the converters measure as they decode them (ASCII written as
	// the source wrote it: escapes, joins, empty texts) beside ones the
	// core reads (escaped CJK the line writes raw, \u escapes).
	"cx-sized.jsonl": strings.Join([]string{
		`{"timestamp":"2025-09-01T00:00:00Z","type":"session_meta","payload":{"id":"sess","timestamp":"2025-09-01T00:00:00Z","cwd":"/w","model_provider":"openai"}}`,
		`{"timestamp":"2025-09-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":"plain \"q\" \\ \n\t\u001f end"}}`,
		`{"timestamp":"2025-09-01T00:00:02Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"a\nb"},{"type":"summary_text","text":""},{"type":"summary_text","text":"c"}]}}`,
		`{"timestamp":"2025-09-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":""},{"type":"output_text","text":"x\u4e2dy"},{"type":"output_text","text":"\u0041"}]}}`,
		`{"timestamp":"2025-09-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c1","arguments":"{}"}}`,
		`{"timestamp":"2025-09-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"one\r\n"},{"type":"input_text","text":"two 漢"}]}}`,
		`{"timestamp":"2025-09-01T00:00:06Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"only\b\f"},{"type":"input_image","image_url":"x"}]}}`,
		`{"timestamp":"2025-09-01T00:00:07Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"dev \t"}]}}`,
	}, "\n"),
}
