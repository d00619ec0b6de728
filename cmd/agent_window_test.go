package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agent window declines while agent.window is off and plans the window
// when it is on; agent recall indexes the session and finds a planted
// fact in it.
func TestAgentWindowAndRecall(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	t.Setenv("CTXTOOL_STATE_DIR", filepath.Join(dir, "state"))
	var msgs []any
	for i := range 40 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": strings.Repeat("ledger line ", 50)}}, "timestamp": 1796181000000 + i})
	}
	req, _ := json.Marshal(map[string]any{"version": 1, "agent": "pi", "messages": msgs, "contextWindow": 4000})
	out, _, code := runStdin(t, req, "agent", "window")
	if code != 0 || !strings.Contains(out, `"decline":"the rolling window is off`) {
		t.Fatalf("agent window with agent.window off: exit %d %s", code, out)
	}
	cfg := filepath.Join(dir, "ctxtool.yaml")
	os.WriteFile(cfg, []byte("agent:\n  window: true\n"), 0o644)
	out, _, code = runStdin(t, req, "--config", cfg, "agent", "window")
	var res struct {
		FirstKept int    `json:"firstKept"`
		Note      string `json:"note"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.FirstKept == 0 || !strings.Contains(res.Note, "recall") {
		t.Fatalf("agent window on: exit %d %s", code, out)
	}

	session := filepath.Join(dir, "s.jsonl")
	os.WriteFile(session, []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-12-02T03:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-02T03:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"Remember: the vault code is VAULT-7731-KESTREL."}],"timestamp":1796180000000}}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-12-02T03:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Noted."}],"provider":"x","model":"y","stopReason":"stop","timestamp":1796180001000}}
`), 0o644)
	rq, _ := json.Marshal(map[string]any{"version": 1, "agent": "pi", "session": map[string]any{"file": session}, "query": "vault code"})
	out, errOut, code := runStdin(t, rq, "agent", "recall")
	if code != 0 || !strings.Contains(out, "VAULT-7731-KESTREL") {
		t.Fatalf("agent recall: exit %d %s %s", code, out, errOut)
	}
	if _, _, code = runStdin(t, []byte(`{"version":1,"agent":"pi","session":{},"query":"x"}`), "agent", "recall"); code != 2 {
		t.Errorf("agent recall without a session file: exit %d, want 2", code)
	}
}

// agent augment answers the facts the agent's own summary dropped.
func TestAgentAugment(t *testing.T) {
	cleanEnv(t)
	req, _ := json.Marshal(map[string]any{"version": 1, "agent": "openclaw", "preparation": map[string]any{"messagesToSummarize": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "The runbook is RB-1193 and the pager config is /srv/pager/ops.yaml."}}, "timestamp": 1}}},
		"agentSummary": "## Goal\n- keep the runbook RB-1193 at hand"})
	out, errOut, code := runStdin(t, req, "agent", "augment")
	if code != 0 || !strings.Contains(out, "/srv/pager/ops.yaml") || strings.Contains(out, "- identifier: RB-1193") {
		t.Fatalf("agent augment: exit %d %s %s", code, out, errOut)
	}
}
