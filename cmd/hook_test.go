package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/pkg/hooks"
)

func TestHookCommandsFlagsToOptions(t *testing.T) {
	cleanEnv(t)
	state := t.TempDir()
	t.Setenv("CTXTOOL_STATE_DIR", state)
	t.Setenv("CTXTOOL_HOOK_ROOTS", "/srv/sessions:relative/ignored")
	if o, code := resolve(t, newHookCmd, "hook", "--agent", "codex", "--event", "PreCompact", "--timeout", "3s"); code != 0 || o.Agent != "codex" || o.Event != "PreCompact" ||
		o.Timeout != 3*time.Second || o.StateDir != state || len(o.Roots) != 1 || o.Roots[0] != "/srv/sessions" {
		t.Fatalf("hook: exit %d, %+v", code, o)
	}
	if o, code := resolve(t, newPinCmd, "pin", "never push to main", "--dir", "/p"); code != 0 || o.Text != "never push to main" || o.Dir != "/p" || o.StateDir != state {
		t.Fatalf("pin: exit %d, %+v", code, o)
	}
	if _, code := resolve(t, newPinCmd, "pin", "x", "--list"); code != 2 {
		t.Errorf("pin TEXT --list: exit %d, want 2", code)
	}
	if o, code := resolve(t, newPinCmd, "pin", "--rm", "2"); code != 0 || o.Remove != 2 {
		t.Fatalf("pin --rm: exit %d, %+v", code, o)
	}
	if o, code := resolve(t, newStatuslineCmd, "statusline", "--agent", "codex"); code != 0 || o.Agent != "codex" || o.StateDir != state {
		t.Fatalf("statusline: exit %d, %+v", code, o)
	}
	if _, code := resolve(t, newStatuslineCmd, "statusline", "--agent", "gemini"); code != 2 {
		t.Errorf("statusline --agent gemini: exit %d, want 2", code)
	}
	if o, code := resolve(t, newMCPCmd, "mcp"); code != 0 || o.Recall.StateDir != state {
		t.Fatalf("mcp: exit %d, %+v", code, o)
	}
	bin := filepath.Join(t.TempDir(), "ctxtool")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	if o, code := resolve(t, newInstallCmd, "install", "claude-code", "--binary", bin, "--dry-run"); code != 0 || o.Agent != "claude-code" || o.Binary != bin || !o.DryRun {
		t.Fatalf("install claude-code: exit %d, %+v", code, o)
	}
	if _, code := resolve(t, newInstallCmd, "install", "gemini"); code != 2 {
		t.Errorf("install gemini: exit %d, want 2", code)
	}
}

// A hook never fails: garbage, a refused path, a panic-free unknown
// event all exit 0 with nothing on stdout and a line in the log.
func TestRunHookNeverFails(t *testing.T) {
	state := t.TempDir()
	for _, in := range []string{"garbage", `{"session_id":"../x","hook_event_name":"Stop"}`, `{"session_id":"s","hook_event_name":"Stop","transcript_path":"/etc/passwd"}`, ""} {
		var out bytes.Buffer
		o := &HookOptions{IO: &IOStreams{In: strings.NewReader(in), Out: &out, ErrOut: &out}, StateDir: state, Home: t.TempDir(), Timeout: 5 * time.Second}
		if err := runHook(context.Background(), o); err != nil || out.Len() != 0 {
			t.Errorf("%q: err %v, output %q", in, err, out.String())
		}
	}
	log, _ := os.ReadFile(filepath.Join(state, "hooks", "hook.log"))
	if n := strings.Count(string(log), "answered nothing"); n != 4 {
		t.Errorf("%d refusals logged, want 4:\n%s", n, log)
	}
	if !strings.Contains(string(log), "not a plain id") || !strings.Contains(string(log), "not under the agent's session directories") {
		t.Errorf("the log does not say why:\n%s", log)
	}
}

func TestPinAndStatuslineCommands(t *testing.T) {
	state, proj := t.TempDir(), t.TempDir()
	run := func(o *PinOptions) string {
		var out bytes.Buffer
		o.IO, o.StateDir, o.Dir = &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, state, proj
		if err := runPin(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := run(&PinOptions{Text: "never  push to main"}); got != "pinned 1: never push to main\n" {
		t.Errorf("pin: %q", got)
	}
	run(&PinOptions{Text: "port 31686"})
	if got := run(&PinOptions{List: true}); got != "  1  never push to main\n  2  port 31686\n" {
		t.Errorf("pin --list: %q", got)
	}
	if got := run(&PinOptions{Remove: 1}); got != "removed 1: never push to main\n" {
		t.Errorf("pin --rm 1: %q", got)
	}
	// statusline: a Claude Code transcript with a compaction at 1500.
	home := t.TempDir()
	tr := filepath.Join(home, ".claude", "projects", "p", "s.jsonl")
	os.MkdirAll(filepath.Dir(tr), 0o700)
	os.WriteFile(tr, []byte(`{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":1500}}`+"\n"), 0o600)
	var out bytes.Buffer
	o := &StatuslineOptions{IO: &IOStreams{In: strings.NewReader(`{"session_id":"s","transcript_path":"` + tr + `","context_window":{"context_window_size":2000,"current_usage":{"input_tokens":300,"cache_read_input_tokens":900}}}`), Out: &out, ErrOut: &out},
		Agent: hooks.ClaudeCode, StateDir: state, Home: home}
	if err := runStatusline(context.Background(), o); err != nil || out.String() != "ctx 1.2k/1.5k 80% · 300 to auto-compact\n" {
		t.Errorf("statusline: %v %q", err, out.String())
	}
	out.Reset()
	o.IO.In = strings.NewReader("not json")
	if err := runStatusline(context.Background(), o); err != nil || out.String() != "ctx ?\n" {
		t.Errorf("statusline on garbage: %v %q", err, out.String())
	}
}
