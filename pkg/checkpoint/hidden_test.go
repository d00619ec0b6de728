package checkpoint

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
)

// A compaction that starts a new root (Claude Code's compact_boundary,
// Codex's compacted: pkg/formats makes them roots) hides nothing from the
// checkpoint: the branch it summarised is folded in, as pi's chained
// compactions are. Before, a checkpoint named the files and tools of the
// earlier part only while the capture still held them, so the second
// checkpoint of testdata/current/claude-code-2.1.jsonl lost the Read of
// a.txt and the Read tool (files_read [] tools [Bash]).
func TestCheckpointKeepsWhatACompactionRootHid(t *testing.T) {
	file := filepath.Join(oracle.ModuleRoot(), "testdata", "current", "claude-code-2.1.jsonl")
	st := &Store{StateDir: filepath.Join(t.TempDir(), "state")}
	var cps []*Checkpoint
	for i := 0; i < 2; i++ {
		res, err := Take(TakeOptions{File: file, SessionKey: "k", Store: st, Force: true, Now: func() time.Time { return goldenNow }})
		if err != nil || !res.Written {
			t.Fatalf("checkpoint %d: %v %+v", i+1, err, res)
		}
		cp, _, err := st.Latest("k")
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, cp)
	}
	for i, cp := range cps {
		r := cp.Resources
		if !slices.Contains(r.FilesRead, "/home/dev/proj/a.txt") || !slices.Contains(r.ToolsUsed, "Read") {
			t.Errorf("checkpoint %d lost what came before the compaction: read %q, tools %q", i+1, r.FilesRead, r.ToolsUsed)
		}
	}
}
