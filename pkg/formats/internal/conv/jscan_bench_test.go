package conv

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkJdec is the pull decoder alone: every line of the bundled
// current Claude Code and Codex transcripts (testdata/current) and a
// line holding a 1 MB base64 image, validated and skipped value by value.
func BenchmarkJdec(b *testing.B) {
	var lines [][]byte
	var n int64
	for _, f := range []string{"../../../../testdata/current/claude-code-2.1.jsonl", "../../../../testdata/current/codex-0.171.jsonl"} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			if len(l) > 0 {
				lines = append(lines, l)
				n += int64(len(l))
			}
		}
	}
	img := bytes.Repeat([]byte("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"), 1<<20/44)
	big := []byte(`{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + string(img) + `"}}]}}`)
	lines = append(lines, big)
	n += int64(len(big))
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			d := NewDec(l)
			d.Raw()
			d.End()
			if d.Bad {
				b.Fatalf("rejected %.80s", l)
			}
		}
	}
}

// BenchmarkAppendString writes a 1 KiB string of prose with a newline and
// a quote in it, as the converters write message text.
func BenchmarkAppendString(b *testing.B) {
	s := string(bytes.Repeat([]byte("The quick brown fox said \"hi\" to the lazy dog.\n"), 1024/48))
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < b.N; i++ {
		buf = AppendString(buf[:0], s)
	}
}
