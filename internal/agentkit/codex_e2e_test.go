package agentkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// codexRun is one test's Codex: a home with config.toml pointing at a
// fake Responses server.
type codexRun struct {
	*ccRun
}

// The compaction prompt of Codex 0.171 (its summarization request).
const codexCompactCue = "CONTEXT CHECKPOINT COMPACTION"

func newCodexRun(t *testing.T) *codexRun {
	a := needAgents(t)
	srv := llmtest.NewResponses()
	t.Cleanup(srv.Close)
	home := t.TempDir()
	proj := filepath.Join(home, "billing")
	os.MkdirAll(proj, 0o700)
	cfg := "model = \"fake-model\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + srv.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_KEY\"\n"
	os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &codexRun{&ccRun{t: t, a: a, home: home, proj: proj, env: []string{"FAKE_KEY=x", "CODEX_HOME=" + filepath.Join(home, ".codex")}}}
	r.wire = srv
	srv.Answer = func(body []byte) llmtest.Turn {
		if bytes.Contains(body, []byte(codexCompactCue)) || bytes.Contains(body, []byte("summary")) && bytes.Contains(body, []byte("handoff")) {
			return llmtest.Turn{Text: "Summary: the user works on the billing service."}
		}
		if bytes.Contains(body, []byte("ASSISTANT-RULE")) && !bytes.Contains(body, []byte(assistantRule)) {
			// A rule the model states: Codex's summary drops it (only the
			// user's messages are kept verbatim).
			return llmtest.Turn{Text: assistantRule + " " + strings.Repeat("All good. ", 30)}
		}
		return llmtest.Turn{Text: "Noted, " + strings.Repeat("all good. ", 30)}
	}
	return r
}

// autoCompact resumes thread id with a prompt long enough to pass a
// 3000-token auto-compact limit, and returns the first request after
// Codex's compaction request (the test fails when there is none).
func (r *codexRun) autoCompact(id, prompt string) []byte {
	r.t.Helper()
	n0 := len(r.wire.Bodies())
	r.codex("-c", "model_auto_compact_token_limit=3000", "resume", id, prompt+strings.Repeat("Context line. ", 300))
	bodies := r.wire.Bodies()[n0:]
	ci := -1
	for i, b := range bodies {
		if bytes.Contains(b, []byte(codexCompactCue)) {
			ci = i
		}
	}
	if ci < 0 || ci+1 >= len(bodies) {
		r.t.Fatalf("thread %s: no compaction request followed by another among %d requests", id, len(bodies))
	}
	return bodies[ci+1]
}

// codex runs one `codex exec` and returns the thread id.
func (r *codexRun) codex(args ...string) string {
	r.t.Helper()
	base := []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--json"}
	run := RunAgent(context.Background(), r.a.Codex, r.home, r.proj, r.env, 90*time.Second, append(base, args...)...)
	if run.Err != nil {
		r.t.Fatalf("codex %v: %v (%s)\n%s\n%s", args, run.Err, run.Took, run.Stdout, run.Stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(run.Stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.ThreadID != "" {
			return ev.ThreadID
		}
	}
	r.t.Fatalf("codex %v: no thread id in\n%s\n%s", args, run.Stdout, run.Stderr)
	return ""
}

const assistantRule = "From now on we must never deploy the ledger service on Fridays."

// After Codex's automatic compaction (model_auto_compact_token_limit), the
// first request after it carries that session's resume text and the rule
// the summary dropped (the audit names it); a second session of the same
// project gets its own.
func TestCodexAutoCompactionKeepsState(t *testing.T) {
	r := newCodexRun(t)
	r.mustCtxtool("install", "codex")
	start := time.Now()
	sessions := map[string]string{}
	for _, c := range []struct{ name, prompt string }{{"A", constraintA + " ASSISTANT-RULE"}, {"B", constraintB}} {
		id := r.codex(c.prompt)
		sessions[c.name] = id
		after := r.autoCompact(id, "Please also add a --verbose flag to the loader. ")
		first := requestText(after)
		if !strings.Contains(first, "[ctxtool] State of this session ("+id+")") {
			t.Errorf("session %s: the first request after Codex's compaction lacks its resume text", c.name)
		}
		if c.name == "A" && !strings.Contains(first, "Left out of the last summary") || !strings.Contains(first, assistantRule) && c.name == "A" {
			t.Errorf("session A: the rule the summary dropped is not in the first request after it:\n%.3000s", first)
		}
		if c.name == "B" && (strings.Contains(first, sessions["A"]) || strings.Contains(first, "db-7.internal")) {
			t.Errorf("session A's state reached session B")
		}
	}
	log := readLog(t, r.home)
	if !strings.Contains(log, "audit: ctxtool: the summary left out") || !strings.Contains(log, "deploy the ledger service on Fridays") {
		t.Errorf("no audit naming the dropped rule in the hook log:\n%s", log)
	}
	fig := "codex auto compaction round trip (2 sessions, 4 codex runs): " + time.Since(start).Round(time.Millisecond).String() + "; hook times " + hookTimes(log)
	t.Log(fig)
	writeFigure(t, fig)
}

// codex mcp list shows ctxtool; the scripted model calls its search tool
// and the result cites the planted fact.
func TestCodexCallsCtxtoolsSearch(t *testing.T) {
	r := newCodexRun(t)
	r.mustCtxtool("install", "codex")
	a := r.codex(constraintA)
	r.mustCtxtool("index", filepath.Join(r.home, ".codex", "sessions"))
	list := RunAgent(context.Background(), r.a.Codex, r.home, r.proj, r.env, 60*time.Second, "mcp", "list")
	if list.Err != nil || !strings.Contains(list.Stdout, "ctxtool") {
		t.Fatalf("codex mcp list: %v\n%s\n%s", list.Err, list.Stdout, list.Stderr)
	}
	t.Logf("codex mcp list:\n%s", list.Stdout)
	var toolName string
	r.wire.Answer = func(body []byte) llmtest.Turn {
		switch {
		case bytes.Contains(body, []byte(`"function_call_output"`)):
			return llmtest.Turn{Text: "Found it."}
		case bytes.Contains(body, []byte("SEARCH-NOW")):
			// Codex 0.171 offers an MCP server's tools as one namespace
			// tool, "mcp__ctxtool", holding its functions.
			var req struct {
				Tools []struct {
					Type  string `json:"type"`
					Name  string `json:"name"`
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
				} `json:"tools"`
			}
			json.Unmarshal(body, &req)
			for _, tl := range req.Tools {
				for _, f := range tl.Tools {
					if tl.Name == "mcp__ctxtool" && f.Name == "search" {
						toolName = tl.Name + "." + f.Name
					}
				}
			}
			if toolName == "" {
				t.Errorf("Codex did not offer ctxtool's search tool")
				return llmtest.Turn{Text: "no ctxtool tool"}
			}
			return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "call_1", Name: "search", Namespace: "mcp__ctxtool", Arguments: map[string]any{"query": "migrations db-7.internal"}}}
		}
		return llmtest.Turn{Text: "ok"}
	}
	n := len(r.wire.Bodies())
	r.codex("SEARCH-NOW: what did we say about migrations?")
	var result string
	for _, body := range r.wire.Bodies()[n:] {
		if bytes.Contains(body, []byte(`"function_call_output"`)) {
			var req struct {
				Input []struct {
					Type   string          `json:"type"`
					Output json.RawMessage `json:"output"`
				} `json:"input"`
			}
			json.Unmarshal(body, &req)
			for _, it := range req.Input {
				if it.Type == "function_call_output" {
					var sb strings.Builder
					var v any
					json.Unmarshal(it.Output, &v)
					collect(v, &sb)
					result = sb.String()
				}
			}
		}
	}
	if result == "" {
		t.Fatalf("no request carried the tool's output (tool %q)", toolName)
	}
	i := strings.Index(result, `{"hits"`)
	var out struct {
		Hits []struct {
			Agent, Project, Session, Snippet, Path string
			Line, EndLine                          int
		}
	}
	if i < 0 || json.NewDecoder(strings.NewReader(result[i:])).Decode(&out) != nil || len(out.Hits) == 0 {
		t.Fatalf("no search hits in the tool's output:\n%.2000s", result)
	}
	h := out.Hits[0]
	// The cited lines hold the planted fact (the snippet may stop short).
	data, _ := os.ReadFile(h.Path)
	lines := strings.Split(string(data), "\n")
	cited := ""
	if h.Line >= 1 && h.EndLine <= len(lines) && h.Line <= h.EndLine {
		cited = strings.Join(lines[h.Line-1:h.EndLine], "\n")
	}
	if h.Agent != "codex" || h.Project != r.proj || !strings.HasSuffix(h.Session, a) || !strings.Contains(cited, "db-7.internal") {
		t.Errorf("hit = %+v; want codex, project %s, session …%s, lines holding the planted fact", h, r.proj, a)
	}
	t.Logf("cited: %s %s %s:%d", h.Agent, h.Project, h.Session, h.Line)
	t.Logf("codex called %s", toolName)
}

// A hook that crashes leaves Codex's turn and its automatic compaction
// unharmed.
func TestCodexSurvivesACrashingHook(t *testing.T) {
	r := newCodexRun(t)
	bin := filepath.Join(r.home, "broken-ctxtool")
	ran := filepath.Join(r.home, "hook-runs")
	os.WriteFile(bin, []byte("#!/bin/sh\necho run >> '"+ran+"'\necho 'ctxtool crashed' >&2\nkill -SEGV $$\n"), 0o755)
	r.mustCtxtool("install", "codex", "--binary", bin)
	id := r.codex(constraintA)
	r.autoCompact(id, "Go on. ")
	if tr := firstRolloutWith(t, r.home, `"compacted"`); tr == "" {
		t.Errorf("no compacted item in the rollout")
	}
	runs, _ := os.ReadFile(ran)
	if n := bytes.Count(runs, []byte("run")); n < 3 {
		t.Errorf("the crashing hook ran %d times; want it run (and crash) at least at SessionStart, PreCompact, PostCompact", n)
	}
}

// firstRolloutWith is a rollout under home holding s ("" when none).
func firstRolloutWith(t *testing.T, home, s string) string {
	var found string
	filepath.Walk(filepath.Join(home, ".codex", "sessions"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".jsonl") && found == "" {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(s)) {
				found = p
			}
		}
		return nil
	})
	return found
}
