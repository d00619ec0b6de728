package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// benchLines is the lines of testdata/sample-v3.jsonl (a pi session of
// 281 kB: prose, tool calls, tool results and an image) plus one line
// holding a 1 MB base64 image, the shape that dominates real sessions'
// bytes; and their total size.
func benchLines(b *testing.B) ([][]byte, int64) {
	data, err := os.ReadFile("../../testdata/sample-v3.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	var n int64
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if len(l) > 0 {
			lines = append(lines, l)
			n += int64(len(l))
		}
	}
	img := bytes.Repeat([]byte("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"), 1<<20/44)
	big := []byte(`{"type":"message","id":"b1","parentId":"a1","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"image","data":"` + string(img) + `","mimeType":"image/png"}],"isError":false,"timestamp":1}}`)
	lines = append(lines, big)
	return lines, n + int64(len(big))
}

// BenchmarkScanner is the validating scanner alone (skip: JSON.parse's
// acceptance, strings measured in UTF-16 units) over benchLines.
func BenchmarkScanner(b *testing.B) {
	lines, n := benchLines(b)
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			s := scanner{b: l}
			if !s.skip(0) {
				b.Fatal(s.err)
			}
		}
	}
}

// BenchmarkParseLine is the line decoder (parseLineIn: one validating
// pass that reads an entry's fields and measures its content) over
// benchLines, with a parse worker as Load runs it.
func BenchmarkParseLine(b *testing.B) {
	lines, n := benchLines(b)
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := &parser{}
		for _, l := range lines {
			if r := parseLineIn(l, p); r.kind == kindMalformed {
				b.Fatal(r.err)
			}
		}
	}
}

// BenchmarkMarshalJS is the entry writer on an assistant message with a
// tool call, as Writer appends one.
func BenchmarkMarshalJS(b *testing.B) {
	var e map[string]any
	lines, _ := benchLines(b)
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"toolCall"`)) {
			if err := json.Unmarshal(l, &e); err != nil {
				b.Fatal(err)
			}
			break
		}
	}
	out, _ := MarshalJS(e)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := MarshalJS(e); err != nil {
			b.Fatal(err)
		}
	}
}
