package agentkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Before each compaction the pi extension takes a checkpoint and, in a
// project that keeps notes in memory/, does the memory flush: the facts of
// the history being compacted go to memory/YYYY-MM-DD.md once per
// compaction.
func TestPiMemoryFlushAndCheckpoint(t *testing.T) {
	r := newPiRun(t, 128000, map[string]any{"keepRecentTokens": 40})
	os.MkdirAll(filepath.Join(r.home, "memory"), 0o755)
	xdg, state := filepath.Join(r.home, "xdg"), filepath.Join(r.home, "state")
	os.MkdirAll(filepath.Join(xdg, "ctxtool"), 0o755)
	os.WriteFile(filepath.Join(xdg, "ctxtool", "config.yaml"), []byte("compaction:\n  keepRecentTokens: 40\n"), 0o644)
	if out, err := r.ctxtool("install", "pi"); err != nil {
		t.Fatalf("install pi: %v\n%s", err, out)
	}
	p := r.start("XDG_CONFIG_HOME="+xdg, "CTXTOOL_STATE_DIR="+state)
	mem := filepath.Join(r.home, "memory", time.Now().Format("2006-01-02")+".md")
	for round := 1; round <= 2; round++ {
		for _, m := range prompts[:3] {
			if err := p.Prompt(m, turn); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Command(map[string]any{"type": "compact"}, turn); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(mem)
		if err != nil {
			t.Fatalf("round %d: no memory file: %v; pi's stderr:\n%s", round, err, p.Stderr())
		}
		if got := strings.Count(string(data), "db-7.internal:5432"); got != 1 {
			t.Errorf("round %d: %s holds db-7.internal:5432 %d times, want 1:\n%s", round, mem, got, data)
		}
	}
	states, _ := filepath.Glob(filepath.Join(state, "memflush", "*.json"))
	var st struct {
		Count *int `json:"memoryFlushCompactionCount"`
	}
	if len(states) != 1 {
		t.Fatalf("memory flush states %v", states)
	}
	if data, _ := os.ReadFile(states[0]); json.Unmarshal(data, &st) != nil || st.Count == nil || *st.Count != 1 {
		t.Errorf("memory flush state %s, want memoryFlushCompactionCount 1 (flushed before compactions 0 and 1)", data)
	}
	if cps, _ := filepath.Glob(filepath.Join(state, "context", "checkpoints", "*", "cp_*.yaml")); len(cps) != 2 {
		t.Errorf("checkpoints after two compactions: %v", cps)
	}
	if lines := ctxtoolLines(p.Stderr()); len(lines) != 0 {
		t.Errorf("[ctxtool] lines: %q", lines)
	}
}
