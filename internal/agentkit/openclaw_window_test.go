package agentkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// With agent.window on, `ctxtool install openclaw` selects the plugin's
// context engine, and the real OpenClaw 2026.9.6 Gateway runs a scripted
// 40-turn session through it: every request the model receives stays under
// the target while OpenClaw's store keeps every message; when the model
// calls the recall tool for a fact planted in an evicted turn, the tool's
// result contains it. The turns go through the Gateway's OpenAI-compatible
// HTTP endpoint (one CLI start per turn would take ~8 s each).
func TestOpenClawRollingWindow(t *testing.T) {
	in := needOpenClaw(t)
	start := time.Now()
	const window, target = 48000, 0.4
	const key = "agent:main:window"
	srv := llmtest.New()
	t.Cleanup(srv.Close)
	srv.UsageFromBody = true
	srv.ToolCall = func(q llmtest.Request) *llmtest.ToolCall {
		// the question, not yet answered by the tool (OpenClaw adds its
		// internal context as a user message after the user's)
		if _, ok := toolResult(q); ok {
			return nil
		}
		for i := len(q.Messages) - 1; i >= 0; i-- {
			switch m := q.Messages[i]; {
			case m.Role == "user" && strings.Contains(m.Content, "What was the vault code"):
				return &llmtest.ToolCall{ID: "call_recall_1", Name: "recall", Arguments: map[string]any{"query": "vault code"}}
			case m.Role == "user" && !strings.HasPrefix(m.Content, "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"):
				return nil
			}
		}
		return nil
	}
	srv.Reply = func(q llmtest.Request) string {
		if res, ok := toolResult(q); ok {
			return "From the recall tool: " + res
		}
		for _, m := range q.Messages {
			if strings.Contains(m.Content, "<conversation>") {
				return ownSummaryOf(q)
			}
		}
		return fmt.Sprintf("Noted (reply %d).", len(q.Messages))
	}
	home := t.TempDir()
	bin := filepath.Join(home, "bin")
	os.MkdirAll(bin, 0o755)
	if err := in.WriteCLIWrapper(bin); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	json.Unmarshal(ocConfig(home, srv.BaseURL(), port), &c)
	c["gateway"].(map[string]any)["http"] = map[string]any{"endpoints": map[string]any{"chatCompletions": map[string]any{"enabled": true}}}
	prov := c["models"].(map[string]any)["providers"].(map[string]any)["fake"].(map[string]any)
	prov["models"].([]any)[0].(map[string]any)["contextWindow"] = window
	data, _ := json.MarshalIndent(c, "", "  ")
	cfgPath := filepath.Join(home, ".openclaw", "openclaw.json")
	os.MkdirAll(filepath.Dir(cfgPath), 0o755)
	os.WriteFile(cfgPath, data, 0o600)
	xdg := filepath.Join(home, "xdg")
	os.MkdirAll(filepath.Join(xdg, "ctxtool"), 0o755)
	os.WriteFile(filepath.Join(xdg, "ctxtool", "config.yaml"),
		[]byte(fmt.Sprintf("agent:\n  window: true\ncompaction:\n  rolling:\n    targetUtilization: %v\n    minKeepMessages: 4\n", target)), 0o644)
	env := []string{"HOME=" + home, "PATH=" + filepath.Dir(in.Node) + ":" + bin + ":" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + xdg, "CTXTOOL_STATE_DIR=" + filepath.Join(home, "ctxtool-state"),
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "CTXTOOL_LLM_MODEL=", "NO_COLOR=1", "TMPDIR=" + os.TempDir()}
	r := &ocRun{t: t, in: in, srv: srv, home: home, bin: bin, env: env}

	out, err := r.ctxtool("install", "openclaw")
	if err != nil || !strings.Contains(out, `set plugins.slots.contextEngine = "ctxtool"`) {
		t.Fatalf("install openclaw with agent.window on: %v\n%s", err, out)
	}
	if out, err = r.ctxtool("install", "openclaw"); err != nil || !strings.Contains(out, "unchanged "+cfgPath) {
		t.Fatalf("second install: %v\n%s", err, out)
	}

	gw, err := StartGateway(in, home, port, env, 180*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	r.gw = gw
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Gateway's log's end:\n%s", tail(gw.Log(), 8000))
		}
	})

	filler := strings.Repeat("The ledger export keeps every invoice line with its tax code and currency. ", 16)
	t0 := time.Now()
	for i := 1; i <= 40; i++ {
		msg := gatewayTurn(i, filler)
		if i == 2 {
			msg = "Turn 2. Remember this: the vault code is " + vault + ". " + filler
		}
		if _, err := gatewayChat(port, key, msg); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	turns := time.Since(t0)
	mark := len(srv.Requests())
	answer, err := gatewayChat(port, key, "What was the vault code we agreed on at the start?")
	if err != nil {
		t.Fatal(err)
	}

	limit := int(target * window)
	worst, rolled, reqs := 0, 0, srv.Requests()
	for i, q := range reqs {
		tokens := (len(q.Body) + 3) / 4
		worst = max(worst, tokens)
		if tokens > limit {
			t.Errorf("request %d is %d tokens (chars/4 of %d chars), over the target %d", i+1, tokens, len(q.Body), limit)
		}
		if strings.Contains(string(q.Body), "[Context rolled by ctxtool]") {
			rolled++
		}
	}
	if rolled == 0 {
		t.Fatal("no request carried ctxtool's eviction note")
	}
	if len(reqs) < mark+2 {
		t.Fatalf("the recall question made %d requests, want the question and the tool's result", len(reqs)-mark)
	}
	if strings.Contains(string(reqs[mark].Body), vault) {
		t.Error("the planted turn was still in the request that asked for it: nothing to recall")
	}
	if res, ok := toolResult(reqs[len(reqs)-1]); !ok || !strings.Contains(res, vault) {
		t.Fatalf("the recall tool's result does not carry the planted fact: %q", res)
	}
	if !strings.Contains(answer, vault) {
		t.Errorf("the agent's answer does not contain the planted fact: %.300s", answer)
	}

	// the store keeps every message, and no compaction was made
	exp, err := exec.Command(ctxtoolBin, "export", r.store("main")+"#"+key).Output()
	if err != nil {
		t.Fatalf("ctxtool export of the store: %v", err)
	}
	users := 0
	for _, l := range bytes.Split(bytes.TrimSpace(exp), []byte("\n")) {
		var e struct {
			Type    string `json:"type"`
			Message struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		json.Unmarshal(l, &e)
		if e.Type == "compaction" {
			t.Error("the rolling window's session was compacted")
		}
		if e.Message.Role == "user" {
			users++
		}
	}
	if users != 41 || !bytes.Contains(exp, []byte(vault)) {
		t.Errorf("the store holds %d user messages (want all 41), the planted fact: %v", users, bytes.Contains(exp, []byte(vault)))
	}
	if strings.Contains(gw.Log(), "[ctxtool] rolling window failed") || strings.Contains(gw.Log(), "degraded to") {
		t.Errorf("the window fell back:\n%s", tail(gw.Log(), 3000))
	}

	// ctxtool estimate of the store against the last request OpenClaw
	// sent: the default estimate is anchored on the usage OpenClaw
	// recorded, the windowed request's, so it agrees although the store
	// keeps every message; the heuristic counts the whole session's
	// messages (the request without the window would carry them and the
	// same overhead)
	estimateOf := func(args ...string) int {
		out, err := r.ctxtool(append([]string{"estimate", "--json"}, append(args, r.store("main")+"#"+key)...)...)
		var est struct {
			Tokens int `json:"tokens"`
		}
		if err != nil || !strings.Contains(out, "{") || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &est) != nil {
			t.Errorf("estimate %v: %v\n%s", args, err, out)
		}
		return est.Tokens
	}
	// one more short turn first: the answer above echoes the tool's result,
	// which the estimate (of the next request) counts and the request
	// before it did not carry
	if _, err := gatewayChat(port, key, "Thanks, noted."); err != nil {
		t.Fatal(err)
	}
	lastReq := srv.Requests()[len(srv.Requests())-1]
	if tokens := (len(lastReq.Body) + 3) / 4; tokens > limit {
		t.Errorf("the last request is %d tokens, over the target %d", tokens, limit)
	}
	est, messages := estimateOf(), estimateOf("--tokenizer", "heuristic")
	sent := float64(len(lastReq.Body)) / 4
	first := float64(len(reqs[0].Body))/4 - float64(len(gatewayTurn(1, filler)))/4 // the overhead: the first request less its prompt
	writeFigure(t, fmt.Sprintf("openclaw rolling window: %d requests over 41 turns (%.0fs, %.1fs a turn), largest %d tokens (chars/4 of the body) under the target %d (window %d × %.1f); %d carried the eviction note; without the window the last request would be ~%.0f tokens (the session's messages %d + the first request's overhead %.0f); recall found %s; suite %.0fs",
		len(reqs), turns.Seconds(), turns.Seconds()/40, worst, limit, window, target, rolled, float64(messages)+first, messages, first, vault, time.Since(start).Seconds()))
	dev := math.Abs(float64(est)-sent) / sent
	writeFigure(t, fmt.Sprintf("openclaw rolling window: ctxtool estimate of the store %d tokens vs the last request's chars/4 %.0f: %.1f%% apart", est, sent, 100*dev))
	if dev > 0.05 {
		t.Errorf("ctxtool estimate %d is %.1f%% from chars/4 of the last request (%.0f): want within 5%%", est, 100*dev, sent)
	}
}

func gatewayTurn(i int, filler string) string { return fmt.Sprintf("Turn %d. %s", i, filler) }

// toolResult is the last tool result of a request, when no user message
// follows it (OpenClaw's own internal context aside).
func toolResult(q llmtest.Request) (string, bool) {
	for i := len(q.Messages) - 1; i >= 0; i-- {
		switch m := q.Messages[i]; {
		case m.Role == "tool":
			return m.Content, true
		case m.Role == "user" && !strings.HasPrefix(m.Content, "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"):
			return "", false
		}
	}
	return "", false
}

// gatewayChat sends one user message to the Gateway's chat-completions
// endpoint in the session key and returns the agent's answer.
func gatewayChat(port int, key, msg string) (string, error) {
	body, _ := json.Marshal(map[string]any{"model": "openclaw/main", "messages": []any{map[string]any{"role": "user", "content": msg}}})
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-openclaw-session-key", key)
	resp, err := (&http.Client{Timeout: 240 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("the Gateway answered %s: %.500s", resp.Status, data)
	}
	var res struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &res); err != nil || len(res.Choices) == 0 {
		return "", fmt.Errorf("the Gateway's answer is not a chat completion: %.500s", data)
	}
	return res.Choices[0].Message.Content, nil
}
