package recall_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// A directory of small sessions indexes at one big session's rate only
// while what a run spends on each file beyond its lines stays small. These
// tests measure it without timing: allocations, and the full-text index's
// segments (one per commit), which do not depend on the machine's load.

// copies writes n copies of one generated session into a new directory
// and one file holding the same n copies back to back (the same lines,
// chunks and text in one file).
func copies(t *testing.T, n int) (files []string, joined string) {
	t.Helper()
	one := testkit.ReadFile(t, writeSessions(t, t.TempDir(), 1, 20)[0])
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("s%02d.jsonl", i))
		testkit.WriteFile(t, p, one, 0o600)
		files = append(files, p)
	}
	joined = filepath.Join(t.TempDir(), "all.jsonl")
	testkit.WriteFile(t, joined, bytes.Repeat(one, n), 0o600)
	return files, joined
}

// Opening, planning, the file's rows and bookkeeping, its read-ahead and
// scan allocate little per file: N files against one file of the same N
// copies. A buffer or a prepared statement per file shows here (a 1 MiB
// line buffer per file did, before the buffers were pooled); measured:
// about 130 KB (most of it the 64 KiB sniff buffer) and 97 allocations;
// the file's origin (agent and project: two columns read at both plans and
// written once, and the header's cwd) added 10.
func TestPerFileCost(t *testing.T) {
	const n = 40
	files, joined := copies(t, n)
	manyAllocs, manyBytes := indexCost(t, files)
	oneAllocs, oneBytes := indexCost(t, []string{joined})
	perAllocs := (float64(manyAllocs) - float64(oneAllocs)) / (n - 1)
	perBytes := (float64(manyBytes) - float64(oneBytes)) / (n - 1)
	t.Logf("per file: %.0f allocations, %.0f bytes (%d files: %d / %d B; one file: %d / %d B)",
		perAllocs, perBytes, n, manyAllocs, manyBytes, oneAllocs, oneBytes)
	if perAllocs > 110 || perBytes > 256<<10 {
		t.Errorf("each file costs %.0f allocations and %.0f bytes more than its lines, want <= 110 and <= 256 KiB", perAllocs, perBytes)
	}
}

// indexCost indexes paths in one run into a new SQLite index and returns
// what the run allocated (the collector off, so that pooled buffers stay).
func indexCost(t *testing.T, paths []string) (allocs, bytes uint64) {
	t.Helper()
	ix := openAt(t, filepath.Join(t.TempDir(), "index.sqlite"))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	indexRun(t, ix, paths)
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

func indexRun(t *testing.T, ix *recall.Index, paths []string) {
	t.Helper()
	err := ix.IndexFiles(context.Background(), paths, func(st recall.Stats, err error) {
		if err != nil {
			t.Errorf("%s: %v", st.File, err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Small files share a commit: every SQLite commit flushes the full-text
// index's pending terms as a new segment, and segments are merged again
// and again as they pile up (a commit per file indexed the issue's
// directory of 500 small sessions at a third of one big session's rate).
// A run over a few MB of sessions writes one segment, as one file of the
// same lines does.
func TestSmallFilesShareACommit(t *testing.T) {
	files, joined := copies(t, 40)
	for _, c := range []struct {
		name  string
		paths []string
		opts  []recall.Option
		want  func(int) bool
	}{
		{"one file", []string{joined}, nil, func(n int) bool { return n == 1 }},
		{"40 files", files, nil, func(n int) bool { return n == 1 }},
		// The check can fail: a batch per file makes a segment per file
		// (merged in part).
		{"40 files, a commit each", files, []recall.Option{recall.WithBatchBytes(1)}, func(n int) bool { return n > 1 }},
	} {
		ix := openAt(t, filepath.Join(t.TempDir(), "index.sqlite"), c.opts...)
		indexRun(t, ix, c.paths)
		n, err := recall.FTSSegments(ix)
		if err != nil {
			t.Fatal(err)
		}
		if !c.want(n) {
			t.Errorf("%s: %d full-text segments", c.name, n)
		}
	}
}
