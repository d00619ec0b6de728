package transcript_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The session built from the values a Claude Code or Codex converter hands
// over with each line equals, field for field, the session the pi parser
// reads from the translated lines: on generated sessions of each format,
// on odd hand-written lines (escapes, invalid UTF-8, CJK, images, counts
// beyond 2^53) and on every real transcript in ../shared/fixtures/wild.
func TestProducedEqualsParsed(t *testing.T) {
	dir := t.TempDir()
	files := sessiongen.AgentCorpus(t, dir, func(seed uint64) sessiongen.AgentOptions {
		o := sessiongen.AgentOptions{Seed: seed, Turns: 30, Thinking: seed != 2, Compactions: int(seed - 1), Fact: "the port is 8443"}
		if seed == 3 {
			o.TargetBytes = 3 << 20 // the view goes to the spool in several blocks
		}
		return o
	})
	for name, text := range oddLines {
		p := filepath.Join(dir, name)
		testkit.WriteFile(t, p, []byte(text), 0o644)
		files = append(files, p)
	}
	if os.Getenv("CI") == "true" || dirExists(filepath.Join(oracle.ModuleRoot(), "..", "shared")) {
		files = append(files, oracle.WildAgentTranscripts(t)...)
	}
	for _, f := range files {
		direct := testkit.Load(t, f)
		parsed, err := transcript.LoadTranslated(f)
		if err != nil || parsed == nil {
			t.Fatalf("%s: translated: %v", f, err)
		}
		sameSession(t, filepath.Base(f), direct, parsed)
		lazy, err := transcript.LoadLazy(f)
		if err != nil {
			t.Fatalf("%s: lazy: %v", f, err)
		}
		sameSession(t, filepath.Base(f)+" (lazy)", lazy, parsed)
		sameBytes(t, filepath.Base(f)+" (lazy)", lazy, direct)
		direct.Close()
		parsed.Close()
		lazy.Close()
	}
}

// sameBytes checks that every entry of got reads the line want reads.
func sameBytes(t *testing.T, name string, got, want *transcript.Session) {
	t.Helper()
	for i, e := range got.Entries {
		g, err := got.Raw(e)
		if err != nil {
			t.Fatalf("%s: entry %d: %v", name, i, err)
		}
		w, err := want.Raw(want.Entries[i])
		if err != nil {
			t.Fatalf("%s: entry %d: %v", name, i, err)
		}
		if string(g) != string(w) {
			t.Fatalf("%s: entry %d reads\n%s\nwant\n%s", name, i, g, w)
		}
	}
}

// A lazily loaded transcript translates again the bytes it read: lines
// appended meanwhile do not move its entries, and a file rewritten
// meanwhile is an error, not other bytes.
func TestLazyViewReadsWhatWasLoaded(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, seed uint64) string {
		p := filepath.Join(dir, name)
		w, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := sessiongen.GenerateClaudeCode(w, sessiongen.AgentOptions{Seed: seed, Turns: 20}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, other := gen("cc.jsonl", 1), gen("other.jsonl", 2)
	want := testkit.Load(t, p)
	defer want.Close()
	lazy, err := transcript.LoadLazy(p)
	if err != nil {
		t.Fatal(err)
	}
	more := testkit.ReadFile(t, other)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(more)
	f.Close()
	sameBytes(t, "appended", lazy, want)
	lazy.Close()

	lazy, err = transcript.LoadLazy(p)
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	testkit.WriteFile(t, p, more, 0o644)
	if _, err := lazy.Raw(lazy.Entries[0]); err == nil || !strings.Contains(err.Error(), "changed while ctxtool read it") {
		t.Fatalf("rewritten file: %v, want an error saying it changed", err)
	}
}

func sameSession(t *testing.T, name string, got, want *transcript.Session) {
	t.Helper()
	if len(got.Entries) == 0 {
		t.Errorf("%s: no entries", name)
	}
	if len(got.Entries) != len(want.Entries) {
		t.Fatalf("%s: %d entries, parsed %d", name, len(got.Entries), len(want.Entries))
	}
	for i := range got.Entries {
		if !reflect.DeepEqual(*got.Entries[i], *want.Entries[i]) {
			t.Fatalf("%s: entry %d\n got %+v\nwant %+v", name, i, *got.Entries[i], *want.Entries[i])
		}
	}
	type whole struct {
		Size                    int64
		Header                  *transcript.Header
		Version, Lines          int
		EndsWithNewline         bool
		Malformed               []transcript.Malformed
		Warnings                []transcript.Warning
		NonObjects, Blank, Xtra []int
		Notes                   []string
	}
	of := func(s *transcript.Session) whole {
		return whole{s.Size, s.Header, s.Version, s.Lines, s.EndsWithNewline, s.Malformed, s.Warnings,
			s.NonObjects, s.Blank, s.ExtraHeaders, s.Notes()}
	}
	if g, w := of(got), of(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: session\n got %+v\nwant %+v", name, g, w)
	}
	if g, w := got.Context().HeuristicTokens(), want.Context().HeuristicTokens(); g != w {
		t.Errorf("%s: context %d tokens, parsed %d", name, g, w)
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// oddLines are transcripts whose values the pi line spells differently
// from the source, or reads in a lossy way.
var oddLines = map[string]string{
	"cc-odd.jsonl": strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s\u00e9","cwd":"/tmp/\/x","timestamp":"2025-03-01T10:00:00+02:00","message":{"role":"user","content":"caf\u00e9 漢字 \ud83d\ude00 \/ \u001f"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2025-03-01T08:00:01Z","message":{"id":"m1","model":"claude-\u00e9","role":"assistant","content":[{"type":"thinking","thinking":"hm 漢","signature":"sig"},{"type":"tool_use","id":"t\u00e91","name":"Bash","input":{ "cmd" : "ls 漢", "n": 1.50, "e": 1E3 }}],"stop_reason":"tool_use","usage":{"input_tokens":9007199254740993,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":4}}}`,
		"{\"type\":\"user\",\"uuid\":\"r1\",\"parentUuid\":\"a1\",\"timestamp\":\"bad time\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\\u00e91\",\"content\":[{\"type\":\"text\",\"text\":\"out \xff\xfe 漢\"},{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AAAA\"}}],\"is_error\":true},{\"type\":\"text\",\"text\":\"and this\"}]}}",
		`{"type":"assistant","uuid":"a2","parentUuid":"r1","timestamp":"2025-03-01T08:00:03Z","message":{"id":"m2","model":"claude-x","role":"assistant","content":"plain \"reply\"","stop_reason":"max_tokens","usage":{"input_tokens":-9007199254740993,"output_tokens":1}}}`,
		`{"type":"system","subtype":"compact_boundary","uuid":"c1","parentUuid":null,"timestamp":"2025-03-01T08:00:04Z","compactMetadata":{"preTokens":90071992547409930}}`,
		`{"type":"user","uuid":"u2","parentUuid":"c1","isCompactSummary":true,"timestamp":"2025-03-01T08:00:05Z","message":{"role":"user","content":[{"type":"text","text":"summary 漢"},{"type":"text","text":"more"}]}}`,
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
		`{"timestamp":"1970-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"epoch"}}`,
		`{"timestamp":"0001-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"year one"}}`,
		`{"timestamp":"2025-02-30T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"no such day"}}`,
		`{"timestamp":"\u0032025-09-01T00:00:11.000Z","type":"response_item","payload":{"type":"message","role":"user","content":"escaped"}}`,
		`{"timestamp":"2025-09-01T00:00:12.345Z","type":"response_item","payload":{"type":"message","role":"user","content":"pi form"}}`,
		`{"timestamp":"1969-12-31T23:59:59.999Z","type":"response_item","payload":{"type":"message","role":"user","content":"before the epoch"}}`,
		`{"timestamp":"2025-09-01T00:00:10Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`,
	}, "\n"),
}
