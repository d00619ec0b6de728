package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/factgen"
	"github.com/ctxtool/ctxtool/internal/oracle"
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

// compact --truncate leaves a normal session (issue 32): estimate reports
// the next request compact announced (not the stale pre-compaction usage
// of the kept tail), lint finds nothing wrong with the root compaction,
// and a dry run has nothing left to compact. Run on a generated session
// and, when ../shared is there, on a real OpenClaw one.
func TestTruncatedSessionIsNormal(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.jsonl")
	factgen.Write(t, gen, factgen.Options{Seed: 11, Facts: 10, Turns: 40})
	t.Run("generated", func(t *testing.T) { checkTruncatedIsNormal(t, gen) })
	t.Run("openclaw-muskfanx", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(oracle.WildDir(t), "openclaw/muskfanx-d27ecd5a-3compactions.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, "muskfanx.jsonl")
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		checkTruncatedIsNormal(t, f)
	})
}

func checkTruncatedIsNormal(t *testing.T, f string) {
	state := t.TempDir()
	{
		type compactOut struct {
			Compacted         bool
			WouldCompact      *bool
			Reason            string
			NextRequestTokens int
			TokensBefore      int
		}
		out, _ := runOK(t, "--state-dir", state, "--json", "compact", "--dry-run", "--summarizer", "extractive", f)
		var planned compactOut
		if err := json.Unmarshal([]byte(out), &planned); err != nil {
			t.Fatal(err)
		}
		out, _ = runOK(t, "--state-dir", state, "--json", "compact", "--truncate", "--idle", "0", "--summarizer", "extractive", f)
		var res compactOut
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if !res.Compacted {
			t.Fatalf("%s: not truncated: %s", f, out)
		}
		out, _ = runOK(t, "--json", "estimate", f)
		var est struct{ Tokens int }
		if err := json.Unmarshal([]byte(out), &est); err != nil {
			t.Fatal(err)
		}
		if d := est.Tokens - res.NextRequestTokens; d*50 > res.NextRequestTokens || -d*50 > res.NextRequestTokens {
			t.Errorf("%s: estimate %d, compact announced %d (more than 2%% apart)", filepath.Base(f), est.Tokens, res.NextRequestTokens)
		}
		// not the stale usage: near what the appended compaction would give
		if d := est.Tokens - planned.NextRequestTokens; d*10 > planned.NextRequestTokens || -d*10 > planned.NextRequestTokens {
			t.Errorf("%s: estimate %d after --truncate, %d for the same compaction appended", filepath.Base(f), est.Tokens, planned.NextRequestTokens)
		}
		lintOut, lintErr, code := runCLI(t, "lint", "--fail-on", "warning", f)
		if code != 0 {
			t.Errorf("%s: lint exit %d:\n%s%s", filepath.Base(f), code, lintOut, lintErr)
		}
		out, _ = runOK(t, "--state-dir", state, "--json", "compact", "--dry-run", "--summarizer", "extractive", f)
		var again compactOut
		if err := json.Unmarshal([]byte(out), &again); err != nil {
			t.Fatal(err)
		}
		if again.WouldCompact == nil || *again.WouldCompact || !strings.Contains(again.Reason, "already compacted") {
			t.Errorf("%s: a dry run after --truncate would compact again: %s", filepath.Base(f), out)
		}
	}
}
