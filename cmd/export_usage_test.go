package cmd

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/agentkit"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// The 2025 Codex shape records no usage at all. Issue 35 asked export to
// leave usage out where the source has none; pi 1.6.0 decides. Its
// session statistics (RPC get_session_stats, and the interactive footer,
// footer.js) add every assistant message's usage unguarded
// (addUsageToTotals(totals, message.usage): usage.input of undefined), so
// a message without usage breaks them, while a zero usage is what pi's
// own auto-compaction treats as "no provider usage" and estimates from
// the messages instead (agent-session.js, "all-zero usage messages").
// So the export keeps a zero usage: this test loads the export into the
// real pi 1.6.0 and asks for its statistics, and shows the same session
// with the usage left out failing there. Should a later pi tolerate a
// missing usage, the second half fails and the export may leave it out.
func TestExportOfUsagelessCodexAsPiNeedsIt(t *testing.T) {
	cleanEnv(t)
	src := filepath.Join(oracle.WildDir(t), "codex", "jaydenxsoe-ocodex-rollout-2025-08-26-oldformat.jsonl")
	if data, err := os.ReadFile(src); err != nil || strings.Contains(string(data), "token_count") {
		t.Fatalf("%s: want the 2025 shape without usage (%v)", src, err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "export.jsonl")
	runOK(t, "--state-dir", filepath.Join(dir, "state"), "export", src, "--to", "pi", "-o", out)
	stripped := filepath.Join(dir, "no-usage.jsonl")
	assistants := stripUsage(t, out, stripped)
	if assistants == 0 {
		t.Fatal("no assistant message in the export")
	}

	in, err := agentkit.FindPi(os.Getenv("CI") == "true")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("real pi: %v", err)
	}
	srv := llmtest.New()
	t.Cleanup(srv.Close)
	home := filepath.Join(dir, "pihome")
	agentDir := filepath.Join(home, "agent")
	if err := agentkit.WriteAgentDir(agentDir, srv.BaseURL(), 128000, map[string]any{"enabled": true}); err != nil {
		t.Fatal(err)
	}
	p, err := agentkit.StartPi(in, agentkit.PiConfig{AgentDir: agentDir, SessionDir: filepath.Join(home, "sessions"), Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stats := func(file string) (map[string]any, error) {
		if _, err := p.Command(map[string]any{"type": "switch_session", "sessionPath": file}, 60*time.Second); err != nil {
			return nil, err
		}
		return p.Command(map[string]any{"type": "get_session_stats"}, 60*time.Second)
	}
	resp, err := stats(out)
	if err != nil {
		t.Fatalf("pi 1.6.0 on the export (zero usage): %v\n%s", err, p.Stderr())
	}
	data, _ := resp["data"].(map[string]any)
	if n, _ := data["assistantMessages"].(float64); int(n) != assistants {
		t.Errorf("pi 1.6.0 counts %v assistant messages in the export; it has %d", data["assistantMessages"], assistants)
	}
	if _, err := stats(stripped); err == nil {
		t.Errorf("pi 1.6.0 now reads a session whose assistant messages have no usage: export may leave usage out where the source has none (issue 35)")
	} else {
		t.Logf("pi 1.6.0 without usage: %v", err)
	}
}

// stripUsage copies the pi session from to to without the usage of its
// assistant messages, after checking each has one; it returns how many.
func stripUsage(t *testing.T, from, to string) int {
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if m, ok := e["message"].(map[string]any); ok && m["role"] == "assistant" {
			n++
			if _, ok := m["usage"]; !ok {
				t.Fatalf("an assistant message of the export has no usage: %s", sc.Bytes())
			}
			delete(m, "usage")
		}
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(to, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}
