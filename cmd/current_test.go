package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
)

// export refuses what is not a session (issue 35: a binary file exported
// as a 39 MB "pi v3 session"), and writes nothing.
func TestExportRefusesNonSessions(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i*7 + 3)
	}
	head, err := os.ReadFile("../testdata/sample-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	headless := head[strings.IndexByte(string(head), '\n')+1:]
	for name, data := range map[string][]byte{"empty.jsonl": nil, "binary.jsonl": bin, "headless.jsonl": headless} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out-"+name)
		_, stderr, code := runCLI(t, "export", p, "--to", "pi", "-o", out)
		if code == 0 || !strings.Contains(stderr, name) {
			t.Errorf("export %s: exit %d, stderr %q; want a refusal naming the file", name, code, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("export %s wrote %s", name, out)
		}
	}
}

// The window a source states travels with its export, and every
// command's JSON names where its window came from.
func TestWindowFromEvidence(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	state := t.TempDir()
	for _, c := range []struct{ file, window, source string }{
		{"../testdata/current/codex-0.171.jsonl", "258400", "Codex model_context_window"},
		{"../testdata/current/claude-code-2.1.jsonl", "200000", "Claude Code auto-compaction at 171204 tokens"},
	} {
		out := filepath.Join(dir, filepath.Base(c.file)+".pi.jsonl")
		runOK(t, "export", c.file, "--to", "pi", "-o", out)
		for _, f := range []string{c.file, out} {
			for _, args := range [][]string{
				{"estimate", "--json", f},
				{"budget", "--json", f},
				{"checkpoint", "--dry-run", "--json", f},
				{"compact", "--dry-run", "--json", f},
				{"roll", "--dry-run", "--json", f},
			} {
				stdout, _ := runOK(t, append([]string{"--state-dir", state}, args...)...)
				var got struct {
					ContextWindow int    `json:"contextWindow"`
					WindowSource  string `json:"windowSource"`
				}
				line := stdout[strings.Index(stdout, "{"):]
				if i := strings.IndexByte(line, '\n'); i > 0 {
					line = line[:i]
				}
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("%v: %v\n%s", args, err, stdout)
				}
				if want := c.window; itoa(got.ContextWindow) != want || !strings.Contains(got.WindowSource, c.source) {
					t.Errorf("%v: window %d from %q, want %s from %q", args, got.ContextWindow, got.WindowSource, want, c.source)
				}
			}
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Every form of a session reads the same: lint finds a secret of the
// plain file in its .jsonl.zst and in an OpenClaw store holding it (it
// scanned the compressed bytes, and failed on the store path); checkpoint
// and restore agree on one key for X.jsonl, X.jsonl.zst and a store
// session.
func TestEveryFormOfASession(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	src, err := os.ReadFile("../testdata/sample-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")[:6]
	var last struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	secret := "github_pat_11ABCDEFG0123456789_" + "q8Wm2Rt5Yx7Kp3Ln9Vb4Hc6Jd1Fg0Sz8Aw5Ee2Rr7Tt3Uu9Ii4Oo1Pp6"
	lines = append(lines, `{"type":"message","id":"feed0001","parentId":"`+last.ID+`","timestamp":"2026-11-30T12:00:00.000Z","message":{"role":"user","content":"use `+secret+` for the push","timestamp":1795000000000}}`)
	plain := filepath.Join(dir, "X.jsonl")
	if err := os.WriteFile(plain, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	zst := plain + ".zst"
	zstdFile(t, plain, zst)
	db := filepath.Join(dir, "agent.sqlite")
	var rows [][]byte
	for _, l := range lines {
		rows = append(rows, []byte(l))
	}
	prunehome.WriteStore(t, db, "agent:main:main", "sess-1", rows)
	store := db + "#agent:main:main"

	for _, f := range []string{plain, zst, store} {
		out, stderr, code := runCLI(t, "lint", "--json", f)
		if code != 3 || !strings.Contains(out, `"rule":"secret"`) {
			t.Errorf("lint %s: exit %d, stderr %q; want the secret found (exit 3)\n%s", f, code, stderr, out)
		}
	}
	for _, pair := range [][2]string{{plain, zst}, {zst, plain}, {store, store}} {
		st := t.TempDir()
		runOK(t, "--state-dir", st, "checkpoint", pair[0])
		if _, stderr, code := runCLI(t, "--state-dir", st, "restore", pair[1]); code != 0 {
			t.Errorf("checkpoint %s, restore %s: exit %d (%s); want the checkpoint found", pair[0], pair[1], code, stderr)
		}
	}
}

func zstdFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, enc.EncodeAll(data, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// OpenClaw's contextTokens for a session (its sessions.json entry) is the
// window evidence of an OpenClaw JSONL session, not the model table.
func TestWindowFromOpenClawContextTokens(t *testing.T) {
	cleanEnv(t)
	dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../testdata/sample-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "0a1b2c3d-1111-4aaa-8bbb-000000000009.jsonl")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	store := `{"agent:main:main":{"sessionId":"0a1b2c3d-1111-4aaa-8bbb-000000000009","updatedAt":1,"contextTokens":32768}}`
	if err := os.WriteFile(filepath.Join(dir, "sessions.json"), []byte(store), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"estimate", "--json", file}, {"budget", "--json", file}} {
		stdout, _ := runOK(t, append([]string{"--state-dir", t.TempDir()}, args...)...)
		var got struct {
			ContextWindow int    `json:"contextWindow"`
			WindowSource  string `json:"windowSource"`
		}
		jsonLine(t, stdout, &got)
		if got.ContextWindow != 32768 || !strings.Contains(got.WindowSource, "contextTokens") {
			t.Errorf("%v: window %d from %q, want 32768 from sessions.json contextTokens", args, got.ContextWindow, got.WindowSource)
		}
	}
}
