package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/memflush"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
)

func flushJSON(t *testing.T, args ...string) *memflush.Result {
	t.Helper()
	out, _ := runOK(t, append([]string{"flush", "--json"}, args...)...)
	var r memflush.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("flush output %q: %v", out, err)
	}
	return &r
}

// TestFlushCommand: the generated session's planted decisions in the region
// reach the memory file once; a second run in the cycle writes nothing.
func TestFlushCommand(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	gen := sessiongen.Write(t, file, sessiongen.Options{Seed: 4, Turns: 30, Facts: 14, FactsWithin: 0.3})
	ws := filepath.Join(dir, "ws")
	args := []string{file, "--workspace", ws, "--state-dir", filepath.Join(dir, "state"), "--context-window", "40000", "--summarizer", "extractive"}
	r := flushJSON(t, args...)
	if !r.Flushed || r.Threshold != 16000 || r.Tokens < 16000 || r.Source != "facts" {
		t.Fatalf("flush: %+v", r)
	}
	mem := testkit.ReadFile(t, r.MemoryFile)
	decisions := 0
	for _, f := range gen.Facts {
		if f.Kind != "decision" || f.Line < r.FromLine || f.Line > r.ToLine {
			continue
		}
		decisions++
		if strings.Count(string(mem), f.Value) != 1 {
			t.Errorf("planted decision %q (line %d) occurs %d times in the memory file", f.Value, f.Line, strings.Count(string(mem), f.Value))
		}
	}
	if decisions == 0 {
		t.Fatal("no planted decision in the region: the test proves nothing")
	}
	r = flushJSON(t, args...)
	if r.Flushed || !strings.Contains(r.Reason, "already flushed") {
		t.Fatalf("second flush: %+v", r)
	}
	if again, _ := os.ReadFile(r.MemoryFile); string(again) != string(mem) && r.MemoryFile != "" {
		t.Fatal("second flush changed the memory file")
	}
	if _, errOut, code := runCLI(t, "flush", file); code != 2 || !strings.Contains(errOut, "--workspace") {
		t.Fatalf("flush without --workspace: exit %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "flush", "-", "--workspace", ws); code != 2 || !strings.Contains(errOut, "stdin") {
		t.Fatalf("flush of stdin: exit %d %s", code, errOut)
	}
}

// TestCompactMemoryFlushUpdatesSessionsJSON: compact --memory-flush flushes,
// compacts, and updates OpenClaw's store entry as OpenClaw would; after the
// compaction a flush is due again.
func TestCompactMemoryFlushUpdatesSessionsJSON(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "sid-9.jsonl")
	sessiongen.Write(t, file, sessiongen.Options{Seed: 5, Turns: 30, Facts: 14, FactsWithin: 0.3})
	store := filepath.Join(dir, "sessions.json")
	os.WriteFile(store, []byte(`{
  "agent:main:main": {
    "sessionId": "sid-9",
    "updatedAt": 1772366400000,
    "totalTokens": 39000,
    "inputTokens": 38000,
    "outputTokens": 1000,
    "compactionCount": 1
  }
}`), 0o600)
	ws, state := filepath.Join(dir, "ws"), filepath.Join(dir, "state")
	out, errOut, code := runCLI(t, "compact", file, "--memory-flush", "--workspace", ws, "--state-dir", state,
		"--summarizer", "extractive", "--context-window", "40000", "--force", "--json")
	if code != 0 {
		t.Fatalf("compact --memory-flush: exit %d\n%s", code, errOut)
	}
	var cr struct {
		Compacted   bool `json:"compacted"`
		TokensAfter int  `json:"tokensAfter"`
	}
	if err := json.Unmarshal([]byte(out), &cr); err != nil || !cr.Compacted {
		t.Fatalf("compact output %q: %v", out, err)
	}
	if !strings.Contains(errOut, "memory flush:") {
		t.Fatalf("no flush reported:\n%s", errOut)
	}
	ref, err := sessionstore.Find(file)
	if err != nil || ref == nil {
		t.Fatal(err)
	}
	e := ref.Entry
	if e.CompactionCount != 2 || e.TotalTokens == nil || *e.TotalTokens != cr.TokensAfter || e.InputTokens != nil || e.OutputTokens != nil {
		t.Fatalf("store entry after compact: %+v (tokensAfter %d)", e, cr.TokensAfter)
	}
	if e.MemoryFlushCompactionCount == nil || *e.MemoryFlushCompactionCount != 1 {
		t.Fatalf("memoryFlushCompactionCount %v, want 1 (the count when it flushed)", e.MemoryFlushCompactionCount)
	}
	mems, _ := filepath.Glob(filepath.Join(ws, "memory", "*.md"))
	if len(mems) != 1 {
		t.Fatalf("memory files %v", mems)
	}
	// The compaction moved the cycle on: the flush is due again, but the
	// history it would note was just compacted (pkg/memflush tests a new
	// cycle with new history).
	r := flushJSON(t, file, "--workspace", ws, "--state-dir", state, "--context-window", "40000", "--summarizer", "extractive", "--force")
	if r.Flushed || r.CompactionCount != 2 || *r.LastFlushCompactionCount != 1 || !strings.Contains(r.Reason, "nothing would be compacted") {
		t.Fatalf("flush after the compaction: %+v", r)
	}
}

// The memoryFlush defaults in the key table are OpenClaw's, as memflush has them.
func TestFlushConfigDefaults(t *testing.T) {
	cleanEnv(t)
	fo, code := resolve(t, newFlushCmd, "flush", "--workspace", "ws", "s.jsonl")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !fo.Enabled || fo.SoftThresholdTokens != memflush.DefaultSoftThresholdTokens || fo.Prompt != memflush.DefaultPrompt || fo.SystemPrompt != memflush.DefaultSystemPrompt ||
		fo.Compaction.Settings.ReserveTokensFloor != compaction.DefaultReserveTokensFloor {
		t.Fatalf("config defaults %+v", fo)
	}
}

// compaction.memoryFlush.forceFlushTranscriptBytes reaches the flush from
// the config (here its environment variable): a session far below the token
// threshold is due by its size, and the table says why.
func TestFlushDueBySizeFromConfig(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	sessiongen.Write(t, file, sessiongen.Options{Seed: 4, Turns: 30, Facts: 14, FactsWithin: 0.3})
	args := []string{file, "--workspace", filepath.Join(dir, "ws"), "--state-dir", filepath.Join(dir, "state"), "--summarizer", "extractive", "--dry-run"}
	if r := flushJSON(t, args...); r.Flushed || r.DueBySize {
		t.Fatalf("a small session in a 200k window with the 2 MiB default: %+v", r)
	}
	t.Setenv("CTXTOOL_COMPACTION_MEMORYFLUSH_FORCEFLUSHTRANSCRIPTBYTES", "1024")
	r := flushJSON(t, args...)
	if !r.Flushed || !r.DueBySize || r.TranscriptBytes < 1024 {
		t.Fatalf("due by size: %+v", r)
	}
	out, errOut, code := runCLI(t, append([]string{"flush"}, args...)...)
	if code != 0 || !strings.Contains(out, "due by size") || !strings.Contains(out, "forceFlushTranscriptBytes") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}
