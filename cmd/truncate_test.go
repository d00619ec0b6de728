package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// Nothing leaves search: a fact found before compact --truncate is found
// after it and after the next `index` of the directory (the dropped lines
// used to be only in the backup, which index skips).
func TestTruncateKeepsDroppedLinesSearchable(t *testing.T) {
	cleanEnv(t)
	dir, state := t.TempDir(), t.TempDir()
	f := filepath.Join(dir, "s.jsonl")
	facts := recalltest.Write(t, f, recalltest.Options{Seed: 7, Turns: 40, Facts: recalltest.DefaultFacts(7)})
	run := func(args ...string) string {
		t.Helper()
		out, _ := runOK(t, append([]string{"--state-dir", state}, args...)...)
		return out
	}
	// found: a hit for the fact's query cites the fact's line, in the
	// session or in a backup of it.
	found := func(fc recalltest.Fact) bool {
		for _, h := range jsonLines[recall.Hit](t, run("--json", "search", "--max-results", "3", fc.Query)) {
			if strings.HasPrefix(h.Path, f) && h.StartLine <= fc.Line && fc.Line <= h.EndLine {
				return true
			}
		}
		return false
	}
	run("index", dir)
	// The earliest fact: in the part --truncate drops.
	early := facts[0]
	for _, fc := range facts {
		if fc.Line < early.Line {
			early = fc
		}
	}
	if !found(early) {
		t.Fatalf("fact %q not found before the truncation", early.Query)
	}
	out := run("--json", "compact", "--truncate", "--idle", "0", "--summarizer", "extractive", "--keep-recent-tokens", "2000", f)
	var res struct {
		Compacted, BackupIndexed bool
		Backup                   string
		FirstKeptLine            int
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Backup == "" || !res.BackupIndexed || res.FirstKeptLine <= early.Line {
		t.Fatalf("truncate did not drop line %d or did not index the backup: %s", early.Line, out)
	}
	if !found(early) {
		t.Fatalf("fact %q lost right after --truncate", early.Query)
	}
	run("index", dir) // re-indexes the rewritten file; prunes nothing that exists
	if !found(early) {
		t.Fatalf("fact %q lost after the next index", early.Query)
	}
}
