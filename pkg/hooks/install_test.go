package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Real-shaped config files (the keys Claude Code 2.1 and Codex 0.171
// write), with the user's own hooks and MCP servers.
const userSettings = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(go test:*)", "Read(~/src/**)"],
    "deny": ["Read(./.env)"]
  },
  "env": {"GOFLAGS": "-mod=mod"},
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [{"type": "command", "command": "echo hello"}]
      }
    ]
  },
  "statusLine": {"type": "command", "command": "~/.claude/my-status.sh"},
  "includeCoAuthoredBy": false
}
`

const userClaudeJSON = `{
  "numStartups": 42,
  "installMethod": "npm-global",
  "autoUpdates": false,
  "userID": "0f3c9b1e",
  "projects": {
    "/home/u/billing": {
      "allowedTools": [],
      "history": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true
    }
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "x"}
    }
  },
  "hasCompletedOnboarding": true
}
`

const userCodexConfig = `model = "gpt-5.1-codex"
model_provider = "fake"
approval_policy = "on-request"

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "FAKE_KEY"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]

[profiles.fast]
model = "gpt-5-mini"`

func write(t *testing.T, path, s string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readS(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "<absent>"
	}
	return string(data)
}

func run(t *testing.T, agent string, p Paths, bin string, remove bool) []Change {
	t.Helper()
	cs, err := Edit(agent, p, bin, remove)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// topLevel returns each top-level member's raw bytes.
func topLevel(t *testing.T, s string) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON after the edit: %v\n%s", err, s)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestInstallClaudeCodeKeepsTheUsersBytes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	p, _ := AgentPaths(ClaudeCode, home)
	write(t, p.Hooks, userSettings)
	write(t, p.MCP, userClaudeJSON)
	bin := "/opt/ctx tool/bin/ctxtool"
	cs := run(t, ClaudeCode, p, bin, false)
	if cs[0].Change != "update" || cs[1].Change != "update" || !strings.Contains(cs[0].Note, "kept your statusLine") {
		t.Fatalf("changes = %+v", cs)
	}
	settings, claude := readS(t, p.Hooks), readS(t, p.MCP)
	before, after := topLevel(t, userSettings), topLevel(t, settings)
	for k, v := range before {
		if k != "hooks" && after[k] != v {
			t.Errorf("settings.json %s changed: %s → %s", k, v, after[k])
		}
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct{ Command string }
		}
	}
	json.Unmarshal([]byte(settings), &s)
	for _, ev := range Events[ClaudeCode] {
		g := s.Hooks[ev]
		if len(g) == 0 || g[len(g)-1].Hooks[0].Command != "'/opt/ctx tool/bin/ctxtool' hook --agent claude-code" {
			t.Errorf("event %s: %+v", ev, g)
		}
	}
	if len(s.Hooks["SessionStart"]) != 2 || s.Hooks["SessionStart"][0].Hooks[0].Command != "echo hello" {
		t.Errorf("the user's SessionStart hook is gone: %+v", s.Hooks["SessionStart"])
	}
	// The user's own hook entries keep their bytes.
	for _, frag := range []string{`"hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]`, `"statusLine": {"type": "command", "command": "~/.claude/my-status.sh"}`} {
		if !strings.Contains(settings, frag) {
			t.Errorf("settings.json lost %s", frag)
		}
	}
	cb, ca := topLevel(t, userClaudeJSON), topLevel(t, claude)
	for k, v := range cb {
		if k != "mcpServers" && ca[k] != v {
			t.Errorf(".claude.json %s changed", k)
		}
	}
	if !strings.Contains(claude, `"github": {
      "type": "stdio",`) || !strings.Contains(claude, `"command": "/opt/ctx tool/bin/ctxtool"`) {
		t.Errorf(".claude.json:\n%s", claude)
	}
	// Again: nothing changes. Another binary: updated in place, one entry.
	if cs = run(t, ClaudeCode, p, bin, false); cs[0].Change != "unchanged" || cs[1].Change != "unchanged" {
		t.Errorf("second install: %+v", cs)
	}
	run(t, ClaudeCode, p, "/usr/local/bin/ctxtool", false)
	if n := strings.Count(readS(t, p.Hooks), "hook --agent claude-code"); n != len(Events[ClaudeCode]) {
		t.Errorf("after a reinstall with another binary: %d hooks of ours, want %d", n, len(Events[ClaudeCode]))
	}
	// Uninstall gives back the very bytes.
	run(t, ClaudeCode, p, "", true)
	if got := readS(t, p.Hooks); got != userSettings {
		t.Errorf("settings.json after uninstall:\n%s\nwant:\n%s", got, userSettings)
	}
	if got := readS(t, p.MCP); got != userClaudeJSON {
		t.Errorf(".claude.json after uninstall:\n%s", got)
	}
}

func TestInstallIntoNoFilesAndBack(t *testing.T) {
	for _, agent := range []string{ClaudeCode, Codex} {
		home := t.TempDir()
		t.Setenv("CLAUDE_CONFIG_DIR", "")
		t.Setenv("CODEX_HOME", "")
		p, _ := AgentPaths(agent, home)
		cs := run(t, agent, p, "/bin/ctxtool", false)
		if cs[0].Change != "create" || cs[1].Change != "create" {
			t.Fatalf("%s: %+v", agent, cs)
		}
		if cs = run(t, agent, p, "/bin/ctxtool", false); cs[0].Change != "unchanged" || cs[1].Change != "unchanged" {
			t.Errorf("%s: second install into fresh files: %+v", agent, cs)
		}
		if agent == ClaudeCode && !strings.Contains(readS(t, p.Hooks), `"statusLine"`) {
			t.Errorf("no statusLine in a fresh settings.json")
		}
		run(t, agent, p, "", true)
		if readS(t, p.Hooks) != "<absent>" || readS(t, p.MCP) != "<absent>" {
			t.Errorf("%s: uninstall left %s / %s", agent, readS(t, p.Hooks), readS(t, p.MCP))
		}
	}
}

func TestInstallCodexKeepsTheUsersBytes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CODEX_HOME", "")
	p, _ := AgentPaths(Codex, home)
	write(t, p.MCP, userCodexConfig)
	hooksJSON := "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"notify-send done\"\n          }\n        ]\n      }\n    ]\n  }\n}\n"
	write(t, p.Hooks, hooksJSON)
	run(t, Codex, p, "/bin/ctxtool", false)
	cfg := readS(t, p.MCP)
	if !strings.HasPrefix(cfg, userCodexConfig+"\n") || !strings.Contains(cfg, "[mcp_servers.ctxtool]") || !strings.Contains(cfg, `command = "/bin/ctxtool"`) {
		t.Errorf("config.toml:\n%s", cfg)
	}
	if h := readS(t, p.Hooks); !strings.Contains(h, "notify-send done") || strings.Count(h, "hook --agent codex") != len(Events[Codex]) {
		t.Errorf("hooks.json:\n%s", h)
	}
	if cs := run(t, Codex, p, "/bin/ctxtool", false); cs[0].Change != "unchanged" || cs[1].Change != "unchanged" {
		t.Errorf("second install: %+v", cs)
	}
	run(t, Codex, p, "/new/ctxtool", false)
	if cfg = readS(t, p.MCP); strings.Count(cfg, "[mcp_servers.ctxtool]") != 1 || !strings.Contains(cfg, "/new/ctxtool") {
		t.Errorf("after another binary:\n%s", cfg)
	}
	run(t, Codex, p, "", true)
	if got := readS(t, p.MCP); got != userCodexConfig {
		t.Errorf("config.toml after uninstall:\n%q\nwant\n%q", got, userCodexConfig)
	}
	if got := readS(t, p.Hooks); got != hooksJSON {
		t.Errorf("hooks.json after uninstall:\n%s", got)
	}
	// A file ending in a line break comes back the same too.
	write(t, p.MCP, userCodexConfig+"\n")
	run(t, Codex, p, "/bin/ctxtool", false)
	run(t, Codex, p, "", true)
	if got := readS(t, p.MCP); got != userCodexConfig+"\n" {
		t.Errorf("config.toml with a final line break after a round trip:\n%q", got)
	}
	// A table of that name ctxtool did not write is refused.
	write(t, p.MCP, userCodexConfig+"\n[mcp_servers.ctxtool]\ncommand = \"other\"\n")
	if _, err := Edit(Codex, p, "/bin/ctxtool", false); err == nil || !strings.Contains(err.Error(), "did not write it") {
		t.Errorf("a foreign [mcp_servers.ctxtool]: %v", err)
	}
}
