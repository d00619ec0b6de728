package transcript

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseLine checks that the line parser never panics and that it calls a
// line malformed exactly when a standard JSON parser rejects it (JSON.parse
// and encoding/json agree on validity). Seeded with every fixture line.
func FuzzParseLine(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/external/*.jsonl")
	files = append(files, "testdata/spec-v3.jsonl", "testdata/spec-v1.jsonl")
	for _, file := range files {
		fh, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		n := 0
		for sc.Scan() && n < 200 {
			line := append([]byte(nil), sc.Bytes()...)
			if len(line) < 4000 {
				f.Add(line)
				n++
			}
		}
		fh.Close()
	}
	f.Add([]byte(`{"a":1}{"b":2}`))
	f.Add([]byte(`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":{"a":[1e5,-0.0,"\ud800"]}}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		pl := parseLine(line)
		valid := json.Valid(line)
		if blank(line) {
			return
		}
		if (pl.kind == kindMalformed) == valid {
			t.Fatalf("parseLine kind %d but json.Valid=%v for %q", pl.kind, valid, line)
		}
		if pl.kind == kindMalformed {
			describeObjects(line)
		}
		if pl.kind == kindEntry && pl.entry.Chars < 0 {
			t.Fatalf("negative size for %q", line)
		}
	})
}
