package formats_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// Reading a Claude Code transcript allocates a bounded number of objects
// per line: a line's message id, model and usage are read where they are,
// not made a string or a pointer each (they were three of a line's few
// allocations).
func TestClaudeCodeAllocationsPerLine(t *testing.T) {
	var src bytes.Buffer
	res, err := sessiongen.GenerateClaudeCode(&src, sessiongen.AgentOptions{Seed: 3, TargetBytes: 8 << 20, Thinking: true, Compactions: 8})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := formats.OpenReader("cc.jsonl", bytes.NewReader(src.Bytes()), func(*formats.Produced) {})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	perLine := float64(after.Mallocs-before.Mallocs) / float64(res.Lines)
	t.Logf("%.2f allocations per line (%d lines)", perLine, res.Lines)
	if perLine > 4 {
		t.Errorf("%.2f allocations per line, want at most 4 (4.6 when they were)", perLine)
	}
}

// What a converter holds while it reads is its tables and its batches in
// flight: source chunks with their decoded records, and blocks of written
// lines with their Produced values. Those are on top of the session the
// lines become, so they are kept small: reading an 8 MB file as estimate
// does (OpenLazy: the translation is not kept), the heap, collected at
// GOGC=10 so that it stays close to what is live, grows by at most a
// bound. With 1 MB chunks and blocks it grew by 20-29 MB.
func TestConvertersHeapInFlight(t *testing.T) {
	for _, c := range []struct {
		name string
		gen  func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)
	}{
		{"cc.jsonl", sessiongen.GenerateClaudeCode},
		{"codex.jsonl", sessiongen.GenerateCodex},
	} {
		var src bytes.Buffer
		if _, err := c.gen(&src, sessiongen.AgentOptions{Seed: 3, TargetBytes: 8 << 20, Thinking: true, Compactions: 8}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), c.name)
		if err := os.WriteFile(path, src.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		defer debug.SetGCPercent(debug.SetGCPercent(10))
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, peak, n := ms.HeapAlloc, uint64(0), 0
		v, err := formats.OpenLazy(path, func(*formats.Produced) {
			if n++; n%256 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		v.Close()
		t.Logf("%s: heap grew by up to %.1f MB", c.name, float64(peak)/(1<<20))
		if peak > 14<<20 {
			t.Errorf("%s: heap grew by %.1f MB while reading, want at most 14", c.name, float64(peak)/(1<<20))
		}
	}
}
