package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxtool/ctxtool/internal/testkit/secretkit"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

func ccLine(cwd, role, text string) string {
	data, _ := json.Marshal(map[string]any{"type": role, "cwd": cwd, "sessionId": "s", "uuid": text[:8],
		"message": map[string]any{"role": role, "content": []map[string]any{{"type": "text", "text": text}}}})
	return string(data) + "\n"
}

func connect(t *testing.T, o Options) *mcp.ClientSession {
	t.Helper()
	srv, _ := New(o)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

// search finds the planted fact in this project's session and cites it;
// another project's session is out of scope unless all_projects; read
// opens only cited files; inputs are capped.
func TestSearchCitesAndReads(t *testing.T) {
	home, state := t.TempDir(), t.TempDir()
	projA, projB := filepath.Join(home, "src", "billing"), filepath.Join(home, "src", "other")
	os.MkdirAll(projA, 0o700)
	os.MkdirAll(projB, 0o700)
	a := filepath.Join(home, ".claude", "projects", claudeProjectDir(projA), "sa.jsonl")
	b := filepath.Join(home, ".claude", "projects", claudeProjectDir(projB), "sb.jsonl")
	os.MkdirAll(filepath.Dir(a), 0o700)
	os.MkdirAll(filepath.Dir(b), 0o700)
	os.WriteFile(a, []byte(ccLine(projA, "user", "hello there, let us start")+ccLine(projA, "user", "The ledger database is postgres://billing@db-7.internal:5432/ledger, never the replica.")), 0o600)
	os.WriteFile(b, []byte(ccLine(projB, "user", "Unrelated: the ledger database of the other project is sqlite.")), 0o600)
	ix, err := recall.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := context.Background()
	for _, f := range []string{a, b} {
		if _, err := ix.Index(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	// The agent cannot widen the scope by itself.
	narrow := connect(t, Options{Open: func() (Searcher, error) { return ix, nil }, Cwd: projA, StateDir: state, Home: home})
	if out, isErr := call(t, narrow, "search", map[string]any{"query": "ledger database", "all_projects": true}); !isErr || strings.Contains(out, "sb") || !strings.Contains(out, "mcp.allProjects") {
		t.Errorf("all_projects without the user's consent = %s (error %v); want a refusal naming mcp.allProjects", out, isErr)
	}
	cs := connect(t, Options{Open: func() (Searcher, error) { return ix, nil }, Cwd: projA, StateDir: state, Home: home, AllProjects: true})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools = %+v, %v", tools, err)
	}
	out, isErr := call(t, cs, "search", map[string]any{"query": "ledger database"})
	var res SearchOut
	if isErr || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) != 1 {
		t.Fatalf("search = %s (error %v); want one hit in this project", out, isErr)
	}
	h := res.Hits[0]
	if h.Agent != "claude-code" || h.Project != projA || h.Session != "sa" || h.Line > 2 || h.EndLine < 2 || h.Path != a || !strings.Contains(h.Snippet, "db-7.internal") {
		t.Errorf("hit = %+v", h)
	}
	if out, _ = call(t, cs, "search", map[string]any{"query": "ledger database", "all_projects": true}); !strings.Contains(out, "sb") {
		t.Errorf("all_projects did not reach the other project: %s", out)
	}
	if out, isErr = call(t, cs, "read", map[string]any{"path": a, "line": 2}); isErr || !strings.Contains(out, "never the replica") {
		t.Errorf("read = %s, %v", out, isErr)
	}
	if out, isErr = call(t, cs, "read", map[string]any{"path": "/etc/passwd", "line": 1}); !isErr || !strings.Contains(out, "not cited") {
		t.Errorf("read of an uncited file = %s, %v", out, isErr)
	}
	if out, isErr = call(t, cs, "search", map[string]any{"query": strings.Repeat("x", MaxQuery+1)}); !isErr {
		t.Errorf("an over-long query was accepted: %s", out)
	}
	if out, isErr = call(t, cs, "context_size", map[string]any{}); isErr || !strings.Contains(out, "ctx") {
		t.Errorf("context_size = %s, %v", out, isErr)
	}
	// A Codex rollout of this project: context_size finds it by its cwd.
	tid := "01a234cd-5a21-71e1-9d73-d810b1a20bbf"
	ro := filepath.Join(home, ".codex", "sessions", "2026", "12", "02", "rollout-2026-12-02T03-30-02-"+tid+".jsonl")
	os.MkdirAll(filepath.Dir(ro), 0o700)
	os.WriteFile(ro, []byte(`{"type":"session_meta","payload":{"id":"`+tid+`","cwd":"`+projA+`"}}`+"\n"+
		`{"type":"turn_context","payload":{"model_context_window":272000,"model_auto_compact_token_limit":200000}}`+"\n"+
		`{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":50000},"model_context_window":272000}}}`+"\n"), 0o600)
	if out, isErr = call(t, cs, "context_size", map[string]any{"agent": "codex"}); isErr || out != "ctx 50.0k/200k 25% · 150k to auto-compact" {
		t.Errorf("codex context_size = %q, %v", out, isErr)
	}
	if out, isErr = call(t, cs, "checkpoint", map[string]any{"agent": "codex"}); !isErr || !strings.Contains(out, tid) {
		t.Errorf("codex checkpoint before any = %q, %v; want an error naming the session", out, isErr)
	}
	if out, isErr = call(t, cs, "checkpoint", map[string]any{"session_id": "../x"}); !isErr {
		t.Errorf("a session id with a path was accepted: %s", out)
	}
}

// The MCP tools hand an agent only redacted text: a credential said in a
// session comes back from search and read as its marker, and searching
// for the marker's fingerprint finds the line.
func TestToolsNeverReturnSecrets(t *testing.T) {
	home, state := t.TempDir(), t.TempDir()
	proj := filepath.Join(home, "src", "deploy")
	os.MkdirAll(proj, 0o700)
	f := filepath.Join(home, ".claude", "projects", claudeProjectDir(proj), "sd.jsonl")
	os.MkdirAll(filepath.Dir(f), 0o700)
	samples := secretkit.Samples(7)
	var data strings.Builder
	data.WriteString(ccLine(proj, "user", "hello there, the deploy notes follow"))
	for _, s := range samples {
		data.WriteString(ccLine(proj, "user", "deploy credential: "+s.Text))
	}
	os.WriteFile(f, []byte(data.String()), 0o600)
	ix, err := recall.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Index(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Open: func() (Searcher, error) { return ix, nil }, Cwd: proj, StateDir: state, Home: home})
	out, isErr := call(t, cs, "search", map[string]any{"query": "deploy credential", "max_results": MaxResults})
	var res SearchOut
	if isErr || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) == 0 {
		t.Fatalf("search = %s (error %v)", out, isErr)
	}
	if leaked := secretkit.Leaks([]byte(out), samples); len(leaked) > 0 {
		t.Errorf("search returned %d secrets in clear, e.g. %s", len(leaked), leaked[0].Kind)
	}
	for line := 2; line <= len(samples)+1; line++ {
		out, isErr := call(t, cs, "read", map[string]any{"path": f, "line": line})
		if isErr {
			t.Fatalf("read line %d: %s", line, out)
		}
		if leaked := secretkit.Leaks([]byte(out), samples); len(leaked) > 0 {
			t.Errorf("read of line %d returned the %s in clear", line, leaked[0].Kind)
		}
		if !strings.Contains(out, "[secret:") {
			t.Errorf("read of line %d holds no marker: %s", line, out)
		}
	}
	fp := secrets.Fingerprint([]byte(samples[0].Value))
	if out, _ := call(t, cs, "search", map[string]any{"query": fp}); !strings.Contains(out, "sd") {
		t.Errorf("search by the fingerprint %s found nothing: %s", fp, out)
	}
}
