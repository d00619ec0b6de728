package compaction

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// planAlloc is what a dry run of compact allocates on a generated session
// of turns turns beyond loading it: its plan and summarise steps, run on a
// session loaded outside the measurement. (Subtracting a measured load
// from a measured Run left the loader's scheduling-dependent buffers in
// the figure: -390 to +280 bytes per entry from run to run.)
func planAlloc(t *testing.T, turns int) (bytes uint64, entries int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "s.jsonl")
	// one compaction every 50 turns: the 1 GB bench session's shape (a
	// long history behind a context of the same size)
	o := sessiongen.Options{Seed: 5, Turns: turns, Compactions: turns / 50, ToolResultBytes: 300, NoLineIndex: true}
	sessiongen.Write(t, file, o)
	opts, err := Options{Settings: Settings{Force: true}, Summarizer: Extractive{}, DryRun: true}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.Load(t, file)
	defer s.Close()
	res := newResult(file, opts)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	set, p, err := plan(s, opts, res)
	if p == nil {
		t.Fatalf("plan: nothing to compact (%v, %s)", err, res.Reason)
	}
	pl, err := summarize(context.Background(), s, p, set, opts)
	if err != nil {
		t.Fatalf("summarise: %v", err)
	}
	finishResult(res, pl, set, opts, Usage{})
	runtime.ReadMemStats(&ms)
	if res.SummarizedMessages == 0 {
		t.Fatalf("dry run summarised nothing (%+v)", res)
	}
	return ms.TotalAlloc - before, len(s.Entries)
}

// Planning and summarising a compaction allocates a bounded amount per
// entry of history on top of the load: the path is walked a few times and
// the context measured twice (before, and with the entry appended), but
// nothing is kept per entry beyond that (~165 bytes per entry). A path
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
