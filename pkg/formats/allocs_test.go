package formats_test

import (
	"bytes"
	"runtime"
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
