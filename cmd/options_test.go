package cmd

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

// resolve runs one command line through the real root (global flags,
// config loading, flag checks) with the command built by build, whose run
// function is replaced: it returns the options the command would run with.
func resolve[T any](t *testing.T, build func(*Factory, func(*T) error) *cobra.Command, args ...string) (*T, int) {
	t.Helper()
	io, _, _, _ := iostreams.Test()
	root, f := NewRootCmd(io)
	var got *T
	c := build(f, func(o *T) error { got = o; return nil })
	usageArgs(c)
	for _, old := range root.Commands() {
		if old.Name() == c.Name() {
			root.RemoveCommand(old)
		}
	}
	root.AddCommand(c)
	root.SetArgs(args)
	err := execute(context.Background(), root)
	return got, exitcode.Code(err)
}

// configFile writes a ctxtool.yaml and returns its path.
func configFile(t *testing.T, yaml string) string {
	t.Helper()
	return testkit.WriteTemp(t, "ctxtool.yaml", []byte(yaml))
}

// Flags, environment variables and the config file become the options each
// command runs with, in that order of precedence: flag > env > file >
// default. One table per command, through the gh-style runF seam.
func TestFlagsToOptions(t *testing.T) {
	cleanEnv(t)
	cfg := configFile(t, `
estimate:
  tokenizer: o200k
contextWindow: 64000
compaction:
  mode: safeguard
  keepRecentTokens: 12000
  rolling:
    targetUtilization: 0.5
checkpoint:
  keep: 7
recall:
  maxResults: 9
lint:
  failOn: warning
`)
	t.Run("estimate", func(t *testing.T) {
		o, code := resolve(t, newEstimateCmd, "--config", cfg, "estimate", "--per-message", "--fail-over", "80%", "a.jsonl", "b.jsonl")
		if code != 0 || o.Size.Method != "o200k" || o.Size.Window.ContextWindow != 64000 || !o.PerMessage || o.FailOver != "80%" ||
			!reflect.DeepEqual(o.Files, []string{"a.jsonl", "b.jsonl"}) {
			t.Fatalf("exit %d, %+v", code, o)
		}
		t.Setenv("CTXTOOL_ESTIMATE_TOKENIZER", "cl100k")
		if o, _ := resolve(t, newEstimateCmd, "--config", cfg, "estimate", "a.jsonl"); o.Size.Method != "cl100k" {
			t.Errorf("env beats file: %q", o.Size.Method)
		}
		if o, _ := resolve(t, newEstimateCmd, "--config", cfg, "estimate", "--tokenizer", "heuristic", "--context-window", "8192", "a.jsonl"); o.Size.Method != "heuristic" || o.Size.Window.ContextWindow != 8192 {
			t.Errorf("flag beats env and file: %q %d", o.Size.Method, o.Size.Window.ContextWindow)
		}
		if _, code := resolve(t, newEstimateCmd, "estimate", "--tokenizer", "words", "a.jsonl"); code != 2 {
			t.Errorf("unknown tokenizer: exit %d, want 2", code)
		}
	})
	t.Run("compact", func(t *testing.T) {
		o, code := resolve(t, newCompactCmd, "--config", cfg, "compact", "--dry-run", "--if-needed", "--summarizer", "extractive", "--fail-on-dropped", "0", "s.jsonl")
		if code != 0 || o.Settings.Strategy != "safeguard" || o.Settings.KeepRecentTokens != 12000 || !o.DryRun || !o.IfNeeded ||
			o.Summarizer != "extractive" || o.FailOnDropped != 0 || o.Size.Window.ContextWindow != 64000 {
			t.Fatalf("exit %d, %+v", code, o)
		}
		o, _ = resolve(t, newCompactCmd, "--config", cfg, "compact", "--strategy", "default", "--keep-recent-tokens", "3000", "--reserve-tokens", "2048", "s.jsonl")
		if o.Settings.Strategy != "default" || o.Settings.KeepRecentTokens != 3000 || o.Settings.ReserveTokens != 2048 || o.FailOnDropped >= 0 {
			t.Fatalf("flags: %+v (failOnDropped %d: unset must be negative)", o.Settings, o.FailOnDropped)
		}
	})
	t.Run("roll", func(t *testing.T) {
		o, code := resolve(t, newRollCmd, "--config", cfg, "roll", "--dry-run", "--jobs", "3", "--older-than", "2h", "--trigger", "0", "dir")
		if code != 0 || o.Roll.TargetUtilization != 0.5 || !o.Roll.DryRun || o.Jobs != 3 || o.OlderThan != 2*time.Hour ||
			!o.Roll.Force || !reflect.DeepEqual(o.Paths, []string{"dir"}) {
			t.Fatalf("exit %d, %+v / %+v", code, o, o.Roll)
		}
	})
	t.Run("prune", func(t *testing.T) {
		pcfg := configFile(t, "prune:\n  olderThan: 2w\n  keepLast: 7\n  maxTotal: 20GB\n  idle: 3h\n")
		o, code := resolve(t, newPruneCmd, "--config", pcfg, "prune", "--keep-last", "2", "--apply", "--delete", "--delete-after", "90d", "dir")
		p := o.Policy
		if code != 0 || p.OlderThan != 14*24*time.Hour || p.KeepLast != 2 || p.MaxTotal != 20e9 || p.Idle != 3*time.Hour ||
			!o.Apply || !p.Delete || p.DeleteAfter != 90*24*time.Hour || !reflect.DeepEqual(o.Paths, []string{"dir"}) {
			t.Fatalf("exit %d, %+v / %+v", code, o, p)
		}
		if o, _ := resolve(t, newPruneCmd, "prune"); o.Policy.OlderThan != 30*24*time.Hour || o.Policy.KeepLast != 3 || o.Policy.MaxTotal != 0 || o.Apply {
			t.Errorf("defaults: %+v", o.Policy)
		}
	})
	t.Run("checkpoint", func(t *testing.T) {
		o, code := resolve(t, newCheckpointCmd, "--config", cfg, "--state-dir", "/tmp/st", "checkpoint", "--trigger", "auto-80pct", "--dry-run", "s.jsonl")
		if code != 0 || o.Keep != 7 || o.Trigger != "auto-80pct" || !o.DryRun || o.StateDir != "/tmp/st" || o.File != "s.jsonl" || o.Size.Method != "o200k" {
			t.Fatalf("exit %d, %+v", code, o)
		}
		if _, code := resolve(t, newCheckpointCmd, "checkpoint", "a.jsonl", "b.jsonl"); code != 2 {
			t.Errorf("two files without --capture: exit %d, want 2", code)
		}
	})
	t.Run("restore", func(t *testing.T) {
		o, code := resolve(t, newRestoreCmd, "--state-dir", "/tmp/st", "restore", "--format", "yaml", "--id", "cp_002", "s.jsonl")
		if code != 0 || o.Format != "yaml" || o.ID != "cp_002" || o.Target != "s.jsonl" || o.StateDir != "/tmp/st" {
			t.Fatalf("exit %d, %+v", code, o)
		}
	})
	t.Run("search", func(t *testing.T) {
		o, code := resolve(t, newSearchCmd, "--config", cfg, "search", "--min-score", "0.5", "retry config")
		if code != 0 || o.MaxResults != 9 || o.MinScore != 0.5 || o.Query != "retry config" {
			t.Fatalf("exit %d, %+v", code, o)
		}
		o, code = resolve(t, newSearchCmd, "search", "--agent", "openclaw/", "--project", "/srv/shop/", "--session", "s.jsonl",
			"--since", "2026-03-01", "--until", "2026-03-02T12:00:00Z", "q")
		sc := o.Scope
		if code != 0 || sc.Agent != "openclaw" || sc.Project != "/srv/shop" || sc.Session != "s.jsonl" ||
			!sc.Since.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) || !sc.Until.Equal(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)) {
			t.Fatalf("scope flags: exit %d, %+v", code, sc)
		}
		if _, code := resolve(t, newSearchCmd, "search", "--until", "yesterday", "q"); code != 2 {
			t.Errorf("--until yesterday: exit %d, want 2", code)
		}
	})
	t.Run("index", func(t *testing.T) {
		o, code := resolve(t, newIndexCmd, "index", "--index", "postgres://u@h/db", "--rebuild", "d1", "d2")
		if code != 0 || o.Recall.URL != "postgres://u@h/db" || !o.Rebuild || !reflect.DeepEqual(o.Paths, []string{"d1", "d2"}) {
			t.Fatalf("exit %d, %+v", code, o)
		}
	})
	t.Run("lint", func(t *testing.T) {
		o, code := resolve(t, newLintCmd, "--config", cfg, "lint", "--format", "sarif", "--max-tokens", "5000", "d")
		if code != 0 || o.FailOn != "warning" || o.Format != "sarif" || o.Lint.MaxTokens != 5000 || o.Lint.Size.Window.ContextWindow != 64000 {
			t.Fatalf("exit %d, %+v / %+v", code, o, o.Lint)
		}
	})
	t.Run("budget", func(t *testing.T) {
		o, code := resolve(t, newBudgetCmd, "--config", cfg, "budget", "--workspace", "ws", "--emit", "context", "s.jsonl")
		if code != 0 || o.Workspace != "ws" || o.Emit != "context" || o.Window.ContextWindow != 64000 {
			t.Fatalf("exit %d, %+v", code, o)
		}
	})
	t.Run("flush", func(t *testing.T) {
		t.Setenv("CTXTOOL_COMPACTION_MEMORYFLUSH_FORCEFLUSHTRANSCRIPTBYTES", "4096")
		o, code := resolve(t, newFlushCmd, "--config", cfg, "flush", "--workspace", "ws", "--soft-threshold-tokens", "1000", "--force", "s.jsonl")
		if code != 0 || o.Workspace != "ws" || o.SoftThresholdTokens != 1000 || !o.Force || o.ForceFlushTranscriptBytes != 4096 ||
			o.Compaction.Settings.KeepRecentTokens != 12000 || o.Size.Window.ContextWindow != 64000 {
			t.Fatalf("exit %d, %+v", code, o)
		}
	})
	t.Run("export", func(t *testing.T) {
		o, code := resolve(t, newExportCmd, "export", "--to", "pi", "-o", "out.jsonl", "--force", "cc.jsonl")
		if code != 0 || o.To != "pi" || o.Output != "out.jsonl" || !o.Force || o.File != "cc.jsonl" {
			t.Fatalf("exit %d, %+v", code, o)
		}
	})
	t.Run("agent compact", func(t *testing.T) {
		// the seam replaces the top-level command of the same name
		o, code := resolve(t, newAgentCompactCmd, "--config", cfg, "compact", "--summarizer", "extractive", "--max-input", "1000")
		if code != 0 || o.Compact.Settings.Strategy != "safeguard" || o.Compact.Settings.KeepRecentTokens != 12000 ||
			o.Compact.Summarizer != "extractive" || o.MaxInput != 1000 {
			t.Fatalf("exit %d, %+v / %+v", code, o, o.Compact.Settings)
		}
		if _, code := resolve(t, newAgentCompactCmd, "compact", "--max-input", "0"); code != 2 {
			t.Errorf("--max-input 0: exit %d, want 2", code)
		}
	})
	t.Run("install", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("PI_CODING_AGENT_DIR", dir)
		bin := testkit.WriteTemp(t, "ctxtool", []byte("#!/bin/sh\n"))
		os.Chmod(bin, 0o755)
		o, code := resolve(t, newInstallCmd, "install", "pi", "--dry-run", "--binary", bin)
		if code != 0 || o.Agent != "pi" || o.AgentDir != dir || !o.DryRun || o.Binary != bin || o.Remove {
			t.Fatalf("exit %d, %+v", code, o)
		}
		if _, code := resolve(t, newInstallCmd, "install", "pi", "--check", "--dry-run"); code != 2 {
			t.Errorf("--check --dry-run: exit %d, want 2", code)
		}
		if _, code := resolve(t, newInstallCmd, "install", "pi", "--binary", dir); code != 2 {
			t.Errorf("--binary DIR: exit %d, want 2", code)
		}
		if o, code := resolve(t, newUninstallCmd, "uninstall", "pi"); code != 0 || !o.Remove || o.AgentDir != dir {
			t.Fatalf("uninstall: exit %d, %+v", code, o)
		}
	})
	t.Run("scrub", func(t *testing.T) {
		o, code := resolve(t, newScrubCmd, "scrub", "--dry-run", "--idle", "0", "--wait", "3s", "a.jsonl", "b.jsonl")
		if code != 0 || !o.DryRun || o.Idle != 0 || o.Wait != 3*time.Second || !reflect.DeepEqual(o.Files, []string{"a.jsonl", "b.jsonl"}) {
			t.Fatalf("exit %d, %+v", code, o)
		}
	})
}
