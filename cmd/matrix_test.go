package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	// sent, when set, is the last request the agent (Claude Code, Codex,
	// OpenClaw) sent for this session, read from the fake server's log: estimate,
	// search, checkpoint, restore and export are checked against it.
	sent *agentkit.Sent
	// tolerance is how far the estimate may be from sent's chars/4.
	tolerance float64
	// sentBody is that request's body: the fake server reported its
	// bytes/4 as the input tokens of the reply, which the last assistant
	// message must carry.
	sentBody []byte
	// secret: the session holds agentkit.WrittenSecret, which the
	// agent sent; lint must report it.
	secret bool
	// touched are files the agent's tools wrote (as the checkpoint
	// names them): every checkpoint must list them under files_modified,
	// the second one too, whose capture has nothing new to read.
	touched []string
	// piDiffers says why pi cannot rebuild the agent's context from the
	// export (it holds what pi does not know): pi must still load it.
	piDiffers string
	// parent is the file a fork's history is in (a Codex fork's
	// history_base): indexed beside the session, and the marker, said
	// before the fork, is found citing it.
	parent string
}

// The format × command matrix (issue 35): sessions as the agents write
// them today — written by the real pi 1.6.0, Claude Code, Codex and
// OpenClaw Gateway offline when they are installed (CI installs them;
// their forks and subagents too), plus hand-made Claude Code and Codex
// shapes and a Go-built OpenClaw store — in their plain, .zst and store
// forms, through every reading command: estimate, lint, index/search,
// checkpoint/restore, export (and pi loading the export), budget,
// compact and roll dry runs. Where the agent wrote the session, each
// command is checked against the last request it sent (the fake
// server's log).
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

	cells = append(cells, agentWrittenCells(t, dir)...)
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
			if c.sent != nil {
				checkEstimate(t, c, est.Tokens)
			}
			// lint: read (findings are the file's own), and no read error
			lint, stderr, code := runCLI(t, "--state-dir", state, "lint", "--json", "--fail-on", "never", c.file)
			if code != 0 {
				t.Errorf("lint: exit %d: %s", code, stderr)
			}
			if c.secret && !strings.Contains(lint, `"rule":"secret"`) {
				t.Errorf("lint does not report the token the agent sent:\n%s", lint)
			}
			// The header the agent wrote is a known version (OpenClaw
			// 2026.9 writes 4).
			if c.sent != nil && strings.Contains(lint, `"key":"header-version"`) {
				t.Errorf("lint calls the header the agent wrote unknown:\n%s", lint)
			}
			// index / search
			run("index", c.file)
			cites := filepath.Base(strings.SplitN(c.file, "#", 2)[0])
			if c.parent != "" {
				run("index", c.parent)
				cites = filepath.Base(c.parent)
			}
			if out := run("search", "--json", c.marker); !strings.Contains(out, cites) {
				t.Errorf("search %q does not cite the session:\n%s", c.marker, out)
			}
			// checkpoint / restore: one key
			var cp struct {
				Path string `json:"path"`
			}
			jsonLine(t, run("checkpoint", "--json", c.file), &cp)
			restored := run("restore", c.file)
			if c.sent != nil {
				yaml, err := os.ReadFile(cp.Path)
				if err != nil {
					t.Fatalf("checkpoint: %v", err)
				}
				for _, f := range c.sent.Files {
					if !strings.Contains(string(yaml), f) {
						t.Errorf("checkpoint does not name %s, which the agent's last request has a tool call on:\n%s", f, yaml)
					}
				}
				if w := firstWords(c.sent.LastUser, 3); !strings.Contains(restored, w) {
					t.Errorf("restore does not carry the last user message the agent sent (%q):\n%s", w, restored)
				}
			}
			if len(c.touched) > 0 {
				// Written before the compactions (Claude Code's Write,
				// Codex's `printf … > notes.txt`): the first checkpoint
				// and the second, after the capture moved past them.
				first, _ := os.ReadFile(cp.Path)
				var again struct {
					Path string `json:"path"`
				}
				jsonLine(t, run("checkpoint", "--json", "--force", c.file), &again)
				second, err := os.ReadFile(again.Path)
				if err != nil || again.Path == cp.Path {
					t.Fatalf("second checkpoint %q: %v", again.Path, err)
				}
				for i, yaml := range []string{string(first), string(second)} {
					for _, f := range c.touched {
						if !slices.Contains(filesModified(yaml), f) {
							t.Errorf("checkpoint %d does not list %s, which the agent wrote, as modified:\n%s", i+1, f, yaml)
						}
					}
				}
			}
			// budget, compact and roll dry runs
			run("budget", "--json", c.file)
			run("compact", "--dry-run", "--json", c.file)
			run("roll", "--dry-run", "--json", c.file)
			// export, and the export read back: the same context
			out := filepath.Join(t.TempDir(), "export.jsonl")
			run("export", c.file, "--to", "pi", "-o", out)
			if c.sent != nil {
				data, _ := os.ReadFile(out)
				if w := firstWords(c.sent.LastUser, 3); !strings.Contains(string(data), jsonText(w)) {
					t.Errorf("export lacks the last user message the agent sent (%q)", w)
				}
			}
			if c.sentBody != nil {
				if got, want := lastAssistantInput(t, out), len(c.sentBody)/4; got != want {
					t.Errorf("the last reply's usage says %d input tokens; the fake server reported %d for the agent's last request", got, want)
				}
			}
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
				switch r := oracle.Check16(t, false, false, out)[0]; {
				case !r.Loads:
					t.Errorf("pi 1.6.0 does not load the export: %+v", r)
				case r.ContextMessages != n && c.piDiffers != "":
					t.Logf("pi 1.6.0 reads %d context messages in the export, ctxtool (as the agent) %d: %s", r.ContextMessages, n, c.piDiffers)
				case r.ContextMessages != n:
					t.Errorf("pi 1.6.0 does not load the export as ctxtool reads it: %+v", r)
				}
			} else if oracle.Available() && c.sentChars == 0 {
				if r := oracle.CheckOne(t, out); !r.Loads || r.ContextMessages != n {
					t.Errorf("pi does not load the export as ctxtool reads it: %+v", r)
				}
			}
			// What the agent sent last is in the session ctxtool reads.
			if c.sent != nil {
				c.sentTexts = append(c.sentTexts, firstWords(c.sent.LastUser, 3))
			}
			for _, txt := range c.sentTexts {
				if out := run("search", "--json", txt); !strings.Contains(out, txt) {
					t.Errorf("what the agent sent (%q) is not found in the session:\n%s", txt, out)
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
	return matrixCell{name: "pi-" + agentkit.Pin("PI_VERSION"), file: file, marker: "zq-ledger-7", sentChars: sent,
		sentTexts: []string{"Who is first on call"}}, true
}

// agentWrittenCells are the sessions the real Claude Code 2.1.332 and
// Codex 0.171.0 write offline (internal/agentkit: tool calls, a failing
// tool, an image, a subagent, compactions, a resume, a fork): the main
// session, its .zst, the fork and the subagent's side chain, each with
// the last request the agent sent for it. Without the agents (outside
// CI) they are left out, with a message saying how to get them.
func agentWrittenCells(t *testing.T, dir string) []matrixCell {
	ci := os.Getenv("CI") == "true"
	a, err := agentkit.FindAgents(ci)
	if err != nil {
		if ci {
			t.Fatalf("CI=true needs the real claude and codex: %v", err)
		}
		t.Logf("matrix without the Claude Code / Codex self-written cells: %v", err)
		return nil
	}
	var cells []matrixCell
	if c, ok := openClawWrittenCells(t, dir); ok {
		cells = append(cells, c...)
	}
	for _, g := range []struct {
		name  string
		write func(*agentkit.Agents, string) (*agentkit.WrittenSession, error)
		tol   float64
		// missing is how many things the agent cannot do offline (Codex:
		// a manual compaction): more means the script no longer makes
		// the session it claims.
		missing int
		// touched: how the checkpoint names the file the agent wrote
		// (Codex's exec_command wrote it relative to the project).
		touched func(ws *agentkit.WrittenSession) []string
		// forkParent: Codex 0.171 writes a fork as its own turns after a
		// session_meta.history_base {thread_id, end_byte_offset}: the
		// history is the first bytes of the parent's rollout (the main
		// session), which the fork's reader joins and search cites.
		forkParent bool
	}{
		{"claude-" + agentkit.Pin("CLAUDE_VERSION"), agentkit.ClaudeCodeSession, matrixTolerance, 0,
			func(ws *agentkit.WrittenSession) []string { return ws.Touched }, false},
		{"codex-" + agentkit.Pin("CODEX_VERSION"), agentkit.CodexSession, matrixTolerance, 1,
			func(ws *agentkit.WrittenSession) []string {
				var rel []string
				for _, f := range ws.Touched {
					rel = append(rel, filepath.Base(f)) // `printf … > notes.txt` in the project
				}
				return rel
			}, true},
	} {
		home := filepath.Join(dir, g.name)
		os.MkdirAll(home, 0o700)
		start := time.Now()
		ws, err := g.write(a, home)
		if err != nil {
			t.Fatalf("%s writing its session: %v", g.name, err)
		}
		t.Logf("%s wrote its session in %s (%d requests); could not do offline: %v", g.name, time.Since(start).Round(time.Millisecond), len(ws.Bodies), ws.Missing)
		if len(ws.Missing) != g.missing {
			t.Errorf("%s: the scripted session lacks more than the agent cannot do offline: %v", g.name, ws.Missing)
		}
		last := agentkit.ReadSent(ws.Last)
		if !sentSecret(ws) {
			t.Errorf("%s: no request carried the planted token", g.name)
		}
		touched := g.touched(ws)
		cells = append(cells, matrixCell{name: g.name, file: ws.File, marker: agentkit.WrittenMarker, sent: &last, tolerance: g.tol, sentBody: ws.Last, secret: true, touched: touched})
		zst := filepath.Join(dir, g.name+"-"+filepath.Base(ws.File)+".zst")
		zstdFile(t, ws.File, zst)
		cells = append(cells, matrixCell{name: g.name + ".zst", file: zst, marker: agentkit.WrittenMarker, sent: &last, tolerance: g.tol, sentBody: ws.Last, secret: true, touched: touched})
		if ws.Fork != "" {
			fork := agentkit.ReadSent(ws.ForkLast)
			fc := matrixCell{name: g.name + "-fork", file: ws.Fork, marker: agentkit.WrittenMarker, sent: &fork, tolerance: g.tol, sentBody: ws.ForkLast}
			if g.forkParent {
				// notes.txt was written before the fork: in the history.
				fc.parent, fc.touched = ws.File, touched
			}
			cells = append(cells, fc)
		}
		if len(ws.Side) > 0 && ws.SideLast != nil {
			side := agentkit.ReadSent(ws.SideLast)
			// A subagent still running when its parent's run ends is
			// interrupted: Codex then writes a turn_aborted message after
			// its last request (~70 tokens here), hence the margin.
			cells = append(cells, matrixCell{name: g.name + "-subagent", file: ws.Side[0], marker: "SUBAGENT-TASK", sent: &side, tolerance: g.tol + 0.05})
		}
	}
	return cells
}

// matrixTolerance is how far ctxtool's heuristic estimate of a real
// agent's session may be from chars/4 of the conversation the agent sent
// next (system prompt and tool schemas left out on both sides).
const matrixTolerance = 0.10

// checkEstimate compares the estimate with the agent's last request.
func checkEstimate(t *testing.T, c matrixCell, tokens int) {
	t.Helper()
	want := float64(c.sent.Chars) / 4
	dev := math.Abs(float64(tokens)-want) / want
	t.Logf("estimate %d tokens; the agent's last request: %d chars of conversation (chars/4 %.0f), %.1f%% apart", tokens, c.sent.Chars, want, 100*dev)
	if dev > c.tolerance {
		t.Errorf("estimate %d is %.1f%% from chars/4 of the conversation the agent sent last (%.0f); tolerance %.0f%%", tokens, 100*dev, want, 100*c.tolerance)
	}
}

// firstWords is the first n words of s, up to the first path (which
// summaries shorten).
func firstWords(s string, n int) string {
	var w []string
	for _, f := range strings.Fields(s) {
		if len(w) == n || strings.Contains(f, "/") {
			break
		}
		w = append(w, f)
	}
	return strings.Join(w, " ")
}

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// openClawWrittenCells are the sessions the real OpenClaw Gateway writes
// into its SQLite store (agentkit.OpenClawSession: turns and a manual
// compaction; turns around a /reset; ~1–2 min, most of it the Gateway
// starting), each checked against
// the last request it sent less what it adds as it sends
// (agentkit.ReadSentOpenClaw). Without OpenClaw (outside CI) it is left
// out with a message.
func openClawWrittenCells(t *testing.T, dir string) ([]matrixCell, bool) {
	in, err := agentkit.FindOpenClaw()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs the real OpenClaw: %v", err)
		}
		t.Logf("matrix without the OpenClaw self-written cell: %v", err)
		return nil, false
	}
	home := filepath.Join(dir, "openclaw")
	os.MkdirAll(home, 0o700)
	start := time.Now()
	ws, err := agentkit.OpenClawSession(in, home)
	if err != nil {
		t.Fatalf("openclaw writing its session: %v", err)
	}
	t.Logf("openclaw %s wrote its session in %s (%d requests); could not do: %v", agentkit.Pin("OPENCLAW_VERSION"), time.Since(start).Round(time.Millisecond), len(ws.Bodies), ws.Missing)
	// OpenClaw sends the planted token to the model but stores it
	// redacted ("github…1Pp6"): there is nothing for lint to find.
	last := agentkit.ReadSentOpenClaw(ws.Last)
	name := "openclaw-" + agentkit.Pin("OPENCLAW_VERSION") + "-store"
	// The session with a /reset before its last turn: OpenClaw sends the
	// last turn alone (its reset boundary entry starts the context).
	reset := agentkit.ReadSentOpenClaw(ws.ResetLast)
	return []matrixCell{{name: name, file: ws.File, marker: agentkit.WrittenMarker, sent: &last, tolerance: matrixTolerance},
		{name: name + "-reset", file: ws.Reset, marker: agentkit.WrittenMarker, sent: &reset, tolerance: matrixTolerance,
			piDiffers: "the export copies OpenClaw's rows, and pi 1.6.0 does not know its reset boundary (it reads the turns before it)"}}, true
}

// filesModified is the resources.files_modified list of a checkpoint's
// YAML.
func filesModified(yaml string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(yaml, "\n") {
		switch {
		case strings.TrimSpace(l) == "files_modified:":
			in = true
		case in && strings.HasPrefix(l, "    - "):
			var f string
			if json.Unmarshal([]byte(strings.TrimPrefix(l, "    - ")), &f) == nil {
				out = append(out, f)
			}
		case in:
			return out
		}
	}
	return out
}

// sentSecret reports whether a request the agent sent carried
// agentkit.WrittenSecret.
func sentSecret(ws *agentkit.WrittenSession) bool {
	for _, b := range ws.Bodies {
		if strings.Contains(string(b), agentkit.WrittenSecret) {
			return true
		}
	}
	return false
}

// lastAssistantInput is the usage.input of the last assistant message of
// a pi session (-1 when it has none).
func lastAssistantInput(t *testing.T, file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	in := -1
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Message struct {
				Role  string `json:"role"`
				Usage *struct {
					Input int `json:"input"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Message.Role == "assistant" && e.Message.Usage != nil {
			in = e.Message.Usage.Input
		}
	}
	return in
}
