package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/agentkit"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// matrixCell is one session in one form.
type matrixCell struct {
	name, file string
	// marker is a string of the session that search must find.
	marker string
	// sentChars, when > 0, is the body of the last request the agent sent
	// (the fake server's log): the estimate is checked against it.
	sentChars int
	sentTexts []string
}

// The format × command matrix (issue 35): sessions as the agents write
// them today — the real pi 1.6.0's (offline, when installed), an OpenClaw
// store session, the current Claude Code and Codex shapes — in their
// plain and .zst forms, through every reading command: estimate, lint,
// index/search, checkpoint/restore, export (and pi loading the export),
// budget, compact and roll dry runs. Where the agent wrote the session,
// the estimate is checked against the request it sent next.
func TestFormatCommandMatrix(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	var cells []matrixCell
	add := func(name, file, marker string) {
		cells = append(cells, matrixCell{name: name, file: file, marker: marker})
		zst := filepath.Join(dir, filepath.Base(file)+".zst")
		zstdFile(t, file, zst)
		cells = append(cells, matrixCell{name: name + ".zst", file: zst, marker: marker})
	}
	add("claude-code-2.1", "../testdata/current/claude-code-2.1.jsonl", "TestParse")
	add("codex-0.171", "../testdata/current/codex-0.171.jsonl", "permission denied")

	// An OpenClaw store session (the rows of a pi session).
	src, err := os.ReadFile("../testdata/sample-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	for _, l := range strings.Split(strings.TrimRight(string(src), "\n"), "\n") {
		rows = append(rows, []byte(l))
	}
	db := filepath.Join(dir, "openclaw-agent.sqlite")
	prunehome.WriteStore(t, db, "agent:main:main", "sess-1", rows)
	cells = append(cells, matrixCell{name: "openclaw-store", file: db + "#agent:main:main", marker: firstUserWords(t, rows)})

	if c, ok := piWrittenSession(t, dir); ok {
		cells = append(cells, c)
		zst := c.file + ".zst"
		zstdFile(t, c.file, zst)
		cz := c
		cz.name, cz.file = c.name+".zst", zst
		cells = append(cells, cz)
	}

	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			run := func(args ...string) string {
				stdout, _ := runOK(t, append([]string{"--state-dir", state}, args...)...)
				return stdout
			}
			// estimate
			var est struct {
				Tokens          int `json:"tokens"`
				ContextMessages int `json:"contextMessages"`
				ContextWindow   int `json:"contextWindow"`
			}
			jsonLine(t, run("estimate", "--json", "--tokenizer", "heuristic", c.file), &est)
			if est.Tokens <= 0 || est.ContextMessages <= 0 || est.ContextWindow <= 0 {
				t.Errorf("estimate: %+v", est)
			}
			if c.sentChars > 0 {
				dev := math.Abs(float64(est.Tokens)-float64(c.sentChars)/4) / (float64(c.sentChars) / 4)
				t.Logf("estimate %d tokens; the messages pi sent next: %d chars (chars/4 %d), %.1f%% apart", est.Tokens, c.sentChars, c.sentChars/4, 100*dev)
				if dev > 0.05 {
					t.Errorf("estimate %d is %.1f%% from chars/4 of the messages the agent sent (%d)", est.Tokens, 100*dev, c.sentChars/4)
				}
			}
			// lint: read (findings are the file's own), and no read error
			if _, stderr, code := runCLI(t, "--state-dir", state, "lint", "--fail-on", "never", c.file); code != 0 {
				t.Errorf("lint: exit %d: %s", code, stderr)
			}
			// index / search
			run("index", c.file)
			if out := run("search", "--json", c.marker); !strings.Contains(out, filepath.Base(strings.SplitN(c.file, "#", 2)[0])) {
				t.Errorf("search %q does not cite the session:\n%s", c.marker, out)
			}
			// checkpoint / restore: one key
			run("checkpoint", c.file)
			run("restore", c.file)
			// budget, compact and roll dry runs
			run("budget", "--json", c.file)
			run("compact", "--dry-run", "--json", c.file)
			run("roll", "--dry-run", "--json", c.file)
			// export, and the export read back: the same context
			out := filepath.Join(t.TempDir(), "export.jsonl")
			run("export", c.file, "--to", "pi", "-o", out)
			s, err := transcript.Load(out)
			if err != nil {
				t.Fatalf("export does not load: %v", err)
			}
			n := len(s.Context().Messages)
			s.Close()
			if n != est.ContextMessages {
				t.Errorf("export: %d context messages, the source %d", n, est.ContextMessages)
			}
			// pi loading the export: pi 1.6.0's loader (the pi people run
			// now) when installed, else 0.73.1's (which knows no system
			// messages: pi 1.6.0 sessions are checked with 1.6.0 only).
			if _, err := agentkit.FindPi(false); err == nil {
				if r := oracle.Check16(t, false, false, out)[0]; !r.Loads || r.ContextMessages != n {
					t.Errorf("pi 1.6.0 does not load the export as ctxtool reads it: %+v", r)
				}
			} else if oracle.Available() && c.sentChars == 0 {
				if r := oracle.CheckOne(t, out); !r.Loads || r.ContextMessages != n {
					t.Errorf("pi does not load the export as ctxtool reads it: %+v", r)
				}
			}
			// What the agent sent last is in the session ctxtool reads.
			for _, txt := range c.sentTexts {
				if out := run("search", "--json", txt); !strings.Contains(out, txt) {
					t.Errorf("what pi sent (%q) is not found in the session:\n%s", txt, out)
				}
			}
		})
	}
}

// firstUserWords is a few words of the first user message of rows.
func firstUserWords(t *testing.T, rows [][]byte) string {
	for _, r := range rows {
		var e struct {
			Message struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(r, &e) != nil || e.Message.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(e.Message.Content, &s) != nil {
			var blocks []struct{ Text string }
			json.Unmarshal(e.Message.Content, &blocks)
			if len(blocks) > 0 {
				s = blocks[0].Text
			}
		}
		if w := strings.Fields(s); len(w) >= 3 {
			return strings.Join(w[:3], " ")
		}
	}
	t.Fatal("no user message in the store rows")
	return ""
}

// piWrittenSession runs the real pi 1.6.0 (internal/agentkit) offline
// against a fake server: three turns, pi's own /compact, one more turn.
// It returns the session and the last request's body size; false when pi
// 1.6.0 is not installed (CI installs it).
func piWrittenSession(t *testing.T, dir string) (matrixCell, bool) {
	in, err := agentkit.FindPi(os.Getenv("CI") == "true")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Logf("matrix without the pi 1.6.0 cells: %v", err)
		return matrixCell{}, false
	}
	srv := llmtest.New()
	t.Cleanup(srv.Close)
	srv.UsageFromBody = true
	srv.Reply = func(r llmtest.Request) string {
		if n := len(r.Messages); n > 0 && strings.Contains(r.Messages[n-1].Content, "<conversation>") {
			return "## Goal\nMigrate the billing service by 2027-03-14."
		}
		return fmt.Sprintf("Noted (reply %d).", len(r.Messages))
	}
	home := filepath.Join(dir, "pihome")
	agentDir, sessions := filepath.Join(home, "agent"), filepath.Join(home, "sessions")
	if err := agentkit.WriteAgentDir(agentDir, srv.BaseURL(), 128000, map[string]any{"keepRecentTokens": 40}); err != nil {
		t.Fatal(err)
	}
	p, err := agentkit.StartPi(in, agentkit.PiConfig{AgentDir: agentDir, SessionDir: sessions, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	prompts := []string{
		"We migrate the billing service; the database is zq-ledger-7 on db-7.internal.",
		"The deadline is 2027-03-14 and the retry budget stays at 7 attempts.",
		"Remember the on-call rota: Ana, then Bo, then Cy.",
	}
	for _, m := range prompts {
		if err := p.Prompt(m, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Command(map[string]any{"type": "compact"}, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Prompt("Who is first on call?", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Close()
	file, err := agentkit.SessionFile(sessions)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	sent := 0 // the text of the messages pi sent (system prompt included)
	for _, m := range last.Messages {
		sent += len(m.Content)
	}
	t.Logf("pi 1.6.0's last request: %d messages, %d chars of text, body %d bytes", len(last.Messages), sent, len(last.Body))
	return matrixCell{name: "pi-1.6.0", file: file, marker: "zq-ledger-7", sentChars: sent,
		sentTexts: []string{"Who is first on call"}}, true
}
