package hooks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A hook answers within 200 ms p95 on a 100 MB transcript: it reads only
// the lines appended since the last hook, for a bounded time; the first
// hook of a session starts at the transcript's last 8 MB.
func TestHooksAreFastOnA100MBTranscript(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB transcript")
	}
	e := newEnv(t)
	p := filepath.Join(e.home, ".claude", "projects", "big", "s.jsonl")
	os.MkdirAll(filepath.Dir(p), 0o700)
	f, _ := os.Create(p)
	w := bufio.NewWriterSize(f, 1<<20)
	filler := strings.Repeat("The build log says everything passed again. ", 40)
	for i := 0; w.Size() >= 0; i++ {
		if i%50 == 0 {
			w.WriteString(ccLine("user", fmt.Sprintf("Never touch shard-%d without a backup. Ticket OPS-%d.", i, i), nil))
		} else {
			w.WriteString(ccLine("assistant", []map[string]any{{"type": "text", "text": filler}}, nil))
		}
		if fi, _ := f.Stat(); i%1000 == 0 && fi.Size() >= int64(size()) {
			break
		}
		if i%1000 == 999 {
			w.Flush()
		}
	}
	w.Flush()
	f.Close()
	fi, _ := os.Stat(p)
	var spawned []string
	e.h.Spawn = func(file, key string) error { spawned = append(spawned, key); return nil }
	e.h.Count = nil // the hook's own counter
	start := time.Now()
	if _, err := e.hook(t, ClaudeCode, hookJSON("s", p, "Stop")); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	events := []string{"UserPromptSubmit", "Stop", "PreCompact", "SessionStart", "PostCompact"}
	// The machine is shared (2 cores, other test binaries): a round whose
	// p95 is over the bound is measured again, up to three rounds.
	var p95 time.Duration
	for round := 1; round <= 3; round++ {
		var ds []time.Duration
		for i := 0; i < 40; i++ {
			appendTo(t, p, ccLine("user", fmt.Sprintf("We decided to retry %d times.", i), nil), ccLine("assistant", []map[string]any{{"type": "text", "text": filler}}, nil))
			ev := events[i%len(events)]
			js := hookJSON("s", p, ev, "source", "compact", "compact_summary", "short")
			start := time.Now()
			a, err := e.hook(t, ClaudeCode, js)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
			if ev == "PreCompact" && !strings.Contains(a.Stdout, "Never touch shard-") {
				t.Fatalf("PreCompact instructions lack the planted constraints:\n%s", a.Stdout)
			}
		}
		slices.Sort(ds)
		p95 = ds[len(ds)*95/100]
		t.Logf("%d MB transcript: first hook (reads the last 8 MB, time-bounded) %s; round %d, 40 hooks: median %s, p95 %s, max %s",
			fi.Size()>>20, first.Round(time.Millisecond), round, ds[len(ds)/2].Round(time.Millisecond), p95.Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
		if p95 <= 200*time.Millisecond {
			break
		}
	}
	if len(spawned) == 0 {
		t.Errorf("PreCompact on a 100 MB transcript did not hand its checkpoint to a detached process")
	}
	if p95 > 200*time.Millisecond {
		t.Errorf("p95 %s, over 200 ms in three rounds", p95)
	}
}

// size is the transcript size (CTXTOOL_BENCH_MB, default 100 MB).
func size() int {
	var mb int
	if _, err := fmt.Sscan(os.Getenv("CTXTOOL_BENCH_MB"), &mb); err == nil && mb > 0 {
		return mb << 20
	}
	return 100 << 20
}
