package lint

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit/usagekit"
)

// piFiles are every pi-format session in testdata/ and ../shared/fixtures
// (the real pi and OpenClaw ones; Claude Code and Codex files have no pi
// loader to agree with).
func piFiles(t *testing.T) []string {
	root := oracle.ModuleRoot()
	files, _ := filepath.Glob(filepath.Join(root, "testdata", "*.jsonl"))
	files = append(files, oracle.Fixtures(t)...)
	tr, _ := filepath.Glob(filepath.Join(root, "pkg", "transcript", "testdata", "*.jsonl"))
	files = append(files, tr...)
	wild := oracle.WildDir(t)
	for _, sub := range []string{"pi", "openclaw"} {
		more, _ := filepath.Glob(filepath.Join(wild, sub, "*.jsonl"))
		files = append(files, more...)
	}
	ext, _ := filepath.Glob(filepath.Join(wild, "..", "external", "*.jsonl"))
	return append(files, ext...)
}

// The orphan rules count exactly what pi's loader reports (the oracle's
// orphanToolCalls / orphanToolResults over the context pi rebuilds).
func TestOrphanRulesAgreeWithPi(t *testing.T) {
	files := piFiles(t)
	pis := oracle.Check(t, false, false, files...)
	for i, f := range files {
		pi := pis[i]
		if !pi.Loads {
			continue
		}
		fs := lintFile(t, f, nil)
		calls, results := len(findingsOf(fs, RuleOrphanToolCall)), len(findingsOf(fs, RuleOrphanToolResult))
		if calls != pi.OrphanToolCalls || results != pi.OrphanToolResults {
			t.Errorf("%s: orphan calls %d results %d; pi %d / %d", filepath.Base(f), calls, results, pi.OrphanToolCalls, pi.OrphanToolResults)
		}
		if mal := len(findingsOf(fs, RuleMalformedLine)) + len(findingsOf(fs, RuleGluedLine)) + len(findingsOf(fs, RuleTornLine)); mal != len(pi.MalformedLines) {
			t.Errorf("%s: %d malformed-line findings; pi skipped lines %v", filepath.Base(f), mal, pi.MalformedLines)
		}
	}
	if len(files) < 15 {
		t.Fatalf("only %d files", len(files))
	}
}

// Generated sessions with orphans of every kind agree with pi too (the
// fixtures have no orphaned result and only a few orphaned calls).
func TestOrphanRulesAgreeWithPiOnGeneratedSessions(t *testing.T) {
	var files []string
	for _, rc := range ruleCases() {
		switch rc.rule {
		case RuleOrphanToolCall, RuleOrphanToolResult, RulePendingToolCall, RuleCompactionSplits, RuleCompactionKeptOff:
			p, _ := rc.make(t)
			files = append(files, p)
		}
	}
	pis := oracle.Check(t, false, false, files...)
	sawResult := false
	for i, f := range files {
		fs := lintFile(t, f, nil)
		calls, results := len(findingsOf(fs, RuleOrphanToolCall)), len(findingsOf(fs, RuleOrphanToolResult))
		if calls != pis[i].OrphanToolCalls || results != pis[i].OrphanToolResults {
			t.Errorf("session %d: orphan calls %d results %d; pi %d / %d", i, calls, results, pis[i].OrphanToolCalls, pis[i].OrphanToolResults)
		}
		sawResult = sawResult || results > 0
	}
	if !sawResult {
		t.Fatal("no generated session has an orphaned result")
	}
}

// Real files that show a rule trigger it at the line where the defect is.
func TestRealFixturesShowTheirDefects(t *testing.T) {
	cases := []struct {
		file string
		rule string
		line int
	}{
		{oracle.Fixture("pi-v1-session-d5dde00.jsonl"), RuleGluedLine, 440},
		{oracle.Fixture("pi-v1-compact-705ba5d.jsonl"), RuleGluedLine, 1013},
		{oracle.Fixture("pi-v1-before-compaction.jsonl"), RuleOrphanToolCall, 628},
		{filepath.Join(oracle.ModuleRoot(), "testdata", "edge-truncated.jsonl"), RuleMalformedLine, 16},
		{filepath.Join(oracle.ModuleRoot(), "testdata", "edge-truncated.jsonl"), RuleTornLine, 33},
		{filepath.Join(oracle.ModuleRoot(), "testdata", "edge-trailing-toolcall.jsonl"), RulePendingToolCall, 42},
		{filepath.Join(oracle.ModuleRoot(), "testdata", "sample-v3.jsonl"), RuleUnreachable, 77},
	}
	wild := oracle.WildDir(t)
	sirdeuce := filepath.Join(wild, "openclaw", "sirdeuce-0f87ff4a-5compactions-small.jsonl")
	cases = append(cases,
		// OpenClaw stored five empty-skeleton summaries that reclaim nothing;
		// the one in force is on line 24.
		struct {
			file, rule string
			line       int
		}{sirdeuce, RuleCompactionEmpty, 24},
		struct {
			file, rule string
			line       int
		}{sirdeuce, RuleCompactionNoGain, 24},
	)
	for _, c := range cases {
		fs := findingsOf(lintFile(t, c.file, nil), c.rule)
		found := false
		for _, f := range fs {
			if f.Line == c.line {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s at line %d: %+v", filepath.Base(c.file), c.rule, c.line, fs)
		}
	}
}

// The usage rule uses issue 9's classification: on the sessions whose usage
// lies (usagekit) it names the pinned and flat records, and it is quiet
// where usage is sound or only OpenClaw's zero-usage pseudo replies occur.
func TestUsageRuleOnLyingSessions(t *testing.T) {
	cases := usagekit.Write(t)
	want := map[string]string{"pinned-4096": "pinned", "flat-large": "flat", "mirror-zero": "", "header-only": "", "outgrows-window": ""}
	for _, c := range cases {
		fs := findingsOf(lintFile(t, c.File, nil), RuleUsageSuspect)
		var got []string
		for _, f := range fs {
			got = append(got, strings.TrimPrefix(f.Key, "usage:"))
		}
		if strings.Join(got, ",") != want[c.Name] {
			t.Errorf("%s: usage findings %v, want %q: %+v", c.Name, got, want[c.Name], fs)
		}
	}
	// The real OpenClaw session with Ollama's pinned 4096 shows it too.
	f := filepath.Join(oracle.WildDir(t), "openclaw", "archeoneocode-fad751fa.jsonl")
	fs := findingsOf(lintFile(t, f, nil), RuleUsageSuspect)
	if len(fs) == 0 || fs[0].Key != "usage:pinned" || !strings.Contains(fs[0].Message, "4096") {
		t.Fatalf("archeoneocode: %+v", fs)
	}
}

// Every real transcript in ../shared/fixtures/wild is read without error,
// and no credential is reported in files their authors sanitised.
func TestWildFilesLint(t *testing.T) {
	wild := oracle.WildDir(t)
	files, _ := filepath.Glob(filepath.Join(wild, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no wild files")
	}
	for _, f := range files {
		r, err := File(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if r.Lines == 0 {
			t.Errorf("%s: no lines read", f)
		}
		for _, x := range findingsOf(r.Findings, RuleSecret) {
			t.Errorf("%s: unexpected secret finding %s", filepath.Base(f), x.Message)
		}
		for _, x := range r.Findings {
			if strings.TrimSpace(x.Message) == "" || x.Line < 0 {
				t.Errorf("%s: bad finding %+v", filepath.Base(f), x)
			}
		}
	}
}
