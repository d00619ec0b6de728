package agentkit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

const vault = "VAULT-7731-KESTREL"

// With agent.window on, pi 1.6.0 runs a scripted 40-turn session through
// the extension's rolling window: every request the model receives stays
// under the target while the session file keeps every message; when the
// model calls the recall tool for a fact planted in an evicted turn, the
// answer contains it.
func TestPiRollingWindow(t *testing.T) {
	const window, target = 8000, 0.5
	r := newPiRun(t, window, map[string]any{"enabled": false})
	r.srv.ToolCall = func(q llmtest.Request) *llmtest.ToolCall {
		if n := len(q.Messages); n > 0 && q.Messages[n-1].Role == "user" && strings.Contains(q.Messages[n-1].Content, "What was the vault code") {
			return &llmtest.ToolCall{ID: "call_recall_1", Name: "recall", Arguments: map[string]any{"query": "vault code"}}
		}
		return nil
	}
	r.srv.Reply = func(q llmtest.Request) string {
		if n := len(q.Messages); n > 0 && q.Messages[n-1].Role == "tool" {
			return "From the recall tool: " + q.Messages[n-1].Content
		}
		return fmt.Sprintf("Noted (reply %d).", len(q.Messages))
	}
	xdg := filepath.Join(r.home, "xdg")
	os.MkdirAll(filepath.Join(xdg, "ctxtool"), 0o755)
	os.WriteFile(filepath.Join(xdg, "ctxtool", "config.yaml"),
		[]byte(fmt.Sprintf("agent:\n  window: true\ncompaction:\n  rolling:\n    targetUtilization: %v\n    minKeepMessages: 4\n", target)), 0o644)
	if out, err := r.ctxtool("install", "pi"); err != nil {
		t.Fatalf("install pi: %v\n%s", err, out)
	}
	p, err := StartPi(r.in, PiConfig{AgentDir: r.agentDir, SessionDir: r.sessions, Home: r.home, ExtensionTools: true,
		Env: []string{"XDG_CONFIG_HOME=" + xdg, "CTXTOOL_STATE_DIR=" + filepath.Join(r.home, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	filler := strings.Repeat("The ledger export keeps every invoice line with its tax code and currency. ", 4)
	for i := 1; i <= 40; i++ {
		msg := fmt.Sprintf("Turn %d. %s", i, filler)
		if i == 2 {
			msg = "Turn 2. Remember this: the vault code is " + vault + ". " + filler
		}
		if err := p.Prompt(msg, turn); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Prompt("What was the vault code we agreed on at the start?", turn); err != nil {
		t.Fatal(err)
	}

	limit := int(target * window)
	worst, rolled, reqs := 0, 0, r.srv.Requests()
	for i, q := range reqs {
		tokens := (len(q.Body) + 3) / 4
		worst = max(worst, tokens)
		if tokens > limit {
			t.Errorf("request %d is %d tokens (chars/4 of %d chars), over the target %d", i+1, tokens, len(q.Body), limit)
		}
		if first := firstConversationMessage(q); strings.Contains(first.Content, "[Context rolled by ctxtool]") {
			rolled++
		}
	}
	if rolled == 0 {
		t.Fatal("no request carried ctxtool's eviction note")
	}
	ask := reqs[len(reqs)-2] // the question, before the tool call
	if strings.Contains(string(ask.Body), vault) {
		t.Error("the planted turn was still in the request that asked for it: nothing to recall")
	}
	last := reqs[len(reqs)-1]
	if n := len(last.Messages); n == 0 || last.Messages[n-1].Role != "tool" || !strings.Contains(last.Messages[n-1].Content, vault) {
		t.Fatalf("the recall tool's result does not carry the planted fact: %+v", last.Messages[len(last.Messages)-1])
	}

	file, err := SessionFile(r.sessions)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Entries(file)
	if err != nil {
		t.Fatal(err)
	}
	users, answer := 0, ""
	for _, e := range entries {
		m, _ := e["message"].(map[string]any)
		switch {
		case e["type"] == "compaction":
			t.Error("the rolling window wrote a compaction into the session")
		case m["role"] == "user":
			users++
		case m["role"] == "assistant":
			answer = fmt.Sprint(m["content"])
		}
	}
	if users != 41 {
		t.Errorf("the session holds %d user messages, want all 41", users)
	}
	if !strings.Contains(answer, vault) {
		t.Errorf("pi's last answer does not contain the planted fact: %.300s", answer)
	}
	if lines := ctxtoolLines(p.Stderr()); len(lines) != 0 {
		t.Errorf("[ctxtool] lines: %q", lines)
	}
	// ctxtool estimate of the session against the last request pi sent,
	// after one more short turn (the answer above echoes the tool's result:
	// the estimate, of the next request, would count it and the request
	// before it did not). The default estimate is anchored on the usage pi
	// recorded, the windowed request's, so it agrees although the session
	// keeps every message; the heuristic counts the whole session (the
	// request without the window).
	if err := p.Prompt("Thanks, noted.", turn); err != nil {
		t.Fatal(err)
	}
	last = r.srv.Requests()[len(r.srv.Requests())-1]
	if tokens := (len(last.Body) + 3) / 4; tokens > limit {
		t.Errorf("the last request is %d tokens, over the target %d", tokens, limit)
	}
	estimateOf := func(args ...string) int {
		out, err := r.ctxtool(append([]string{"estimate", "--json"}, append(args, file)...)...)
		var est struct {
			Tokens int `json:"tokens"`
		}
		if err != nil || !strings.Contains(out, "{") || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &est) != nil {
			t.Fatalf("estimate %v: %v\n%s", args, err, out)
		}
		return est.Tokens
	}
	sent := float64(len(last.Body)) / 4
	apart := func(n int) float64 { return 100 * math.Abs(float64(n)-sent) / sent }
	est, usage, whole := estimateOf(), estimateOf("--tokenizer", "usage"), estimateOf("--tokenizer", "heuristic")
	writeFigure(t, fmt.Sprintf("pi rolling window: last request chars/4 %.0f; ctxtool estimate of the session %d (default, %.1f%% apart), --tokenizer usage %d (%.1f%%), heuristic %d (the whole session, %.1f%%)",
		sent, est, apart(est), usage, apart(usage), whole, apart(whole)))
	if apart(est) > 5 {
		t.Errorf("ctxtool estimate %d is %.1f%% from chars/4 of the last request (%.0f): want within 5%%", est, apart(est), sent)
	}
	writeFigure(t, fmt.Sprintf("pi rolling window: %d requests over 41 turns, largest %d tokens (chars/4 of the body) under the target %d (window %d × %.1f); %d carried the eviction note; recall found %s",
		len(reqs), worst, limit, window, target, rolled, vault))
}
