package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
)

// TestCheckInputStoreSession: "store.sqlite#<key>" names a session of an
// existing OpenClaw store, not a missing file (estimate, checkpoint and
// compact --dry-run read store sessions); a missing store is exit 2.
func TestCheckInputStoreSession(t *testing.T) {
	db := filepath.Join(t.TempDir(), "openclaw-agent.sqlite")
	testkit.WriteFile(t, db, []byte("SQLite format 3\x00"), 0o644)
	if err := checkInput(db + "#agent:main:main"); err != nil {
		t.Errorf("store session: %v", err)
	}
	err := checkInput(db + ".gone#agent:main:main")
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != exitcode.Usage {
		t.Errorf("missing store: %v, want a usage error", err)
	}
}

// A gate that saw no input fails: lint, roll, index and checkpoint
// --capture on a directory without a session file exit 2 and say so,
// unless --allow-empty says an empty input is expected. Before, each
// printed "0 files" and exited 0, so a CI step whose recorder wrote
// nothing went green.
func TestEmptyInputFailsUnlessAllowed(t *testing.T) {
	cleanEnv(t)
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("not a session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	for _, args := range [][]string{
		{"lint", empty},
		{"roll", empty, "--dry-run"},
		{"index", empty, "--state-dir", state},
		{"checkpoint", "--capture", empty, "--state-dir", state},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, errOut, code := runCLI(t, args...)
			if code != exitcode.Usage || !strings.Contains(errOut, "no session files in "+empty) || !strings.Contains(errOut, "--allow-empty") {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the path and --allow-empty", args, code, errOut)
			}
			runOK(t, append(args, "--allow-empty")...)
		})
	}
	// A directory that holds a session is not empty.
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "s.jsonl"), testkit.ReadFile(t, "../testdata/sample-v3.jsonl"), 0o644)
	runOK(t, "lint", dir, "--fail-on", "never")
}
