package hooks

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
)

// recorded is the statusline JSON the real Claude Code 2.1.332 sent
// (testdata/agent), with its session and transcript replaced and, when
// window > 0, its window and usage set (the recorded session ran on a
// 1M-window model and had one answer).
func recorded(t *testing.T, sid, path string, window, input, cacheRead int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "agent", "claude-code-2.1.332-statusline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["session_id"], m["transcript_path"] = sid, path
	if window > 0 {
		cw := m["context_window"].(map[string]any)
		cw["context_window_size"] = window
		cu := cw["current_usage"].(map[string]any)
		cu["input_tokens"], cu["cache_read_input_tokens"], cu["cache_creation_input_tokens"] = input, cacheRead, 0
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// The recorded statusline as Claude Code sent it: a 1M window, the
// usage of its one answer, no compaction yet.
func TestGaugeReadsClaudeCodesStatusline(t *testing.T) {
	e := newEnv(t)
	p := filepath.Join(e.home, ".claude", "projects", "p", "s.jsonl")
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p, nil, 0o600)
	in, err := ParseStatus(strings.NewReader(recorded(t, "s", p, 0, 0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	g := status(t, e.h, in)
	if g.Window != 1_000_000 || g.Used != 14115 || g.Limit != 967_000 || g.Basis != "claude-code formula" || g.String() != "ctx 14.1k/967k 1% · 953k to auto-compact" {
		t.Errorf("gauge = %+v %q", g, g.String())
	}
}

// copyLines copies the first n lines of src (all when n < 0) to dst.
func copyLines(t *testing.T, src, dst string, n int) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	os.MkdirAll(filepath.Dir(dst), 0o700)
	out, _ := os.Create(dst)
	defer out.Close()
	r := bufio.NewReaderSize(in, 1<<20)
	for i := 0; n < 0 || i < n; i++ {
		l, err := r.ReadBytes('\n')
		out.Write(l)
		if err != nil {
			break
		}
	}
}

// The real Claude Code session that compacted automatically at 170,251
// tokens (compact_boundary preTokens): before the compaction, the gauge's
// point (Claude Code's rule on a 200k window) is within 2% of it; after,
// the session's own evidence is the point.
func TestGaugeAgreesWithClaudeCodesCompaction(t *testing.T) {
	src := filepath.Join(oracle.WildDir(t), "claude-code", "spotter-4d5611e5-compact.jsonl")
	const pre = 170251
	e := newEnv(t)
	before := filepath.Join(e.home, ".claude", "projects", "p", "before.jsonl")
	copyLines(t, src, before, 753) // line 754 is the compact_boundary
	in, err := ParseStatus(strings.NewReader(recorded(t, "before", before, 200_000, 1, 164_830)))
	if err != nil {
		t.Fatal(err)
	}
	g := status(t, e.h, in)
	off := math.Abs(float64(g.Limit-pre)) / pre
	t.Logf("before the compaction: %s (%s), point %d vs preTokens %d: %.2f%% apart", g, g.Basis, g.Limit, pre, off*100)
	if g.Basis != "claude-code formula" || off > 0.02 {
		t.Errorf("point %d (%s) is %.2f%% from the agent's %d; want within 2%%", g.Limit, g.Basis, off*100, pre)
	}
	after := filepath.Join(e.home, ".claude", "projects", "p", "after.jsonl")
	copyLines(t, src, after, -1)
	in, _ = ParseStatus(strings.NewReader(recorded(t, "after", after, 200_000, 1, 30_000)))
	if g = status(t, e.h, in); g.Limit != pre || g.Basis != "compact_boundary" {
		t.Errorf("after the compaction: %+v; want the session's preTokens %d", g, pre)
	}
	// Without current_usage the transcript's last usage is the size.
	in, _ = ParseStatus(strings.NewReader(`{"session_id":"before","transcript_path":"` + before + `","context_window":{"context_window_size":200000}}`))
	if g = status(t, e.h, in); g.Used < 160_000 || g.Used > pre {
		t.Errorf("used from the transcript = %+v; want the last answer's usage (~164.8k)", g)
	}
	// Each render reads only the new lines: time it.
	var worst time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		in, _ = ParseStatus(strings.NewReader(recorded(t, "after", after, 200_000, 1, 30_000)))
		if _, err := e.h.Status(in, ClaudeCode); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	t.Logf("render on a %d-line transcript already scanned: worst of 20 %s", 1512, worst)
}

func TestClaudeAutoCompactPoint(t *testing.T) {
	if got := ClaudeAutoCompactPoint(200_000); got != 167_000 {
		t.Errorf("200k window: %d, want 167000", got)
	}
	t.Setenv("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")
	if got := ClaudeAutoCompactPoint(200_000); got != 90_000 {
		t.Errorf("50%% override: %d, want 90000", got)
	}
}

// status renders until the transcript is read to its end (each render
// reads for a bounded time), as a statusline refreshed on every turn does.
func status(t *testing.T, h *Handler, in *StatusInput) *Gauge {
	t.Helper()
	for i := 0; ; i++ {
		g, err := h.Status(in, ClaudeCode)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Behind {
			return g
		}
		if i == 200 {
			t.Fatalf("still behind after %d renders", i)
		}
	}
}
