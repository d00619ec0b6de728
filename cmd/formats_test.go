package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// copyWild copies real transcripts into a temp dir (never into the repo).
func copyWild(t *testing.T, rels ...string) []string {
	t.Helper()
	dir := oracle.WildDir(t)
	tmp := t.TempDir()
	var out []string
	for _, r := range rels {
		b := testkit.ReadFile(t, filepath.Join(dir, r))
		p := filepath.Join(tmp, filepath.Base(r))
		testkit.WriteFile(t, p, b, 0o644)
		out = append(out, p)
	}
	return out
}

// Write commands refuse Claude Code and Codex files with exit 1 and a
// message that says why and what to do instead, leave them byte-identical
// (and no lock file behind), and still plan with --dry-run.
func TestWritesRefuseReadOnlyFormats(t *testing.T) {
	cleanEnv(t)
	files := copyWild(t, "claude-code/spotter-tool-heavy.jsonl", "codex/quelklef-shellws-rollout-compacted.jsonl",
		"codex/jaydenxsoe-ocodex-rollout-2025-08-26-oldformat.jsonl")
	state := t.TempDir()
	for _, f := range files {
		before, _ := os.ReadFile(f)
		runOK(t, "--state-dir", state, "checkpoint", f)
		for _, args := range [][]string{
			{"compact", f},
			{"compact", "--truncate", f},
			{"roll", "--trigger", "0.0000001", "--target-utilization", "0.00000001", "--min-keep-messages", "1", f},
			{"restore", "--append", f},
		} {
			_, stderr, code := runCLI(t, append([]string{"--state-dir", state}, args...)...)
			out := stderr
			if code != 1 || !strings.Contains(out+stdoutOf(t, state, args), "does not write") {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 and the read-only refusal", args, code, stderr)
			}
		}
		for _, args := range [][]string{{"compact", "--dry-run", f}, {"roll", "--dry-run", f}} {
			if _, stderr, code := runCLI(t, append([]string{"--state-dir", state}, args...)...); code != 0 {
				t.Errorf("%v: exit %d (%s); --dry-run plans must work on read-only formats", args, code, stderr)
			}
		}
		after, _ := os.ReadFile(f)
		if !bytes.Equal(before, after) {
			t.Errorf("%s changed", f)
		}
		if _, err := os.Stat(f + ".lock"); err == nil {
			t.Errorf("%s.lock left behind", f)
		}
		matches, _ := filepath.Glob(f + ".*")
		if len(matches) > 0 {
			t.Errorf("files written beside %s: %v", f, matches)
		}
	}
}

// stdoutOf reruns a command to read its stdout (compact and roll report
// per-file errors in their table).
func stdoutOf(t *testing.T, state string, args []string) string {
	out, _, _ := runCLI(t, append([]string{"--state-dir", state}, args...)...)
	return out
}

// An unknown JSONL file is named for what it looks like, never with pi's
// overwrite warning.
func TestUnknownFormatError(t *testing.T) {
	cleanEnv(t)
	p := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(p, []byte("[1,2,3]\n{\"foo\":1}\n"), 0o644)
	_, stderr, code := runCLI(t, "estimate", p)
	if code != 1 || !strings.Contains(stderr, "x.jsonl:1: line 1 looks like a JSON array") || strings.Contains(stderr, "overwrite") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	os.WriteFile(p, []byte("{\"event\":\"x\",\"data\":1}\n"), 0o644)
	_, stderr, _ = runCLI(t, "estimate", p)
	if !strings.Contains(stderr, "looks like a JSON object without a \"type\"") || !strings.Contains(stderr, "Claude Code") {
		t.Errorf("stderr %q", stderr)
	}
}

// Done-when: every real transcript in ../shared/fixtures/wild (pi, OpenClaw,
// Claude Code, Codex) is read by estimate, index/search, checkpoint and
// restore without error, and index cites lines inside each file. (lint is
// issue 10's command; it reads through the same transcript core.)
func TestWildFilesEveryReadingCommand(t *testing.T) {
	cleanEnv(t)
	dir := oracle.WildDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	if len(files) < 13 {
		t.Fatalf("%d wild files", len(files))
	}
	state := t.TempDir()
	runOK(t, append([]string{"--json", "estimate"}, files...)...)
	out, _ := runOK(t, "--state-dir", state, "--json", "index", dir)
	type stat struct {
		File    string `json:"file"`
		Indexed bool   `json:"indexed"`
		Chunks  int    `json:"chunks"`
		Lines   int    `json:"lines"`
	}
	stats := jsonLines[stat](t, out)
	if len(stats) != len(files) {
		t.Fatalf("index reported %d files, want %d", len(stats), len(files))
	}
	for _, s := range stats {
		if !s.Indexed || s.Chunks == 0 {
			t.Errorf("%s: indexed=%v, %d chunks", s.File, s.Indexed, s.Chunks)
		}
	}
	// A phrase only the Claude Code compaction summary and a Codex tool
	// output hold: found, cited inside those files.
	for _, q := range []string{"AshComputer", "xyflow onNodeDrag"} {
		out, stderr, code := runCLI(t, "--state-dir", state, "--json", "search", q)
		if code != 0 || out == "" {
			t.Errorf("search %q: exit %d, no hits (%s)", q, code, stderr)
		}
	}
	for _, f := range files {
		if _, stderr, code := runCLI(t, "--state-dir", state, "checkpoint", f); code != 0 {
			t.Errorf("checkpoint %s: exit %d: %s", f, code, stderr)
		}
		if _, stderr, code := runCLI(t, "--state-dir", state, "restore", f); code != 0 {
			t.Errorf("restore %s: exit %d: %s", f, code, stderr)
		}
	}
}
