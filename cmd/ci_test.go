package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
)

// The CI gate: --fail-over names every file that crossed it and says so per
// file in the JSON; exit 3 wins over files that could not be read (both
// reported); a bare small number is refused instead of meaning tokens.
func TestFailOverNamesFilesAndWinsOverReadErrors(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	big, _ := sampleCopy(t) // ~63k tokens: 31.7% of 200k
	small := filepath.Join(dir, "small.jsonl")
	sessiongen.Write(t, small, sessiongen.Options{Seed: 3, Turns: 2})
	unreadable := filepath.Join(dir, "torn.jsonl")
	os.WriteFile(unreadable, []byte("not json at all\n"), 0o644)
	missing := filepath.Join(dir, "missing.jsonl")

	out, errOut, code := runCLI(t, "--json", "estimate", "--fail-over", "20%", big, small, unreadable, missing)
	if code != exitcode.Threshold {
		t.Fatalf("exit %d, want 3 (the gate wins over read errors):\n%s", code, errOut)
	}
	if !strings.Contains(errOut, big+": ") || !strings.Contains(errOut, "crosses --fail-over 20%") || strings.Contains(errOut, small+": ") {
		t.Errorf("stderr must name the file that crossed, and only it:\n%s", errOut)
	}
	if !strings.Contains(errOut, "crossed by 1 of 4 files") || !strings.Contains(errOut, "could not be read") || !strings.Contains(errOut, missing+": no such file") {
		t.Errorf("both the gate and the unreadable files must be reported:\n%s", errOut)
	}
	over := map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		over[m["file"].(string)] = m["failOver"]
	}
	if over[big] != true || over[small] != false || over[missing] != nil {
		t.Errorf("failOver per file: %v", over)
	}
	// Without a crossing, a missing file is exit 2 (the one rule for
	// missing paths), an unreadable one exit 1.
	if _, _, code := runCLI(t, "estimate", "--fail-over", "99%", big, missing); code != exitcode.Usage {
		t.Errorf("missing file, no crossing: exit %d, want 2", code)
	}
	if _, _, code := runCLI(t, "estimate", big, unreadable); code != exitcode.Runtime {
		t.Errorf("unreadable file: exit %d, want 1", code)
	}
	// --fail-over 80 used to mean 80 tokens.
	_, errOut, code = runCLI(t, "estimate", "--fail-over", "80", big)
	if code != exitcode.Usage || !strings.Contains(errOut, "80%") || !strings.Contains(errOut, "at least 1000") {
		t.Errorf("--fail-over 80: exit %d %s", code, errOut)
	}
	if _, _, code := runCLI(t, "estimate", "--fail-over", "60000", big); code != exitcode.Threshold {
		t.Errorf("--fail-over 60000 (tokens): exit %d, want 3", code)
	}
}

// One exit code for a path that does not exist, in every command; the
// batch commands warn and go on while another path exists.
func TestMissingPathExitCodeIsTheSameEverywhere(t *testing.T) {
	cleanEnv(t)
	f, _ := sampleCopy(t)
	state := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	for _, args := range [][]string{
		{"estimate", missing},
		{"compact", "--summarizer", "extractive", missing},
		{"roll", missing},
		{"index", missing},
		{"checkpoint", missing},
		{"checkpoint", "--capture", missing},
		{"restore", missing},
		{"restore", "--append", missing},
		{"flush", "--workspace", state, missing},
		{"export", missing},
		{"budget", missing},
	} {
		_, errOut, code := runCLI(t, append([]string{"--state-dir", state}, args...)...)
		if code != exitcode.Usage || !strings.Contains(errOut, "nope.jsonl") {
			t.Errorf("%v: exit %d, want 2 naming the path:\n%s", args, code, errOut)
		}
	}
	for _, args := range [][]string{
		{"roll", "--dry-run", missing, f},
		{"index", missing, f},
		{"checkpoint", "--capture", missing, f},
	} {
		_, errOut, code := runCLI(t, append([]string{"--state-dir", state}, args...)...)
		if code != 0 || !strings.Contains(errOut, "warning: "+missing+": no such file or directory; skipped") {
			t.Errorf("%v: exit %d, want 0 with a warning:\n%s", args, code, errOut)
		}
	}
}
