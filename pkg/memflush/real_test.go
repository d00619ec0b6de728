package memflush_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/memflush"
)

// TestFlushRealSessions: real pi and OpenClaw transcripts (copied: a
// sessions.json beside a shared fixture must never be written) flush once,
// every note line is distinct, and a second flush writes nothing.
func TestFlushRealSessions(t *testing.T) {
	files := oracle.Fixtures(t)
	wild := oracle.WildDir(t)
	for _, d := range []string{"pi", "openclaw"} {
		m, _ := filepath.Glob(filepath.Join(wild, d, "*.jsonl"))
		files = append(files, m...)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			dir := t.TempDir()
			data := testkit.ReadFile(t, f)
			cp := filepath.Join(dir, filepath.Base(f))
			testkit.WriteFile(t, cp, data, 0o644)
			ws, state := filepath.Join(dir, "ws"), filepath.Join(dir, "state")
			o := options(t, cp, ws, state)
			o.Force = true
			r, err := memflush.Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Flushed {
				if r.RegionMessages == 0 {
					return // nothing compaction would summarise (e.g. it ends in a compaction)
				}
				t.Fatalf("not flushed: %+v", r)
			}
			if len(r.Entries) > 0 {
				data := testkit.ReadFile(t, r.MemoryFile)
				seen := map[string]bool{}
				for _, l := range strings.Split(string(data), "\n") {
					if strings.HasPrefix(l, "- ") {
						if seen[l] {
							t.Fatalf("note written twice: %s", l)
						}
						seen[l] = true
					}
				}
			}
			if r2, err := memflush.Run(context.Background(), o); err != nil || r2.Flushed {
				t.Fatalf("second flush: %+v %v", r2, err)
			}
		})
	}
}
