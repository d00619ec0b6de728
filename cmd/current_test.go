package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
