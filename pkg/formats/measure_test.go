package formats_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// A lazy view (OpenLazy) measures its lines instead of writing them: the
// offset and length it hands with every line are those of the line Open
// writes, and the parts it does write (a summary, the blocks it did not
// size) are that line's bytes. On every line of generated sessions of each
// format (odd options too) and of the wild transcripts; a measured length
// one byte off fails here, not as a wrong citation far away.
func TestMeasuredLinesAreTheWrittenOnes(t *testing.T) {
	dir := t.TempDir()
	files := sessiongen.AgentCorpus(t, dir, func(seed uint64) sessiongen.AgentOptions {
		return sessiongen.AgentOptions{Seed: seed, TargetBytes: 512 << 10, Thinking: seed != 2, Compactions: int(seed - 1),
			ParallelToolCalls: int(seed), Fact: "the port is 8443"}
	})
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for name, text := range measureOdd {
		write(name, []byte(text))
	}
	for _, f := range files {
		checkMeasured(t, f)
	}
	t.Run("wild", func(t *testing.T) {
		for _, f := range oracle.WildAgentTranscripts(t) {
			checkMeasured(t, f)
		}
	})
}

// kept is what a line's reader reads of it: the summary and the blocks
// not sized, as bytes.
func kept(p *formats.Produced) []string {
	var out []string
	if p.Summary[1] > 0 {
		out = append(out, string(p.Line[p.Summary[0]:p.Summary[1]]))
	}
	for _, b := range p.Blocks {
		if !b.Sized {
			out = append(out, string(p.Line[b.Span[0]:b.Span[1]]))
		}
	}
	return out
}

func checkMeasured(t *testing.T, f string) {
	t.Helper()
	name := filepath.Base(f)
	type line struct {
		off    int64
		length int
		kept   []string
		header []byte
	}
	var measured, written []line
	lazy, err := formats.OpenLazy(f, func(p *formats.Produced) {
		if !p.Measured {
			t.Errorf("%s: row %d: a lazy view's line is not Measured", name, p.Row)
		}
		l := line{off: p.Offset, length: p.Length, kept: kept(p)}
		if p.Header {
			l.header = append([]byte(nil), p.Line...)
		}
		measured = append(measured, l)
	})
	if err != nil || lazy == nil {
		t.Fatalf("%s: lazy: %v (view %v)", name, err, lazy)
	}
	defer lazy.Close()
	eager, err := formats.Open(f, func(p *formats.Produced) {
		if p.Measured || p.Length != len(p.Line) {
			t.Errorf("%s: row %d: a written line is Measured %v, length %d of %d", name, p.Row, p.Measured, p.Length, len(p.Line))
		}
		written = append(written, line{off: p.Offset, length: len(p.Line), kept: kept(p)})
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer eager.Close()
	var view bytes.Buffer
	if _, err := eager.WriteTo(&view); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(view.Bytes(), []byte{'\n'})
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if len(measured) != len(lines) || len(written) != len(lines) {
		t.Fatalf("%s: %d lines measured, %d handed by Open, the view has %d", name, len(measured), len(written), len(lines))
	}
	if lazy.Size() != int64(view.Len()) {
		t.Errorf("%s: lazy view measured %d bytes, the view is %d", name, lazy.Size(), view.Len())
	}
	var off int64
	for i, l := range lines {
		text := l[:len(l)-1]
		m := measured[i]
		if m.off != off || m.length != len(text) {
			t.Fatalf("%s: line %d: measured at %d, %d bytes; written at %d, %d bytes: %s", name, i+1, m.off, m.length, off, len(text), text)
		}
		if m.header != nil && !bytes.Equal(m.header, text) {
			t.Fatalf("%s: header measured as %s, written %s", name, m.header, text)
		}
		if got, want := strings.Join(m.kept, "\x00"), strings.Join(written[i].kept, "\x00"); got != want {
			t.Fatalf("%s: line %d: the lazy view kept %q, the line holds %q", name, i+1, got, want)
		}
		for _, k := range m.kept {
			if !bytes.Contains(text, []byte(k)) {
				t.Fatalf("%s: line %d: kept %s is not in the line %s", name, i+1, k, text)
			}
		}
		off += int64(len(l))
	}
	// The view written on the first read is the one Open writes.
	var got bytes.Buffer
	if _, err := lazy.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), view.Bytes()) {
		t.Fatalf("%s: the lazy view, read, differs from Open's", name)
	}
}

// measureOdd are lines whose pi lines escape what the source did not (or
// the reverse), replace invalid UTF-8, carry counts of every width and
// ids of every shape: each one a length the measuring writer must get to
// the byte.
var measureOdd = map[string]string{
	"cc-odd.jsonl": strings.Join([]string{
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
	"cx-odd.jsonl": strings.Join([]string{
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
}
