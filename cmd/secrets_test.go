package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/internal/testkit/pgtest"
	"github.com/ctxtool/ctxtool/internal/testkit/secretkit"
	"github.com/ctxtool/ctxtool/pkg/filelock"
)

// secretSession is a session file with credentials of every kind planted
// in user, assistant and tool text, in one format.
type secretSession struct {
	format string
	path   string
	// writable: pi's own format (compact, restore --append and scrub
	// write to it); the others are read-only.
	writable bool
}

// secretBlob is every sample's phrase, one per line.
func secretBlob(samples []secretkit.Sample) string {
	var texts []string
	for _, s := range samples {
		texts = append(texts, s.Text)
	}
	return strings.Join(texts, "\n")
}

// filler is prose long enough that compaction has a region to summarise.
func filler(i int) string {
	return strings.Repeat("We should split the loader before the handler runs, because the summary is missing after a restart. ", 20+i)
}

// writePiSecrets writes a pi session: the secrets in the first turn (which
// compaction summarises) and again in the last (which it keeps).
func writePiSecrets(t *testing.T, path, blob string) {
	t.Helper()
	var buf bytes.Buffer
	b := sessiongen.NewBuilder(&buf, sessiongen.Config{})
	b.UserText("deploy notes for the release:\n" + blob)
	id := b.ToolCallID()
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("Noted. " + blob), sessiongen.ToolCall(id, "bash", sessiongen.Obj{{K: "command", V: "env"}})}})
	b.ToolResultText(id, "bash", "HOME=/root\n"+blob)
	b.AssistantText("The environment holds them: " + blob)
	for i := range 8 {
		b.UserText("step " + filler(i))
		b.AssistantText("done with step: " + filler(i))
	}
	b.UserText("once more, deploy with:\n" + blob)
	b.AssistantText("Deploying with " + blob)
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, path, buf.Bytes(), 0o644)
}

// writeAgentSecrets writes a Claude Code or Codex session and plants the
// blob in its user, assistant and tool text.
func writeAgentSecrets(t *testing.T, path, format, blob string) {
	t.Helper()
	var buf bytes.Buffer
	o := sessiongen.AgentOptions{Seed: 11, Turns: 10, Fact: "PLANTUSER"}
	var err error
	if format == "claude-code" {
		_, err = sessiongen.GenerateClaudeCode(&buf, o)
	} else {
		_, err = sessiongen.GenerateCodex(&buf, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(blob)
	esc := string(q[1 : len(q)-1])
	data := strings.ReplaceAll(buf.String(), "PLANTUSER", esc)
	n := 0
	for _, anchor := range []string{`"type":"text","text":"`, `"type":"output_text","text":"`, `"type":"tool_result","content":"`} {
		n += strings.Count(data, anchor)
		data = strings.ReplaceAll(data, anchor, anchor+esc+" ")
	}
	outputs := regexp.MustCompile(`("type":"function_call_output","call_id":"[^"]*","output":")`)
	n += len(outputs.FindAllString(data, -1))
	data = outputs.ReplaceAllString(data, "${1}"+strings.ReplaceAll(esc, "$", "$$")+" ")
	if n < 2 {
		t.Fatalf("%s: planted in %d assistant/tool texts only", format, n)
	}
	testkit.WriteFile(t, path, []byte(data), 0o644)
}

func secretSessions(t *testing.T, blob string) []secretSession {
	dir := t.TempDir()
	pi := filepath.Join(dir, "pi", "s.jsonl")
	oc := filepath.Join(dir, "openclaw", "agents", "main", "sessions", "0d9c3b7e-5a41-4f0e-9a51-3f0d2b8e6c11.jsonl")
	cc := filepath.Join(dir, "claude", "cc.jsonl")
	cx := filepath.Join(dir, "codex", "rollout-2026-03-02T09-00-00-6b3ac0ed.jsonl")
	for _, p := range []string{pi, oc, cc, cx} {
		os.MkdirAll(filepath.Dir(p), 0o755)
	}
	writePiSecrets(t, pi, blob)
	writePiSecrets(t, oc, blob)
	writeAgentSecrets(t, cc, "claude-code", blob)
	writeAgentSecrets(t, cx, "codex", blob)
	return []secretSession{{"pi", pi, true}, {"openclaw", oc, true}, {"claude-code", cc, false}, {"codex", cx, false}}
}

// leakCheck collects everything that left a session and reports any
// planted secret in it.
type leakCheck struct {
	t       *testing.T
	samples []secretkit.Sample
}

func (c leakCheck) text(what string, b []byte) {
	c.t.Helper()
	if l := secretkit.Leaks(b, c.samples); len(l) > 0 {
		c.t.Errorf("%s holds %d secrets in clear: %v", what, len(l), secretkit.Kinds(l))
	}
}

// tree checks every file under dir, SQLite files and their WAL included.
func (c leakCheck) tree(dir string) {
	c.t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			c.text(p, b)
		}
		return nil
	})
}

// Done when (issue 38): secrets of every lint kind planted in user,
// assistant and tool text of sessions in every format never leave through
// index (SQLite), search, budget --emit context (and its rolling summary),
// compact (extractive and a model, whose request bodies are checked),
// checkpoint, restore and flush;
// searching the fingerprint lint prints finds the line that held it.
func TestSecretsNeverLeave(t *testing.T) {
	cleanEnv(t)
	samples := secretkit.Samples(38)
	blob := secretBlob(samples)
	srv := llmtest.New()
	defer srv.Close()
	quoting := samples[6].Value // a model that repeats a secret it saw
	srv.Reply = func(r llmtest.Request) string { return llmtest.DefaultReply(r) + "\n- token " + quoting }
	fpRE := regexp.MustCompile(`fingerprint ([0-9a-f]{8})`)
	for _, s := range secretSessions(t, blob) {
		t.Run(s.format, func(t *testing.T) {
			check := leakCheck{t, samples}
			state, ws := t.TempDir(), t.TempDir()
			orig := testkit.ReadFile(t, s.path)
			var outs bytes.Buffer
			run := func(args ...string) (string, int) {
				t.Helper()
				out, errOut, code := runCLI(t, args...)
				outs.WriteString(out + errOut)
				return out, code
			}
			lintOut, _ := run("--json", "lint", s.path)
			prints := map[string]bool{}
			for _, m := range fpRE.FindAllStringSubmatch(lintOut, -1) {
				prints[m[1]] = true
			}
			if len(prints) < len(samples) {
				t.Fatalf("lint found %d distinct secrets, want ≥ %d:\n%s", len(prints), len(samples), lintOut)
			}
			outs.Reset() // lint's own output masks, and is lint's business

			if _, code := run("index", "--state-dir", state, s.path); code != 0 {
				t.Fatalf("index: exit %d\n%s", code, outs.String())
			}
			for fp := range prints {
				out, _ := run("--json", "search", "--state-dir", state, "--min-score", "0", "--session", s.path, fp)
				if !strings.Contains(out, fp) {
					t.Errorf("search %s (a fingerprint lint printed) finds nothing holding it: %s", fp, out)
				}
			}
			run("search", "--state-dir", state, "--min-score", "0", "deploy token key")
			run("search", "--state-dir", state, "--min-score", "0", samples[0].Value) // the secret itself as the query
			run("budget", s.path, "--state-dir", state, "--emit", "context")
			run("--json", "checkpoint", s.path, "--state-dir", state)
			run("restore", s.path, "--state-dir", state)
			run("restore", s.path, "--state-dir", state, "--format", "yaml")
			run("--json", "flush", s.path, "--state-dir", state, "--workspace", ws, "--force", "--summarizer", "extractive")
			if s.writable {
				run("--json", "compact", s.path, "--state-dir", state, "--summarizer", "extractive", "--keep-recent-tokens", "3000")
				run("restore", s.path, "--state-dir", state, "--append")
				after := testkit.ReadFile(t, s.path)
				if len(after) <= len(orig) || !bytes.Equal(after[:len(orig)], orig) {
					t.Fatalf("compact/restore did not append to the session")
				}
				check.text("what compact and restore appended", after[len(orig):])
			} else {
				run("--json", "compact", s.path, "--state-dir", state, "--summarizer", "extractive", "--dry-run", "--keep-recent-tokens", "3000")
			}
			// A model: the request bodies it receives, and its summary.
			t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
			t.Setenv("OPENAI_API_KEY", "test-key")
			t.Setenv("CTXTOOL_LLM_MODEL", "fake")
			before := len(srv.Requests())
			copyPath := filepath.Join(t.TempDir(), filepath.Base(s.path))
			testkit.WriteFile(t, copyPath, orig, 0o644)
			if s.writable {
				run("--json", "compact", copyPath, "--state-dir", state, "--summarizer", "llm", "--keep-recent-tokens", "3000")
				check.text("the session after an LLM compaction", testkit.ReadFile(t, copyPath)[len(orig):])
			} else {
				run("--json", "compact", copyPath, "--state-dir", state, "--summarizer", "llm", "--dry-run", "--keep-recent-tokens", "3000")
			}
			run("--json", "flush", copyPath, "--state-dir", state, "--workspace", ws, "--force", "--summarizer", "llm")
			// The rolling summary of budget, triggered early: its request too.
			t.Setenv("CTXTOOL_CONTEXTMANAGEMENT_ROLLINGSUMMARY_TRIGGERTHRESHOLD", "100")
			budgetBefore := len(srv.Requests())
			fresh := filepath.Join(t.TempDir(), filepath.Base(s.path))
			testkit.WriteFile(t, fresh, orig, 0o644)
			if _, code := run("budget", fresh, "--state-dir", state, "--emit", "context", "--summarize", "--summarizer", "llm"); code != 0 {
				t.Errorf("budget --summarize: exit %d", code)
			}
			if len(srv.Requests()) == budgetBefore {
				t.Errorf("budget --summarize sent no request to the model")
			}
			reqs := srv.Requests()[before:]
			if len(reqs) == 0 {
				t.Errorf("no request reached the model:\n%s", outs.String())
			}
			for i, r := range reqs {
				body, _ := json.Marshal(r.Messages)
				check.text(fmt.Sprintf("request body %d", i), body)
			}
			t.Setenv("OPENAI_BASE_URL", "")
			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("CTXTOOL_LLM_MODEL", "")

			check.text("the commands' output", outs.Bytes())
			check.tree(state)
			check.tree(ws)
		})
	}
}

// The same sessions indexed into PostgreSQL: no row holds a secret, and
// the fingerprint finds the line.
func TestSecretsNeverReachPostgres(t *testing.T) {
	cleanEnv(t)
	url := pgtest.DB(t)
	samples := secretkit.Samples(39)
	check := leakCheck{t, samples}
	state := t.TempDir()
	for _, s := range secretSessions(t, secretBlob(samples)) {
		out, errOut, code := runCLI(t, "index", "--state-dir", state, "--index", url, s.path)
		if code != 0 {
			t.Fatalf("%s: index: exit %d\n%s", s.format, code, errOut)
		}
		check.text("index output", []byte(out+errOut))
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT t::text FROM ctxtool_recall_chunks AS t`)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	n := 0
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		all.WriteString(s + "\n")
		n++
	}
	if rows.Err() != nil || n == 0 {
		t.Fatalf("%d rows, %v", n, rows.Err())
	}
	check.text("the PostgreSQL chunk rows", all.Bytes())
	fp := regexp.MustCompile(`\[secret:github-token:([0-9a-f]{8})\]`).FindStringSubmatch(all.String())
	if fp == nil {
		t.Fatalf("no GitHub token marker in the rows")
	}
	out, errOut, _ := runCLI(t, "--json", "search", "--index", url, "--min-score", "0", fp[1])
	if !strings.Contains(out, "[secret:github-token:"+fp[1]+"]") {
		t.Errorf("search %s on PostgreSQL: %s %s", fp[1], out, errOut)
	}
}

// recall.redact: false keeps secrets in the index (so the checks above can
// fail: in the text stored for a Claude Code session; a pi session's text
// is read from the file, see pkg/recall/reread.go), and turning redaction
// back on rebuilds the index: its rows, its files and what search prints
// are redacted again.
func TestRedactOptOutAndReindex(t *testing.T) {
	cleanEnv(t)
	samples := secretkit.Samples(40)
	ss := secretSessions(t, secretBlob(samples))
	s, cc := ss[0], ss[2]
	state := t.TempDir()
	t.Setenv("CTXTOOL_RECALL_REDACT", "false")
	runOK(t, "index", "--state-dir", state, s.path, cc.path)
	out, _ := runOK(t, "--json", "search", "--state-dir", state, "--min-score", "0", samples[3].Value)
	var files bytes.Buffer
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			files.Write(b)
		}
		return nil
	})
	if len(secretkit.Leaks([]byte(out), samples)) == 0 || len(secretkit.Leaks(files.Bytes(), samples)) < len(samples)/2 {
		t.Fatalf("with recall.redact false the index and search should keep the secrets: search printed %d, files hold %d",
			len(secretkit.Leaks([]byte(out), samples)), len(secretkit.Leaks(files.Bytes(), samples)))
	}
	t.Setenv("CTXTOOL_RECALL_REDACT", "")
	runOK(t, "index", "--state-dir", state, s.path, cc.path)
	out, _ = runOK(t, "--json", "search", "--state-dir", state, "--min-score", "0", samples[3].Value)
	check := leakCheck{t, samples}
	check.text("search after redaction was turned back on", []byte(out))
	if !strings.Contains(out, "[secret:"+"github-oauth-token:") {
		t.Errorf("searching the secret itself should find its marker: %s", out)
	}
	check.tree(state)
}

// scrub from the command line: it names each secret by its marker and
// never by its value, refuses other agents' transcripts (exit 1, with the
// export that makes a copy it can scrub) and a locked session (exit 4).
func TestScrubCommand(t *testing.T) {
	cleanEnv(t)
	samples := secretkit.Samples(41)
	check := leakCheck{t, samples}
	ss := secretSessions(t, secretBlob(samples))
	pi, cc := ss[0].path, ss[2].path
	lock, err := filelock.Acquire(context.Background(), pi, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "scrub", "--idle", "0", pi); code != 4 {
		t.Errorf("locked: exit %d %s", code, errOut)
	}
	lock.Release()
	out, errOut := runOK(t, "scrub", "--idle", "0", pi)
	check.text("scrub's output", []byte(out+errOut))
	check.text("the scrubbed session", testkit.ReadFile(t, pi))
	if !strings.Contains(out, "redacted") || !strings.Contains(out, "[secret:github-token:") {
		t.Errorf("output: %s", out)
	}
	ccOrig := testkit.ReadFile(t, cc)
	if _, errOut, code := runCLI(t, "scrub", "--idle", "0", cc); code != 1 || !strings.Contains(errOut, "ctxtool export") {
		t.Errorf("claude code: exit %d %s", code, errOut)
	}
	if !bytes.Equal(testkit.ReadFile(t, cc), ccOrig) {
		t.Error("scrub changed a Claude Code transcript")
	}
}
