package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/secretkit"
	"github.com/ctxtool/ctxtool/pkg/pins"
)

const planted = "Never run migrations against db-7.internal without the --dry-run flag."

// ccLine is one Claude Code transcript line.
func ccLine(typ string, content any, extra map[string]any) string {
	m := map[string]any{"type": typ, "sessionId": "s", "uuid": fmt.Sprint(time.Now().UnixNano()),
		"message": map[string]any{"role": typ, "content": content}}
	for k, v := range extra {
		m[k] = v
	}
	data, _ := json.Marshal(m)
	return string(data) + "\n"
}

type env struct {
	home, state string
	h           *Handler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	home := t.TempDir()
	e := &env{home: home, state: filepath.Join(t.TempDir(), "state")}
	e.h = &Handler{StateDir: e.state, Home: home, Count: func(s string) int { return len(s) / 4 }}
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	return e
}

func (e *env) transcript(t *testing.T, agent, rel string, lines ...string) string {
	t.Helper()
	root := filepath.Join(e.home, ".claude", "projects")
	if agent == Codex {
		root = filepath.Join(e.home, ".codex", "sessions")
	}
	p := filepath.Join(root, rel)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func appendTo(t *testing.T, p string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Join(lines, ""))
	f.Close()
}

func (e *env) hook(t *testing.T, agent, js string) (*Answer, error) {
	t.Helper()
	in, err := Parse(strings.NewReader(js), agent, "")
	if err != nil {
		return nil, err
	}
	return e.h.Handle(in)
}

func hookJSON(sid, path, event string, kv ...string) string {
	m := map[string]any{"session_id": sid, "transcript_path": path, "hook_event_name": event, "cwd": "/tmp/proj"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	data, _ := json.Marshal(m)
	return string(data)
}

func additional(t *testing.T, a *Answer) string {
	t.Helper()
	var out struct {
		H struct {
			Event string `json:"hookEventName"`
			Ctx   string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if a == nil || a.Stdout == "" {
		return ""
	}
	if err := json.Unmarshal([]byte(a.Stdout), &out); err != nil {
		t.Fatalf("answer %q is not JSON: %v", a.Stdout, err)
	}
	return out.H.Ctx
}

// A Claude Code compaction: PreCompact names the planted constraint; the
// summary leaves it out; SessionStart(compact) hands it back with the
// session's resume text; PostCompact names it.
func TestClaudeCodeCompactionRoundTrip(t *testing.T) {
	e := newEnv(t)
	p := e.transcript(t, ClaudeCode, "proj/s1.jsonl",
		ccLine("user", planted+" Please add a --verbose flag to the loader.", nil),
		ccLine("assistant", []map[string]any{{"type": "text", "text": "We decided to use SQLite for the cache. The config is at /etc/billing/ledger.yaml."}}, nil),
		ccLine("user", "ok, continue", nil))
	a, err := e.hook(t, ClaudeCode, hookJSON("s1", p, "PreCompact", "trigger", "manual"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Constraints:", planted, "Decisions:", "SQLite", "/etc/billing/ledger.yaml"} {
		if !strings.Contains(a.Stdout, want) {
			t.Errorf("PreCompact instructions lack %q:\n%s", want, a.Stdout)
		}
	}
	appendTo(t, p,
		`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":1234}}`+"\n",
		ccLine("user", "This session is being continued. Summary: We decided to use SQLite for the cache. The config is at /etc/billing/ledger.yaml. Please add a --verbose flag to the loader.", map[string]any{"isCompactSummary": true}))
	a, err = e.hook(t, ClaudeCode, hookJSON("s1", p, "SessionStart", "source", "compact"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := additional(t, a)
	if !strings.Contains(ctx, "Left out of the last summary") || !strings.Contains(ctx, planted) {
		t.Errorf("SessionStart context lacks the dropped constraint:\n%s", ctx)
	}
	if strings.Contains(ctx, "decision:") || strings.Contains(ctx, "request:") {
		t.Errorf("a decision the summary kept is listed as dropped:\n%s", ctx)
	}
	if !strings.Contains(ctx, "Post-compaction checkpoint restore") {
		t.Errorf("SessionStart context lacks the checkpoint's resume text:\n%s", ctx)
	}
	if n := e.h.Count(ctx); n > ContextBudget {
		t.Errorf("context is %d tokens, over %d", n, ContextBudget)
	}
	a, err = e.hook(t, ClaudeCode, hookJSON("s1", p, "PostCompact", "trigger", "manual", "compact_summary", "whatever"))
	if err != nil || !strings.Contains(a.Stdout, "db-7.internal") || !strings.Contains(a.Stdout, "systemMessage") {
		t.Errorf("PostCompact = %+v, %v; want the audit naming the dropped constraint", a, err)
	}
	// Delivered at SessionStart: the next prompt adds nothing.
	if a, err = e.hook(t, ClaudeCode, hookJSON("s1", p, "UserPromptSubmit", "prompt", "hi")); err != nil || a.Stdout != "" {
		t.Errorf("UserPromptSubmit after delivery = %q, %v; want nothing", a.Stdout, err)
	}
}

// When the summary is not yet in the transcript at SessionStart (Claude
// Code runs PostCompact after it), PostCompact audits compact_summary and
// the next prompt gets what it dropped, once.
func TestPostCompactSummaryReachesTheNextPrompt(t *testing.T) {
	e := newEnv(t)
	p := e.transcript(t, ClaudeCode, "proj/s2.jsonl", ccLine("user", planted, nil), ccLine("user", "We decided to ship on Friday.", nil))
	if _, err := e.hook(t, ClaudeCode, hookJSON("s2", p, "PreCompact")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, `{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":900}}`+"\n")
	a, err := e.hook(t, ClaudeCode, hookJSON("s2", p, "SessionStart", "source", "compact"))
	if err != nil || strings.Contains(additional(t, a), "Left out") {
		t.Fatalf("SessionStart before the audit = %+v, %v", a, err)
	}
	a, err = e.hook(t, ClaudeCode, hookJSON("s2", p, "PostCompact", "compact_summary", "We decided to ship on Friday."))
	if err != nil || !strings.Contains(a.Stdout, "db-7.internal") {
		t.Fatalf("PostCompact = %+v, %v", a, err)
	}
	a, err = e.hook(t, ClaudeCode, hookJSON("s2", p, "UserPromptSubmit", "prompt", "go on"))
	if ctx := additional(t, a); err != nil || !strings.Contains(ctx, planted) || strings.Contains(ctx, "ship on Friday") {
		t.Fatalf("UserPromptSubmit = %q, %v; want only the dropped constraint", ctx, err)
	}
	if a, _ = e.hook(t, ClaudeCode, hookJSON("s2", p, "UserPromptSubmit", "prompt", "again")); a.Stdout != "" {
		t.Errorf("the dropped facts were handed back twice: %q", a.Stdout)
	}
}

// Codex: the compacted item is the summary; PreCompact prints nothing (its
// output may not carry context); SessionStart returns the dropped fact.
func TestCodexCompactedItemIsAudited(t *testing.T) {
	e := newEnv(t)
	msg := func(role, text string) string {
		typ := "input_text"
		if role == "assistant" {
			typ = "output_text"
		}
		data, _ := json.Marshal(map[string]any{"type": "response_item", "payload": map[string]any{"type": "message", "role": role, "content": []map[string]any{{"type": typ, "text": text}}}})
		return string(data) + "\n"
	}
	p := e.transcript(t, Codex, "2026/12/02/rollout-x.jsonl",
		`{"type":"session_meta","payload":{"id":"t1"}}`+"\n",
		`{"type":"turn_context","payload":{"model":"gpt-5","model_context_window":272000,"model_auto_compact_token_limit":500}}`+"\n",
		msg("user", "<environment_context>cwd</environment_context>"),
		msg("user", planted),
		msg("assistant", "We decided to keep the retry budget at 7 attempts."))
	a, err := e.hook(t, Codex, `{"session_id":"t1","turn_id":"u1","model":"gpt-5","hook_event_name":"PreCompact","trigger":"auto","transcript_path":"`+p+`","cwd":"/tmp/proj"}`)
	if err != nil || a.Stdout != "" {
		t.Fatalf("Codex PreCompact = %+v, %v; want no stdout", a, err)
	}
	appendTo(t, p, `{"type":"compacted","payload":{"message":"Summary: retry budget stays at 7 attempts.","replacement_history":[]}}`+"\n")
	a, err = e.hook(t, Codex, `{"session_id":"t1","turn_id":"u1","model":"gpt-5","hook_event_name":"PostCompact","transcript_path":"`+p+`","cwd":"/tmp/proj"}`)
	if err != nil || !strings.Contains(a.Stdout, "db-7.internal") {
		t.Fatalf("Codex PostCompact = %+v, %v", a, err)
	}
	a, err = e.hook(t, Codex, `{"session_id":"t1","model":"gpt-5","hook_event_name":"SessionStart","source":"compact","transcript_path":"`+p+`","cwd":"/tmp/proj"}`)
	if ctx := additional(t, a); err != nil || !strings.Contains(ctx, planted) || !strings.Contains(ctx, "Post-compaction checkpoint restore") {
		t.Fatalf("Codex SessionStart = %q, %v", ctx, err)
	}
	g, err := e.h.Status(&StatusInput{SessionID: "t1", TranscriptPath: p}, Codex)
	if err != nil || g.Limit != 500 || g.Basis != "codex limit" || g.Window != 272000 {
		t.Errorf("Codex gauge = %+v, %v; want the rollout's limit 500", g, err)
	}
}

// Two sessions of one project each get their own resume text.
func TestSessionsNeverGetAnothersContext(t *testing.T) {
	e := newEnv(t)
	pa := e.transcript(t, ClaudeCode, "proj/a.jsonl", ccLine("user", "Alpha: the port is 31686. Never touch prod-alpha.", nil))
	pb := e.transcript(t, ClaudeCode, "proj/b.jsonl", ccLine("user", "Beta: the port is 42424. Never touch prod-beta.", nil))
	for _, x := range [][2]string{{"a", pa}, {"b", pb}} {
		if _, err := e.hook(t, ClaudeCode, hookJSON(x[0], x[1], "PreCompact")); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := e.hook(t, ClaudeCode, hookJSON("a", pa, "SessionStart", "source", "compact"))
	b, _ := e.hook(t, ClaudeCode, hookJSON("b", pb, "SessionStart", "source", "compact"))
	ca, cb := additional(t, a), additional(t, b)
	if !strings.Contains(ca, "prod-alpha") || strings.Contains(ca, "prod-beta") || !strings.Contains(cb, "prod-beta") || strings.Contains(cb, "prod-alpha") {
		t.Errorf("contexts mixed:\nA: %s\nB: %s", ca, cb)
	}
	// A startup adds nothing when there are no pins.
	if s, _ := e.hook(t, ClaudeCode, hookJSON("a", pa, "SessionStart", "source", "startup")); s.Stdout != "" {
		t.Errorf("startup answered %q", s.Stdout)
	}
}

func TestPinsAreRestored(t *testing.T) {
	e := newEnv(t)
	proj := t.TempDir()
	if _, err := pins.Add(e.state, proj, "  always   answer in French "); err != nil {
		t.Fatal(err)
	}
	p := e.transcript(t, ClaudeCode, "proj/s.jsonl", ccLine("user", "hello", nil))
	js := strings.Replace(hookJSON("s", p, "SessionStart", "source", "startup"), `"/tmp/proj"`, `"`+proj+`"`, 1)
	a, err := e.hook(t, ClaudeCode, js)
	if ctx := additional(t, a); err != nil || !strings.Contains(ctx, "- always answer in French") {
		t.Fatalf("pins not in the context: %q, %v", ctx, err)
	}
}

// Untrusted input is refused, each with a reason.
func TestUntrustedInputIsRefused(t *testing.T) {
	e := newEnv(t)
	good := e.transcript(t, ClaudeCode, "proj/s.jsonl", ccLine("user", "hi", nil))
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(outside, []byte("{}\n"), 0o600)
	link := filepath.Join(e.home, ".claude", "projects", "proj", "link.jsonl")
	os.Symlink(outside, link)
	dir := filepath.Join(e.home, ".claude", "projects", "proj", "d.jsonl")
	os.Mkdir(dir, 0o700)
	cases := map[string]string{
		"session id with a slash":  hookJSON("../etc", good, "SessionStart"),
		"session id of dots":       hookJSON("..", good, "SessionStart"),
		"outside the session dirs": hookJSON("s", outside, "SessionStart"),
		"symlink out":              hookJSON("s", link, "SessionStart"),
		"relative path":            hookJSON("s", "proj/s.jsonl", "SessionStart"),
		"a directory":              hookJSON("s", dir, "SessionStart"),
		"dot-dot escape":           hookJSON("s", filepath.Join(e.home, ".claude", "projects", "..", "x.jsonl"), "SessionStart"),
		"not JSON":                 "hello",
		"too large":                `{"session_id":"s","x":"` + strings.Repeat("a", MaxInput) + `"}`,
		"unknown event":            hookJSON("s", good, "Notification"),
		"codex path for claude":    hookJSON("s", filepath.Join(e.home, ".codex", "sessions", "r.jsonl"), "SessionStart"),
	}
	for name, js := range cases {
		if a, err := e.hook(t, ClaudeCode, js); err == nil {
			t.Errorf("%s: accepted (%+v)", name, a)
		}
	}
	if _, err := e.hook(t, ClaudeCode, hookJSON("s", good, "SessionStart", "source", "compact")); err != nil {
		t.Errorf("the good input was refused: %v", err)
	}
}

// The scan reads only appended lines; a line still being written waits.
func TestScanIsIncremental(t *testing.T) {
	e := newEnv(t)
	p := e.transcript(t, ClaudeCode, "proj/s.jsonl", ccLine("user", "Never deploy on Friday.", nil))
	appendTo(t, p, `{"type":"user","message":{"role":"user","content":"We decided to`)
	if _, err := e.hook(t, ClaudeCode, hookJSON("s", p, "Stop")); err != nil {
		t.Fatal(err)
	}
	var st scanState
	data, _ := os.ReadFile(filepath.Join(e.state, "hooks", ClaudeCode, "s", "scan.json"))
	json.Unmarshal(data, &st)
	if st.Line != 1 || len(st.Facts) == 0 {
		t.Fatalf("after the first scan: line %d, %d facts; want line 1 and the constraint", st.Line, len(st.Facts))
	}
	appendTo(t, p, ` use Postgres."}}`+"\n")
	a, err := e.hook(t, ClaudeCode, hookJSON("s", p, "PreCompact"))
	if err != nil || !strings.Contains(a.Stdout, "Never deploy on Friday") || !strings.Contains(a.Stdout, "use Postgres") {
		t.Fatalf("PreCompact after the append = %q, %v", a.Stdout, err)
	}
}

// A credential the user said never leaves through a hook: not in
// PreCompact's instructions, not in the state dir's caches, not in the
// context SessionStart hands back; the instructions name its marker.
func TestHooksNeverHandBackSecrets(t *testing.T) {
	e := newEnv(t)
	samples := secretkit.Samples(11)
	var lines []string
	for _, s := range samples {
		lines = append(lines, ccLine("user", "Never deploy without this credential: "+s.Text, nil))
	}
	lines = append(lines, ccLine("user", planted, nil))
	p := e.transcript(t, ClaudeCode, "proj/s9.jsonl", lines...)
	a, err := e.hook(t, ClaudeCode, hookJSON("s9", p, "PreCompact", "trigger", "manual"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Stdout, planted) || !strings.Contains(a.Stdout, "[secret:") {
		t.Errorf("PreCompact instructions lack the constraint or the markers:\n%s", a.Stdout)
	}
	outputs := a.Stdout
	appendTo(t, p,
		`{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":1234}}`+"\n",
		ccLine("user", "This session is being continued. Summary: nothing kept.", map[string]any{"isCompactSummary": true}))
	if a, err = e.hook(t, ClaudeCode, hookJSON("s9", p, "SessionStart", "source", "compact")); err != nil {
		t.Fatal(err)
	}
	outputs += a.Stdout
	if leaked := secretkit.Leaks([]byte(outputs), samples); len(leaked) > 0 {
		t.Errorf("hook answers hold %d secrets in clear, e.g. a %s", len(leaked), leaked[0].Kind)
	}
	filepath.WalkDir(e.state, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			if leaked := secretkit.Leaks(data, samples); len(leaked) > 0 {
				t.Errorf("%s holds %d secrets in clear, e.g. a %s", path, len(leaked), leaked[0].Kind)
			}
		}
		return nil
	})
}
