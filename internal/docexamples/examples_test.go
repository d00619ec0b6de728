package docexamples

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// example is one command line of a fenced block.
type example struct {
	doc  string // README.md, docs/roll-cron.md, …
	line int    // of the command in doc
	cmd  string // as written (a crontab line without its schedule)
}

func (e example) String() string { return e.doc + ":" + itoa(e.line) + ": " + e.cmd }

func itoa(n int) string { return fmtInt(n) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

var (
	fence    = regexp.MustCompile("(?s)```(sh|cron)\n(.*?)```")
	schedule = regexp.MustCompile(`^(\S+\s+){5}`) // a crontab line's five time fields
)

// setupCommands are the README's set-up commands: CI runs `go test ./...`
// itself (running it here would recurse), the second is run by
// TestReadmeSetUpCommand, and the third fetches the module from the network
// (the tests run the binary they built in its place).
var setupCommands = []string{"go test ./...", "go run . compact testdata/sample-v3.jsonl --summarizer extractive --dry-run",
	"go install github.com/ctxtool/ctxtool@latest"}

// examples reads the command lines of every sh and cron block of README.md
// and docs/**.md, in order.
func examples(t *testing.T, root string) map[string][]example {
	t.Helper()
	docs := []string{"README.md"}
	filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			docs = append(docs, rel)
		}
		return nil
	})
	out := map[string][]example{}
	for _, doc := range docs {
		data := testkit.ReadFile(t, filepath.Join(root, doc))
		s := string(data)
		for _, m := range fence.FindAllStringSubmatchIndex(s, -1) {
			body := s[m[4]:m[5]]
			first := strings.Count(s[:m[4]], "\n") + 1
			for i, l := range strings.Split(body, "\n") {
				l = strings.TrimSpace(l)
				if l == "" || strings.HasPrefix(l, "#") || slices.Contains(setupCommands, l) {
					continue
				}
				if s[m[2]:m[3]] == "cron" || schedule.MatchString(l) && strings.HasPrefix(l, "*") {
					l = schedule.ReplaceAllString(l, "")
				}
				out[doc] = append(out[doc], example{doc: doc, line: first + i, cmd: l})
			}
		}
	}
	return out
}

// gate reports whether a documented command may exit 3 (a CI gate whose
// documentation says so: a budget crossed, a fact dropped, a lint finding).
func gate(cmd string) bool {
	for _, f := range []string{"--fail-over", "--fail-on-dropped", "--baseline", "--max-growth"} {
		if strings.Contains(cmd, f) {
			return true
		}
	}
	return strings.Contains(cmd, "ctxtool lint ") && !strings.Contains(cmd, "--fail-on never")
}

// Every command example of README.md and docs/ runs as written — in a
// shell, with its pipes, redirections, globs, ~ and $HOME — against the
// built binary, on a home that has the sessions the examples name, and
// exits 0 (or 3 where the documentation says the command is a gate). An
// example that fails here fails for a reader too.
func TestDocExamplesRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs every documented example")
	}
	root := oracle.ModuleRoot()
	byDoc := examples(t, root)
	total := 0
	for _, ex := range byDoc {
		total += len(ex)
	}
	if total < 30 || len(byDoc["README.md"]) < 25 {
		t.Fatalf("found %d examples (%d in README.md): the extractor is broken", total, len(byDoc["README.md"]))
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "ctxtool"), root).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	llm := llmtest.New()
	defer llm.Close()

	docs := make([]string, 0, len(byDoc))
	for d := range byDoc {
		docs = append(docs, d)
	}
	slices.Sort(docs)
	for _, doc := range docs {
		t.Run(doc, func(t *testing.T) {
			home, work := fixture(t, root, bin)
			env := []string{"HOME=" + home, "PATH=" + filepath.Join(home, "go", "bin") + ":/usr/local/bin:/usr/bin:/bin",
				"OPENAI_BASE_URL=" + llm.BaseURL(), "LANG=C.UTF-8", "TMPDIR=" + t.TempDir()}
			pristine := testkit.ReadFile(t, filepath.Join(work, "session.jsonl"))
			for _, ex := range byDoc[doc] {
				// Each example starts from the same session.jsonl (an earlier
				// compact would make the next one "already compacted");
				// what earlier lines made beside it (baselines, checkpoints,
				// the index) stays, as the docs build on it.
				sess := filepath.Join(work, "session.jsonl")
				idle := time.Now().Add(-time.Hour) // quiet, as --truncate wants (--idle)
				if err := os.WriteFile(sess, pristine, 0o644); err != nil || os.Chtimes(sess, idle, idle) != nil {
					t.Fatal(err)
				}
				c := exec.Command("bash", "-c", ex.cmd)
				c.Dir, c.Env = work, env
				out, err := c.CombinedOutput()
				code := c.ProcessState.ExitCode()
				if err != nil && code < 0 {
					t.Fatalf("%s: %v", ex, err)
				}
				t.Logf("%s → exit %d", ex, code)
				ok := code == 0 || code == 3 && gate(ex.cmd)
				if !ok || strings.Contains(string(out), "panic:") {
					t.Errorf("%s: exit %d\n%s", ex, code, tail(out))
				}
				if to := redirectTarget(ex.cmd, home); to != "" {
					if !filepath.IsAbs(to) {
						to = filepath.Join(work, to)
					}
					if st, err := os.Stat(to); err != nil || st.Size() == 0 {
						t.Errorf("%s: wrote nothing to %s (%v)", ex, to, err)
					}
				} else if len(out) == 0 && !strings.HasPrefix(ex.cmd, "jq ") && !strings.HasPrefix(ex.cmd, "mkdir ") {
					t.Errorf("%s: printed nothing", ex)
				}
			}
		})
	}
	// The LLM example reached the model (a silent fallback to the offline
	// summariser would pass the exit-code check).
	if len(llm.Requests()) == 0 {
		t.Error("the --summarizer llm example never called the model")
	}
}

// redirectTarget is the file a command's stdout goes to (> or >>, $HOME
// expanded), or "".
func redirectTarget(cmd, home string) string {
	f := strings.Fields(cmd)
	for i, w := range f {
		if (w == ">" || w == ">>") && i+1 < len(f) {
			return strings.ReplaceAll(strings.Trim(f[i+1], `"`), "$HOME", home)
		}
	}
	return ""
}

// TestReadmeSetUpCommand runs the README's first set-up command from the
// module root, as a reader of a fresh clone does.
func TestReadmeSetUpCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("go run compiles the binary")
	}
	root := oracle.ModuleRoot()
	readme := testkit.ReadFile(t, filepath.Join(root, "README.md"))
	if !strings.Contains(string(readme), "```sh\n"+setupCommands[1]+"\n```") {
		t.Fatalf("README's set-up command is no longer %q: update this test", setupCommands[1])
	}
	c := exec.Command("bash", "-c", setupCommands[1])
	c.Dir = root
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "would compact (dry run)") {
		t.Fatalf("%s: %v\n%s", setupCommands[1], err, tail(out))
	}
}

func tail(b []byte) string {
	if len(b) > 3000 {
		return "…" + string(b[len(b)-3000:])
	}
	return string(b)
}

// fixture makes the home and working directory the examples assume: the
// binary in ~/go/bin (where `go install` puts it), OpenClaw and pi session
// trees (idle for hours, as the batch examples' --older-than expects), a
// Claude Code transcript and a Codex rollout in their agents' homes, and
// in the working directory session.jsonl, transcripts/, workspace/, the
// repository's testdata/, an earlier estimate (old.json) and an exec
// summariser (./my-summarizer).
func fixture(t *testing.T, root, bin string) (home, work string) {
	t.Helper()
	home, work = t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(home, "go", "bin"), 0o755))
	must(os.Symlink(filepath.Join(bin, "ctxtool"), filepath.Join(home, "go", "bin", "ctxtool")))
	idle := time.Now().Add(-6 * time.Hour)
	gen := func(path string, seed uint64, turns int) {
		must(os.MkdirAll(filepath.Dir(path), 0o755))
		sessiongen.Write(t, path, sessiongen.Options{Seed: seed, Turns: turns, Facts: 6})
		must(os.Chtimes(path, idle, idle))
	}
	gen(filepath.Join(home, ".openclaw", "agents", "main", "sessions", "a1.jsonl"), 21, 40)
	gen(filepath.Join(home, ".openclaw", "agents", "main", "sessions", "a2.jsonl"), 22, 12)
	gen(filepath.Join(home, ".pi", "agent", "sessions", "--home-dev-acme--", "p1.jsonl"), 23, 30)
	agent := func(path string, write func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)) {
		must(os.MkdirAll(filepath.Dir(path), 0o755))
		f, err := os.Create(path)
		must(err)
		_, err = write(f, sessiongen.AgentOptions{Seed: 24, Turns: 10, Compactions: 1})
		must(err)
		must(f.Close())
	}
	agent(filepath.Join(home, ".claude", "projects", "-home-dev-acme", "3f2c9a1e-5b7d-4c1e-9f0a-2d6b8e4c7a15.jsonl"), sessiongen.GenerateClaudeCode)
	agent(filepath.Join(home, ".codex", "sessions", "2026", "03", "18", "rollout-2026-03-18T09-12-44-0195a7c2-4e1b-7d3f-9a60-5c2e8b1f4d97.jsonl"), sessiongen.GenerateCodex)

	must(os.CopyFS(filepath.Join(work, "testdata"), os.DirFS(filepath.Join(root, "testdata"))))
	copyFile := func(src, dst string) {
		data, err := os.ReadFile(filepath.Join(root, "testdata", src))
		must(err)
		must(os.MkdirAll(filepath.Dir(filepath.Join(work, dst)), 0o755))
		must(os.WriteFile(filepath.Join(work, dst), data, 0o644))
	}
	copyFile("sample-v3.jsonl", "session.jsonl")
	for _, f := range []string{"sample-v3.jsonl", "sample-v1.jsonl", "edge-glued.jsonl", "edge-trailing-toolcall.jsonl"} {
		copyFile(f, filepath.Join("transcripts", f))
	}
	must(os.MkdirAll(filepath.Join(work, "workspace"), 0o755))
	must(os.MkdirAll(filepath.Join(work, "ci"), 0o755))
	must(os.WriteFile(filepath.Join(work, "my-summarizer"), []byte(`#!/bin/sh
# reads pi's preparation (JSON) on stdin, writes the summary on stdout
cat >/dev/null
printf '## Goal\nKeep the rename of the token index going.\n'
`), 0o755))
	c := exec.Command(filepath.Join(bin, "ctxtool"), "estimate", "--json", "transcripts/sample-v3.jsonl", "transcripts/sample-v1.jsonl",
		"transcripts/edge-glued.jsonl", "transcripts/edge-trailing-toolcall.jsonl")
	c.Dir, c.Env = work, []string{"HOME=" + home}
	old, err := c.Output()
	must(err)
	must(os.WriteFile(filepath.Join(work, "old.json"), old, 0o644))
	return home, work
}
