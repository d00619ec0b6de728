package agentkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// needAgents returns the pinned claude and codex, or skips outside CI.
func needAgents(t *testing.T) *Agents {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	a, err := FindAgents(ci)
	if err != nil {
		if ci {
			t.Fatalf("CI=true needs the real claude and codex: %v", err)
		}
		t.Skipf("skipping the real Claude Code / Codex test: %v", err)
	}
	return a
}

// ccRun is one test's Claude Code: a home, a project, a fake Anthropic
// server.
type ccRun struct {
	t          *testing.T
	a          *Agents
	srv        *llmtest.Wire
	wire       *llmtest.Wire // Codex's server (codex_e2e_test.go)
	home, proj string
	env        []string
}

// The compaction prompt of Claude Code 2.1 (its summarization request).
const ccCompactCue = "summary of the conversation"

func newCCRun(t *testing.T) *ccRun {
	a := needAgents(t)
	srv := llmtest.NewAnthropic()
	t.Cleanup(srv.Close)
	home := t.TempDir()
	proj := filepath.Join(home, "billing")
	os.MkdirAll(proj, 0o700)
	r := &ccRun{t: t, a: a, srv: srv, home: home, proj: proj,
		env: []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=x"}}
	// The fake model: a summarization request gets a summary that keeps
	// the topic but leaves out every constraint.
	srv.Answer = func(body []byte) llmtest.Turn {
		if bytes.Contains(body, []byte(ccCompactCue)) {
			return llmtest.Turn{Text: "<summary>\n1. Primary Request: the user works on the billing service.\n2. Pending: nothing.\n</summary>"}
		}
		return llmtest.Turn{Text: "Noted."}
	}
	return r
}

func (r *ccRun) ctxtool(args ...string) (string, error) {
	cmd := exec.Command(ctxtoolBin, args...)
	cmd.Dir = r.proj
	cmd.Env = append(os.Environ(), "HOME="+r.home, "XDG_CONFIG_HOME="+filepath.Join(r.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(r.home, ".local", "state"), "CTXTOOL_STATE_DIR=",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "CTXTOOL_LLM_MODEL=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustCtxtool runs ctxtool and stops the test when it fails.
func (r *ccRun) mustCtxtool(args ...string) string {
	r.t.Helper()
	out, err := r.ctxtool(args...)
	if err != nil {
		r.t.Fatalf("ctxtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// claude runs one `claude -p` and returns its session id.
func (r *ccRun) claude(args ...string) string {
	r.t.Helper()
	run := RunAgent(context.Background(), r.a.Claude, r.home, r.proj, r.env, 90*time.Second, append([]string{"-p", "--output-format", "json"}, args...)...)
	if run.Err != nil {
		r.t.Fatalf("claude %v: %v (%s)\n%s\n%s", args, run.Err, run.Took, run.Stdout, run.Stderr)
	}
	var out struct {
		SessionID string `json:"session_id"`
		IsError   bool   `json:"is_error"`
	}
	if err := json.Unmarshal([]byte(run.Stdout), &out); err != nil || out.IsError {
		r.t.Fatalf("claude %v: %v\n%s", args, err, run.Stdout)
	}
	return out.SessionID
}

// requestText is the text a request sent the model: system prompt and
// messages (JSON-decoded, so quotes and newlines read as written).
func requestText(body []byte) string {
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
		Input    json.RawMessage `json:"input"`
	}
	json.Unmarshal(body, &req)
	var sb strings.Builder
	for _, raw := range []json.RawMessage{req.System, req.Messages, req.Input} {
		var v any
		json.Unmarshal(raw, &v)
		collect(v, &sb)
	}
	return sb.String()
}

func collect(v any, sb *strings.Builder) {
	switch x := v.(type) {
	case string:
		sb.WriteString(x)
		sb.WriteString("\n")
	case []any:
		for _, e := range x {
			collect(e, sb)
		}
	case map[string]any:
		for _, e := range x {
			collect(e, sb)
		}
	}
}

const (
	constraintA = "Never run migrations against db-7.internal without the --dry-run flag."
	constraintB = "Never restart the queue-9 workers during business hours."
)

// After Claude Code's /compact: its summarization request carries
// ctxtool's PreCompact instructions; the fake summary leaves the planted
// constraint out; the audit names it; the first request after the
// compaction carries that session's resume text and the constraint, and a
// second session of the same project gets its own, never the other's.
func TestClaudeCodeCompactionKeepsState(t *testing.T) {
	r := newCCRun(t)
	r.mustCtxtool("install", "claude-code")
	r.mustCtxtool("pin", "Answer in English only.")
	start := time.Now()
	a := r.claude(constraintA + " We decided to keep the ledger in Postgres.")
	b := r.claude(constraintB + " We decided to move the queue to NATS.")
	r.claude("--resume", a, "Please also add a --verbose flag to the loader.")
	n0 := len(r.srv.Bodies())
	r.claude("--resume", a, "/compact")
	bodies := r.srv.Bodies()[n0:]
	var summarize string
	for _, body := range bodies {
		if bytes.Contains(body, []byte(ccCompactCue)) {
			summarize = requestText(body)
		}
	}
	if summarize == "" {
		t.Fatalf("no summarization request among %d after /compact", len(bodies))
	}
	for _, want := range []string{"ctxtool: the summary must keep", constraintA, "--verbose"} {
		if !strings.Contains(summarize, want) {
			t.Errorf("the summarization request lacks ctxtool's %q", want)
		}
	}
	if strings.Contains(summarize, "queue-9") {
		t.Errorf("session B's constraint is in session A's summarization instructions")
	}
	n1 := len(r.srv.Bodies())
	r.claude("--resume", a, "What next?")
	after := r.srv.Bodies()[n1:]
	if len(after) == 0 {
		t.Fatal("no request after the compaction")
	}
	first := requestText(after[0])
	for _, want := range []string{"[ctxtool] State of this session (" + a + ")", "Left out of the last summary", constraintA, "Answer in English only."} {
		if !strings.Contains(first, want) {
			t.Errorf("the first request after the compaction lacks %q", want)
		}
	}
	if strings.Contains(first, "queue-9") || strings.Contains(first, b) {
		t.Errorf("session B's state reached session A")
	}
	log := readLog(t, r.home)
	if !strings.Contains(log, "audit: ctxtool: the summary left out") || !strings.Contains(log, "db-7.internal") {
		t.Errorf("the hook log has no audit naming the constraint:\n%s", log)
	}
	// Session B, compacted too, gets its own.
	r.claude("--resume", b, "/compact")
	n2 := len(r.srv.Bodies())
	r.claude("--resume", b, "Go on.")
	firstB := requestText(r.srv.Bodies()[n2])
	if !strings.Contains(firstB, "State of this session ("+b+")") || !strings.Contains(firstB, constraintB) || strings.Contains(firstB, "db-7.internal") {
		t.Errorf("session B's first request after its compaction:\n%.3000s", firstB)
	}
	fig := "claude-code /compact round trip (2 sessions, 9 claude runs): " + time.Since(start).Round(time.Millisecond).String() + "; hook times " + hookTimes(readLog(t, r.home))
	t.Log(fig)
	writeFigure(t, fig)
	// Uninstall gives back the files Claude Code wrote beside ours.
	r.mustCtxtool("uninstall", "claude-code")
	settings, _ := os.ReadFile(filepath.Join(r.home, ".claude", "settings.json"))
	claudeJSON, _ := os.ReadFile(filepath.Join(r.home, ".claude.json"))
	if bytes.Contains(settings, []byte("ctxtool")) || bytes.Contains(claudeJSON, []byte("ctxtool")) {
		t.Errorf("uninstall left ctxtool in Claude Code's files:\n%s\n%s", settings, claudeJSON)
	}
}

func readLog(t *testing.T, home string) string {
	data, _ := os.ReadFile(filepath.Join(home, ".local", "state", "ctxtool", "hooks", "hook.log"))
	return string(data)
}

// hookTimes summarizes the "answered … in D" lines of the hook log.
func hookTimes(log string) string {
	var ds []time.Duration
	for _, l := range strings.Split(log, "\n") {
		if i := strings.LastIndex(l, " in "); i > 0 && strings.Contains(l, ": answered") {
			if d, err := time.ParseDuration(strings.TrimSpace(l[i+4:])); err == nil {
				ds = append(ds, d)
			}
		}
	}
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%d hooks, median %s, p95 %s, max %s", len(ds), ds[len(ds)/2], ds[len(ds)*95/100], ds[len(ds)-1])
}

// claude mcp list shows ctxtool connected; when the scripted model calls
// its search tool, the answer cites the planted fact's session and line.
func TestClaudeCodeCallsCtxtoolsSearch(t *testing.T) {
	r := newCCRun(t)
	r.mustCtxtool("install", "claude-code")
	a := r.claude(constraintA)
	r.mustCtxtool("index", filepath.Join(r.home, ".claude", "projects"))
	list := RunAgent(context.Background(), r.a.Claude, r.home, r.proj, r.env, 60*time.Second, "mcp", "list")
	if list.Err != nil || !strings.Contains(list.Stdout, "ctxtool") || !strings.Contains(strings.ToLower(list.Stdout), "connected") {
		t.Fatalf("claude mcp list: %v\n%s\n%s", list.Err, list.Stdout, list.Stderr)
	}
	t.Logf("claude mcp list: %s", strings.TrimSpace(list.Stdout))
	r.srv.Answer = func(body []byte) llmtest.Turn {
		switch {
		case bytes.Contains(body, []byte(`"tool_result"`)):
			return llmtest.Turn{Text: "Found it."}
		case bytes.Contains(body, []byte("SEARCH-NOW")):
			return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_1", Name: "mcp__ctxtool__search", Arguments: map[string]any{"query": "migrations db-7.internal"}}}
		}
		return llmtest.Turn{Text: "ok"}
	}
	n := len(r.srv.Bodies())
	r.claude("--allowedTools=mcp__ctxtool__search", "--", "SEARCH-NOW: what did we say about migrations?")
	var result string
	for _, body := range r.srv.Bodies()[n:] {
		if bytes.Contains(body, []byte(`"tool_result"`)) {
			result = requestText(body)
		}
	}
	if result == "" {
		t.Fatalf("no request carried the tool's result; paths %v", r.srv.Paths())
	}
	i := strings.Index(result, `"hits"`)
	if i < 0 {
		t.Fatalf("no search result (hits) in the request after the tool call:\n%.3000s", result)
	}
	var out struct {
		Hits []struct {
			Agent, Project, Session, Path, Snippet string
			Line                                   int
		}
	}
	if err := json.NewDecoder(strings.NewReader(result[strings.LastIndex(result[:i], "{"):])).Decode(&out); err != nil || len(out.Hits) == 0 {
		t.Fatalf("the tool result does not decode (%v):\n%.2000s", err, result[i:])
	}
	h := out.Hits[0]
	if h.Agent != "claude-code" || h.Session != a || h.Project != r.proj || h.Line < 1 || !strings.Contains(h.Snippet, "db-7.internal") {
		t.Errorf("hit = %+v; want claude-code, session %s, project %s, a line, the planted fact", h, a, r.proj)
	}
	t.Logf("cited: %s %s %s:%d", h.Agent, h.Project, h.Session, h.Line)
}

// A hook that crashes, and one that hangs past its timeout, leave the
// turn and the compaction unharmed.
func TestClaudeCodeSurvivesBrokenHooks(t *testing.T) {
	for _, c := range []struct{ name, script string }{
		{"crash", "#!/bin/sh\necho 'ctxtool crashed' >&2\nkill -SEGV $$\n"},
		// Hangs in PreCompact (stdin names the event), past the 2 s timeout.
		{"hang", "#!/bin/sh\nif grep -q PreCompact; then exec sleep 30; fi\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newCCRun(t)
			bin := filepath.Join(r.home, "broken-ctxtool")
			ran := filepath.Join(r.home, "hook-runs")
			os.WriteFile(bin, []byte(strings.Replace(c.script, "#!/bin/sh\n", "#!/bin/sh\necho run >> '"+ran+"'\n", 1)), 0o755)
			r.mustCtxtool("install", "claude-code", "--binary", bin)
			settings := filepath.Join(r.home, ".claude", "settings.json")
			data, _ := os.ReadFile(settings)
			os.WriteFile(settings, bytes.ReplaceAll(data, []byte(`"timeout": 15`), []byte(`"timeout": 2`)), 0o600)
			start := time.Now()
			a := r.claude(constraintA)
			t.Logf("turn 1 at %s", time.Since(start).Round(time.Millisecond))
			r.claude("--resume", a, "/compact")
			t.Logf("compaction done at %s", time.Since(start).Round(time.Millisecond))
			n := len(r.srv.Bodies())
			r.claude("--resume", a, "Still there?")
			if len(r.srv.Bodies()) == n {
				t.Fatal("no model request after the compaction")
			}
			tr, _ := filepath.Glob(filepath.Join(r.home, ".claude", "projects", "*", a+".jsonl"))
			if len(tr) != 1 {
				t.Fatalf("transcript of %s: %v", a, tr)
			}
			data, _ = os.ReadFile(tr[0])
			if !bytes.Contains(data, []byte(`"compact_boundary"`)) {
				t.Errorf("no compaction in the transcript with a %s hook", c.name)
			}
			if runs, _ := os.ReadFile(ran); bytes.Count(runs, []byte("run")) < 5 {
				t.Errorf("the %s hook ran %d times; want it at every event", c.name, bytes.Count(runs, []byte("run")))
			}
			t.Logf("%s hook: three turns and a compaction in %s", c.name, time.Since(start).Round(time.Millisecond))
		})
	}
}
