package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
)

// Checkpoints belong to the session they were taken from. x/session.jsonl
// and y/session.jsonl used to share the key "session", so restore --append
// x/session.jsonl appended y's working state to x and exited 0; a second
// restore --append appended the same text again.
func TestCheckpointIdentityAndAppendOnce(t *testing.T) {
	cleanEnv(t)
	root := t.TempDir()
	state := filepath.Join(root, "state")
	x := filepath.Join(root, "x", "session.jsonl")
	y := filepath.Join(root, "y", "session.jsonl")
	for i, p := range []string{x, y} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		sessiongen.Write(t, p, sessiongen.Options{Seed: uint64(40 + i), Turns: 6})
	}
	take := func(f string) checkpoint.TakeResult {
		out, _ := runOK(t, "--json", "--state-dir", state, "checkpoint", "--force", f)
		var r checkpoint.TakeResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	ry := take(y)
	if ry.SessionKey == "session" || ry.SessionKey == checkpoint.KeyFromFile(x) {
		t.Fatalf("y's key %q is not its own", ry.SessionKey)
	}
	cp := testkit.ReadFile(t, ry.Path)
	if !bytes.Contains(cp, []byte(`session_file: "`+y+`"`)) || !bytes.Contains(cp, []byte(`session_id: "`+ry.SessionKey+`"`)) {
		t.Errorf("the checkpoint must record the absolute path and the session id:\n%s", cp)
	}

	xBefore, _ := os.ReadFile(x)
	// x has no checkpoint of its own: nothing to append.
	if _, _, code := runCLI(t, "--state-dir", state, "restore", "--append", x); code == 0 {
		t.Errorf("restore --append x used another session's checkpoint")
	}
	// Naming y's key explicitly: refused, exit 1, x untouched.
	_, errOut, code := runCLI(t, "--state-dir", state, "restore", "--append", "--session-key", ry.SessionKey, x)
	if code != exitcode.Runtime || !strings.Contains(errOut, "another session") {
		t.Errorf("foreign checkpoint: exit %d %s", code, errOut)
	}
	if now, _ := os.ReadFile(x); !bytes.Equal(now, xBefore) {
		t.Fatal("x was changed by a restore of y's checkpoint")
	}

	// y's own checkpoint appends once; the second run appends nothing.
	yBefore, _ := os.ReadFile(y)
	out, errOut, code := runCLI(t, "--json", "--state-dir", state, "restore", "--append", y)
	if code != 0 || !strings.Contains(out, `"appended":true`) {
		t.Fatalf("first append: exit %d %s %s", code, out, errOut)
	}
	once, _ := os.ReadFile(y)
	if len(once) <= len(yBefore) {
		t.Fatal("nothing appended")
	}
	out, errOut, code = runCLI(t, "--json", "--state-dir", state, "restore", "--append", y)
	if code != 0 || !strings.Contains(out, `"appended":false`) || !strings.Contains(out, "already appended") {
		t.Fatalf("second append: exit %d %s %s", code, out, errOut)
	}
	if twice, _ := os.ReadFile(y); !bytes.Equal(twice, once) {
		t.Fatal("the same resume text was appended twice")
	}
	// A copy of y elsewhere is the same session (same id): allowed.
	z := filepath.Join(root, "z.jsonl")
	os.WriteFile(z, yBefore, 0o644)
	if _, errOut, code := runCLI(t, "--state-dir", state, "restore", "--append", z); code != 0 {
		t.Errorf("same session, another path: exit %d %s", code, errOut)
	}
}
