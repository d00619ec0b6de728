package compaction

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// planAlloc is what a dry run of compact allocates on a generated session
// of turns turns beyond loading it (transcript.Load's share is the
// loader's), and the session's entry count.
func planAlloc(t *testing.T, turns int) (bytes uint64, entries int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "s.jsonl")
	// one compaction every 50 turns: the 1 GB bench session's shape (a
	// long history behind a context of the same size)
	o := sessiongen.Options{Seed: 5, Turns: turns, Compactions: turns / 50, ToolResultBytes: 300, NoLineIndex: true}
	sessiongen.Write(t, file, o)
	allocated := func(f func()) uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		f()
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc - before
	}
	var s *transcript.Session
	load := allocated(func() {
		var err error
		if s, err = transcript.Load(file); err != nil {
			t.Fatal(err)
		}
	})
	entries = len(s.Entries)
	s.Close()
	run := allocated(func() {
		res, err := Run(context.Background(), file, Options{Settings: Settings{Force: true}, Summarizer: Extractive{}, DryRun: true})
		if err != nil || res.SummarizedMessages == 0 {
			t.Fatalf("dry run: %v (%+v)", err, res)
		}
	})
	return run - load, entries
}

// Planning and summarising a compaction allocates a bounded amount per
// entry of history on top of the load: the path is walked a few times and
// the context measured twice (before, and with the entry appended), but
// nothing is kept per entry beyond that (~150 bytes per entry). A path
// grown by append on every walk, a map of every tool call, a struct per
// usage span copied for the fit, a reason string per stale usage record
// and two ints per entry in the usage audit's walk were 454 bytes per
// entry here (460 MB beyond the load of the 1 GB bench session, which
// peaked 290 MB above estimate's RSS).
func TestPlanAllocatesLittlePerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("generates two sessions")
	}
	const bound = 250 // bytes per further entry
	planAlloc(t, 200) // the extractive summariser's tokenizer loads once
	a, na := planAlloc(t, 2000)
	b, nb := planAlloc(t, 8000)
	perEntry := float64(int64(b)-int64(a)) / float64(nb-na)
	t.Logf("%d → %d entries: %.0f bytes allocated beyond the load per further entry", na, nb, perEntry)
	if perEntry > bound {
		t.Errorf("compact --dry-run allocated %.0f bytes per further entry beyond the load, over %d", perEntry, bound)
	}
}
