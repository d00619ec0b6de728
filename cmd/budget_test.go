package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/budget"
	"github.com/ctxtool/ctxtool/pkg/config"
)

func writeWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		"AGENTS.md":            strings.Repeat("Always run go test ./... before committing.\n", 900),
		"SOUL.md":              "Direct and brief.\n",
		"USER.md":              "Ana; UTC+1.\n",
		"MEMORY.md":            "- ledger: PostgreSQL 16\n",
		"memory/2026-03-01.md": "- chose pg16\n",
	}
	for name, text := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, p, []byte(text), 0o644)
	}
	return ws
}

// TestBudgetEmitContextLoadsInPi is the --emit context done-when check: the
// emitted messages, counted with chars/4 — the system texts here, every
// other message by pi's own estimateTokens after loading them as a session
// in pi — add up to the reported total.
func TestBudgetEmitContextLoadsInPi(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	f := genSession(t, dir, "s.jsonl", 40)
	ws := writeWorkspace(t)
	sys := filepath.Join(dir, "system.txt")
	testkit.WriteFile(t, sys, []byte(strings.Repeat("You are a coding agent. ", 100)), 0o644)
	for _, extra := range [][]string{nil, {"--summarize", "--summarizer", "extractive"}} {
		args := append([]string{"budget", f, "--workspace", ws, "--system-prompt", sys, "--context-window", "48000",
			"--state-dir", filepath.Join(dir, "state"), "--emit", "context"}, extra...)
		out, _ := runOK(t, args...)
		var e EmittedContext
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("emit context output: %v\n%s", err, out)
		}
		if len(e.Messages) != len(e.Meta) || len(e.Messages) < 3 {
			t.Fatalf("%d messages, %d meta", len(e.Messages), len(e.Meta))
		}
		system := 0
		session := []string{`{"type":"session","version":3,"id":"emit-check","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/tmp"}`}
		parent := "null"
		for i, raw := range e.Messages {
			var m struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			if m.Role == "system" {
				text, _ := m.Content.(string)
				system += int(math.Ceil(float64(len(utf16.Encode([]rune(text)))) / 4))
				continue
			}
			id := fmt.Sprintf("m%07d", i)
			session = append(session, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T00:00:00.000Z","message":%s}`, id, parent, raw))
			parent = fmt.Sprintf("%q", id)
		}
		file := filepath.Join(dir, fmt.Sprintf("emitted-%d.jsonl", len(extra)))
		testkit.WriteFile(t, file, []byte(strings.Join(session, "\n")+"\n"), 0o644)
		pi := oracle.CheckOne(t, file)
		if !pi.Loads || pi.ContextMessages != len(session)-1 {
			t.Fatalf("pi loads %v with %d messages, want %d (%s)", pi.Loads, pi.ContextMessages, len(session)-1, pi.Error)
		}
		if system+pi.HeuristicTokens != e.TotalTokens || e.EmittedTokens != e.TotalTokens {
			t.Fatalf("%v: system %d + pi %d = %d, reported total %d (emitted %d)", extra, system, pi.HeuristicTokens, system+pi.HeuristicTokens, e.TotalTokens, e.EmittedTokens)
		}
		if pi.OrphanToolResults != 0 {
			t.Fatalf("%v: the kept history has %d tool results without their call", extra, pi.OrphanToolResults)
		}
		if len(extra) > 0 && e.Meta[2].Region != budget.RegionSummary {
			t.Fatalf("--summarize: third message is %s, want the summary", e.Meta[2].Region)
		}
	}
}

// TestBudgetTableAndJSON runs the command for humans and machines.
func TestBudgetTableAndJSON(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	f := genSession(t, dir, "s.jsonl", 30)
	ws := writeWorkspace(t)
	out, errOut := runOK(t, "budget", f, "--workspace", ws, "--context-window", "40000", "--state-dir", dir, "-v")
	for _, want := range []string{"system prompt", "bootstrap", "history", "AGENTS.md", "truncated at 16,000 chars", "missing", "memory search only", "preserved"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "context management: bootstrap budget=4000 tokens, maxChars=16000") {
		t.Errorf("-v lacks VS7's log line:\n%s", errOut)
	}
	out, _ = runOK(t, "budget", f, "--workspace", ws, "--context-window", "40000", "--state-dir", dir, "--json")
	var r budget.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Budget.Total != 40000 || r.HistoryBudget != r.Budget.History+r.Reclaimed+r.Budget.Reserve || len(r.Bootstrap) != 8 {
		t.Fatalf("json report %+v", r)
	}
	if _, _, code := runCLI(t, "budget", f, "--emit", "prompt"); code != 2 {
		t.Fatalf("--emit prompt: exit %d, want 2", code)
	}
}

// The contextManagement defaults in config are VS7's, as budget has them.
func TestBudgetConfigDefaults(t *testing.T) {
	cleanEnv(t)
	cfg, err := config.Load("", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := budgetConfig(cfg); got != budget.DefaultConfig() {
		t.Fatalf("config defaults %+v\nbudget defaults %+v", got, budget.DefaultConfig())
	}
}

// TestBudgetSemanticHistoryFromIndex: with an index built by 'ctxtool
// index', the last prompt's recall hits are injected.
func TestBudgetSemanticHistoryFromIndex(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	old, cur := recalltest.WritePriorDecision(t, dir)
	runOK(t, "index", old, "--state-dir", state)
	t.Setenv("CTXTOOL_CONTEXTMANAGEMENT_SEMANTICHISTORY_MINRELEVANCESCORE", "0.3")
	out, _ := runOK(t, "budget", cur, "--state-dir", state, "--json")
	var r budget.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Semantic.Chunks) != 1 || !strings.Contains(r.Semantic.Chunks[0].Snippet, "PostgreSQL 16") || r.Actual.SemanticHistory == 0 {
		t.Fatalf("semantic history: %+v", r.Semantic)
	}
}

// OpenClaw's own config (agents.defaults.contextManagement, JSON5) sets the
// budget, as VS7's config block does.
func TestBudgetFromOpenClawConfig(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	f := genSession(t, dir, "s.jsonl", 10)
	oc := filepath.Join(dir, "openclaw.json")
	os.WriteFile(oc, []byte(`{
  // VS7
  agents: { defaults: { contextManagement: {
    budget: { systemPromptRatio: 0.10, historyRatio: 0.50, minResponseTokens: 8192, },
    rollingSummary: { windowSize: 3 },
  } } },
}`), 0o644)
	out, _ := runOK(t, "budget", f, "--openclaw-config", oc, "--context-window", "20000", "--state-dir", dir, "--json")
	var r budget.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// 20000: system 2000, bootstrap 2000, history 10000 − (8192 − 4000), response 8192.
	if r.Budget.SystemPrompt != 2000 || r.Budget.History != 10000-(8192-4000) || r.Budget.Response != 8192 || r.History.PreservedTurns != 3 {
		t.Fatalf("budget %+v, preserved %d", r.Budget, r.History.PreservedTurns)
	}
}
