package lint

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/cputime"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// compactedSession writes a v3 session of n rounds, each a user message, an
// assistant reply and a compaction that keeps that user message: the shape
// of a long-lived session (a 1 GB one has ~1,800 compactions).
func compactedSession(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i := 0; i < n; i++ {
		u, a, c := fmt.Sprintf("u%07d", i), fmt.Sprintf("a%07d", i), fmt.Sprintf("c%07d", i)
		fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"step %d"}}`+"\n", u, parent, i)
		fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":"%s","timestamp":"2026-03-02T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done %d"}],"stopReason":"stop"}}`+"\n", a, u, i)
		fmt.Fprintf(&b, `{"type":"compaction","id":"%s","parentId":"%s","timestamp":"2026-03-02T09:00:03.000Z","summary":"summary %d","firstKeptEntryId":"%s","tokensBefore":100}`+"\n", c, a, i, u)
		parent = `"` + c + `"`
	}
	f := filepath.Join(t.TempDir(), fmt.Sprintf("c%d.jsonl", n))
	testkit.WriteFile(t, f, []byte(b.String()), 0o644)
	return f
}

// Lint's time grows linearly with the number of compactions: each one's
// first kept entry was found by scanning the path before it (72 s of a
// 1 GB lint). Ten times the compactions must cost about ten times the time,
// not a hundred; the best of three runs of each size, in CPU time: on a
// loaded machine wall time swung the ratio from 12x to 80x between runs of
// the same binary.
func TestLintLinearInCompactions(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	small, large := compactedSession(t, 3000), compactedSession(t, 30000)
	opts := &Options{Rules: DefaultRuleSet()}
	best := func(f string) time.Duration {
		var min time.Duration
		for i := 0; i < 3; i++ {
			t0 := cputime.Used()
			r, err := File(f, opts)
			if err != nil {
				t.Fatal(err)
			}
			_ = r
			if d := cputime.Used() - t0; min == 0 || d < min {
				min = d
			}
		}
		return min
	}
	ts, tl := best(small), best(large)
	ratio := float64(tl) / float64(ts)
	t.Logf("3,000 compactions %v, 30,000 %v of CPU: %.1fx", ts, tl, ratio)
	// Linear is ~10x; the quadratic scan was over 100x. 40 leaves room for
	// a loaded machine (27x seen at load 8 on 2 cores, GC of the large run).
	if ratio > 40 {
		t.Errorf("10x the compactions took %.1fx the time (linear is ~10x, the old quadratic scan over 100x)", ratio)
	}
}
