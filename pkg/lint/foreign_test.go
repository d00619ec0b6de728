package lint

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// artifactRules are the findings that, on a Claude Code or Codex file, can
// only come from reading the translation as if it were a pi file: history
// a compaction replaced by design, a compaction that starts a new history
// (nothing before it on the path, no summary needed), replayed history's
// zero usage.
var artifactRules = []string{RuleUnreachable, RuleCompactionNoGain, RuleCompactionEmpty, RuleUsageSuspect}

// Generated Claude Code and Codex sessions with compactions (true usage,
// one chain) lint clean of every artifact rule, and with no error.
func TestLintForeignGeneratedHasNoArtifacts(t *testing.T) {
	dir := t.TempDir()
	gens := map[string]func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error){
		"claude-code.jsonl": sessiongen.GenerateClaudeCode,
		"codex.jsonl":       sessiongen.GenerateCodex,
	}
	for name, gen := range gens {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gen(f, sessiongen.AgentOptions{Seed: 7, Turns: 30, Compactions: 2}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, fd := range lintFile(t, p, nil) {
			if fd.Severity == Error || slices.Contains(artifactRules, fd.Rule) {
				t.Errorf("%s:%d: %s (%s): %s", name, fd.Line, fd.Rule, fd.Severity, fd.Message)
			}
		}
	}
}

// Every real transcript of ../shared/fixtures/wild lints without an error
// finding; the Codex file compacted on line 1821 (a replacement history of
// 99 items on that line) has no finding there, and the Claude Code file
// compacted on line 755 neither reports the history its compact_boundary
// replaced nor "reclaims nothing" for it.
func TestLintWildTranscripts(t *testing.T) {
	wild := oracle.WildDir(t)
	files, _ := filepath.Glob(filepath.Join(wild, "*", "*.jsonl"))
	if len(files) < 13 {
		t.Fatalf("only %d wild files", len(files))
	}
	for _, p := range files {
		for _, fd := range lintFile(t, p, nil) {
			if fd.Severity == Error {
				t.Errorf("%s:%d: %s: %s", filepath.Base(p), fd.Line, fd.Rule, fd.Message)
			}
		}
	}
	for _, c := range []struct {
		file  string
		line  int
		rules []string
	}{
		{"codex/quelklef-shellws-rollout-compacted.jsonl", 1821, artifactRules},
		{"codex/quelklef-shellws-rollout-compacted.jsonl", 2, []string{RuleUnreachable}},
		{"claude-code/spotter-4d5611e5-compact.jsonl", 755, []string{RuleCompactionNoGain, RuleCompactionEmpty}},
		{"claude-code/spotter-4d5611e5-compact.jsonl", 7, []string{RuleUnreachable}},
	} {
		for _, fd := range lintFile(t, filepath.Join(wild, c.file), nil) {
			if fd.Line == c.line && slices.Contains(c.rules, fd.Rule) {
				t.Errorf("%s:%d: %s: %s", c.file, fd.Line, fd.Rule, fd.Message)
			}
		}
	}
}
