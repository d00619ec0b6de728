package sources

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFindAndClassify(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".pi/agent/sessions/--home-dev-acme--", ".openclaw/agents/main/sessions", ".openclaw/agents/ops/agent",
		".openclaw/agents/empty", ".claude/projects/-home-dev-acme/3f2c/subagents"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, ".openclaw/agents/ops/agent/openclaw-agent.sqlite"), nil, 0o644)
	got := Find(home)
	want := []Store{
		{Agent: Pi, Dir: filepath.Join(home, ".pi/agent/sessions")},
		{Agent: OpenClaw, Dir: filepath.Join(home, ".openclaw/agents/main/sessions")},
		{Agent: OpenClaw, Dir: filepath.Join(home, ".openclaw/agents/ops/sessions"), Database: filepath.Join(home, ".openclaw/agents/ops/agent/openclaw-agent.sqlite")},
		{Agent: ClaudeCode, Dir: filepath.Join(home, ".claude/projects")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Find:\n got %+v\nwant %+v", got, want)
	}
	// A store without its sessions directory gives only its database;
	// Codex's missing store is not listed.
	if p := Paths(got); len(p) != 4 || p[3] != want[3].Dir || p[2] != want[2].Database {
		t.Errorf("Paths: %v", p)
	}
	for path, w := range map[string][2]string{
		home + "/.pi/agent/sessions/--home-dev-acme--/a.jsonl":                 {"pi", "--home-dev-acme--"},
		home + "/.openclaw/agents/main/sessions/x.jsonl":                       {"openclaw", "main"},
		home + "/.claude/projects/-home-dev-acme/3f2c/subagents/agent-1.jsonl": {"claude-code", "-home-dev-acme"},
		home + "/.codex/sessions/2026/03/18/rollout-x.jsonl":                   {"codex", "sessions"},
		"/backup/agents/main/sessions/x.jsonl":                                 {"openclaw", "main"},
		"/backup/--srv-app--/x.jsonl":                                          {"pi", "--srv-app--"},
		"/tmp/x.jsonl":                                                         {"other", "/tmp"},
	} {
		root := map[string]string{"pi": home + "/.pi/agent/sessions", "openclaw": "/backup/agents/main/sessions", "claude-code": home + "/.claude/projects",
			"codex": home + "/.codex/sessions", "other": "/tmp"}[w[0]]
		if w[0] == "openclaw" && strings.HasPrefix(path, home) {
			root = home + "/.openclaw/agents/main/sessions"
		}
		if w[0] == "pi" && strings.HasPrefix(path, "/backup") {
			root = "/backup/--srv-app--"
		}
		if got := Root(path); got != root {
			t.Errorf("Root(%s) = %s, want %s", path, got, root)
		}
		a, p := Classify(path)
		if string(a) != w[0] || p != w[1] {
			t.Errorf("Classify(%s) = %s, %s; want %s, %s", path, a, p, w[0], w[1])
		}
	}
}

// Looked, the list commands print when Find finds nothing, names a place
// above every store Find can return.
func TestLookedNamesEveryStore(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".pi/agent/sessions", ".openclaw/agents/main/sessions", ".claude/projects", ".codex/sessions"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stores := Find(home)
	if len(stores) != 4 {
		t.Fatalf("Find found %d stores, want 4: %+v", len(stores), stores)
	}
	for _, s := range stores {
		rel, _ := filepath.Rel(home, s.Dir)
		named := false
		for _, place := range strings.Split(Looked, ", ") {
			named = named || strings.HasPrefix("~/"+filepath.ToSlash(rel), place)
		}
		if !named {
			t.Errorf("Looked (%s) does not name %s's store ~/%s", Looked, s.Agent, rel)
		}
	}
}
