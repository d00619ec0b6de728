package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

// runStdin runs the root command with stdin.
func runStdin(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	io, in, out, errOut := iostreams.Test()
	in.Write(stdin)
	root, _ := NewRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitcode.Code(err)
}

// agentAnswer is the part of an agent compact answer the tests read.
type agentAnswer struct {
	Version          int    `json:"version"`
	Summary          string `json:"summary"`
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	Details          struct {
		Ctxtool struct{ Summarizer string } `json:"ctxtool"`
	} `json:"details"`
}

// agentCompactOK runs agent compact on req; it must exit 0 with an answer.
func agentCompactOK(t *testing.T, req []byte) (agentAnswer, string) {
	t.Helper()
	out, errOut, code := runStdin(t, req, "agent", "compact")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res agentAnswer
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	return res, errOut
}

// agent compact answers pi's recorded request on stdout (exit 0) with the
// configured summariser, refuses unusable input with exit 2 and nothing on
// stdout, and fails with exit 1 when the configured LLM is unreachable.
func TestAgentCompactExitCodes(t *testing.T) {
	cleanEnv(t)
	req := testkit.ReadFile(t, "../testdata/agent/pi-1.6.0-request-first.json")
	res, errOut := agentCompactOK(t, req)
	if res.Version != 1 || res.Summary == "" || res.FirstKeptEntryID == "" {
		t.Fatalf("answer %+v", res)
	}
	if res.Details.Ctxtool.Summarizer != "extractive" || !strings.Contains(errOut, "summarizer: extractive") {
		t.Errorf("summarizer %q, stderr %q: no LLM is configured", res.Details.Ctxtool.Summarizer, errOut)
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte(`{"version":7,"agent":"pi"}`)} {
		out, errOut, code := runStdin(t, bad, "agent", "compact")
		if code != exitcode.Usage || out != "" || errOut == "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, a message", bad, code, out, errOut)
		}
	}
	if _, _, code := runStdin(t, req, "agent", "compact", "--max-input", "100"); code != exitcode.Usage {
		t.Errorf("--max-input 100: exit %d, want 2", code)
	}
	// an LLM summariser that cannot be reached: exit 1, nothing on stdout
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("CTXTOOL_LLM_MODEL", "m")
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("llm:\n  maxRetries: 0\n  timeout: 2s\n"), 0o644)
	out, errOut, code := runStdin(t, req, "--config", cfg, "agent", "compact", "--summarizer", "llm")
	if code != exitcode.Runtime || out != "" {
		t.Errorf("unreachable LLM: exit %d, stdout %q, stderr %q; want 1 and nothing", code, out, errOut)
	}
}

// install/uninstall pi through the CLI: PI_CODING_AGENT_DIR is honoured,
// --dry-run writes nothing, the second install says unchanged.
func TestInstallPiCLI(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	t.Setenv("PI_CODING_AGENT_DIR", dir)
	bin, _ := os.Executable()
	out, _ := runOK(t, "install", "pi", "--dry-run", "--binary", bin)
	if !strings.HasPrefix(out, "would create "+filepath.Join(dir, "extensions", "ctxtool.ts")) {
		t.Errorf("dry run said %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "extensions")); err == nil {
		t.Fatal("--dry-run wrote the extension")
	}
	runOK(t, "install", "pi", "--binary", bin)
	ext, err := os.ReadFile(filepath.Join(dir, "extensions", "ctxtool.ts"))
	if err != nil || !bytes.Contains(ext, []byte(bin)) {
		t.Fatalf("extension %v: does not name %s", err, bin)
	}
	if out, _ = runOK(t, "install", "pi", "--binary", bin); !strings.HasPrefix(out, "unchanged ") {
		t.Errorf("second install said %q", out)
	}
	if out, _ = runOK(t, "--json", "uninstall", "pi"); !strings.Contains(out, `"change":"remove"`) {
		t.Errorf("uninstall --json said %q", out)
	}
	if _, _, code := runCLI(t, "install", "emacs"); code != exitcode.Usage {
		t.Errorf("install emacs: exit %d, want 2 (an agent ctxtool does not know)", code)
	}
	state := t.TempDir()
	t.Setenv("OPENCLAW_STATE_DIR", state)
	t.Setenv("OPENCLAW_CONFIG_PATH", "")
	out, _ = runOK(t, "install", "openclaw", "--dry-run", "--binary", bin)
	for _, want := range []string{"would create " + filepath.Join(state, "ctxtool-plugin", "index.js") + " (runs " + bin,
		`would set agents.defaults.compaction.provider = "ctxtool" in ` + filepath.Join(state, "openclaw.json")} {
		if !strings.Contains(out, want) {
			t.Errorf("install openclaw --dry-run said %q, want %q", out, want)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("install openclaw --dry-run wrote %v", entries)
	}
}

// With an LLM configured (auto), agent compact summarises with it: the
// model got pi's messages and its text is the summary.
func TestAgentCompactUsesConfiguredLLM(t *testing.T) {
	cleanEnv(t)
	srv := llmtest.New()
	defer srv.Close()
	srv.Reply = func(r llmtest.Request) string { return "## Goal\n- model summary of the billing migration" }
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	t.Setenv("CTXTOOL_LLM_MODEL", "test-model")
	req := testkit.ReadFile(t, "../testdata/agent/pi-1.6.0-request-first.json")
	res, _ := agentCompactOK(t, req)
	if res.Details.Ctxtool.Summarizer != "llm" || !strings.Contains(res.Summary, "model summary of the billing migration") {
		t.Fatalf("summarizer %q, summary %q", res.Details.Ctxtool.Summarizer, res.Summary)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "postgres://billing@db-7.internal:5432/ledger") {
		t.Fatalf("the model did not get pi's messages: %d requests", len(reqs))
	}
}
