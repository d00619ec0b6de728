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
	if out, err := r.ctxtool("install", "claude-code"); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if out, err := r.ctxtool("pin", "Answer in English only."); err != nil {
		t.Fatalf("pin: %v\n%s", err, out)
	}
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
	if out, err := r.ctxtool("uninstall", "claude-code"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
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
