package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
)

// `ctxtool sources` on a home holding every agent's layout: pi, OpenClaw
// JSONL and SQLite, Claude Code (the current shape too), Codex (plain,
// .zst, thread history), Gemini CLI and opencode. Each store's sessions,
// bytes and newest; what ctxtool cannot read, with why; what it skipped.
func TestSourcesEveryLayout(t *testing.T) {
	cleanEnv(t)
	home := t.TempDir()
	prunehome.Build(t, home, 1)
	put := func(rel, data string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cc, err := os.ReadFile("../testdata/current/claude-code-2.1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	put(".claude/projects/-home-dev-acme/7a1c0f52-3b1e-4c55-9d0a-2e6f1b8c4d01.jsonl", string(cc))
	put(".pi/agent/sessions/--home-dev-acme--/notes.jsonl", `{"kind":"weird","x":1}`+"\n"+`{"kind":"weird"}`+"\n")
	put(".pi/agent/sessions/--home-dev-acme--/2026-04-01T10-00-00-000Z_a4.jsonl.lock", "")
	put(".codex/thread_history_1.sqlite", "SQLite format 3\x00")
	put(".gemini/tmp/0f3a/chats/session-2026-11-30T10-00-1a2b.json", `{"sessionId":"1a2b","messages":[]}`)
	put(".local/share/opencode/storage/session/proj/ses_01.json", `{"id":"ses_01"}`)

	stdout, _ := runOK(t, "sources", "--json", "--home", home)
	type unread struct {
		Path  string `json:"path"`
		Files int    `json:"files"`
		Why   string `json:"why"`
	}
	type store struct {
		Agent      string         `json:"agent"`
		Path       string         `json:"path"`
		Kind       string         `json:"kind"`
		Sessions   int            `json:"sessions"`
		Bytes      int64          `json:"bytes"`
		Newest     string         `json:"newest"`
		Formats    map[string]int `json:"formats"`
		Unreadable []unread       `json:"unreadable"`
		Skipped    map[string]int `json:"skipped"`
	}
	got := map[string]store{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var s store
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		rel, _ := filepath.Rel(home, s.Path)
		got[s.Agent+" "+filepath.ToSlash(rel)] = s
	}
	for key, want := range map[string]struct {
		sessions, unreadable int
		why                  string
	}{
		"pi .pi/agent/sessions":                                     {6, 1, "no ctxtool reader knows it"},
		"openclaw .openclaw/agents/main/sessions":                   {3, 0, ""},
		"openclaw .openclaw/agents/ops/sessions":                    {1, 0, ""},
		"openclaw .openclaw/agents/ops/agent/openclaw-agent.sqlite": {1, 0, ""},
		"claude-code .claude/projects":                              {4, 0, ""},
		"codex .codex/sessions":                                     {4, 0, ""},
		"codex .codex/thread_history_1.sqlite":                      {0, 1, "rollouts"},
		"gemini-cli .gemini/tmp":                                    {0, 1, "Gemini CLI"},
		"opencode .local/share/opencode":                            {0, 1, "opencode"},
	} {
		s, ok := got[key]
		if !ok {
			t.Errorf("no store %q in %v", key, keys(got))
			continue
		}
		n := 0
		for _, u := range s.Unreadable {
			n += u.Files
			if !strings.Contains(u.Why, want.why) {
				t.Errorf("%s: cannot read %s because %q, want it to say %q", key, u.Path, u.Why, want.why)
			}
		}
		if s.Sessions != want.sessions || n != want.unreadable {
			t.Errorf("%s: %d sessions, %d unreadable; want %d, %d", key, s.Sessions, n, want.sessions, want.unreadable)
		}
		if s.Sessions > 0 && (s.Bytes <= 0 || s.Newest == "") {
			t.Errorf("%s: bytes %d, newest %q", key, s.Bytes, s.Newest)
		}
	}
	if f := got["codex .codex/sessions"].Formats; f["zstd"] != 1 || f["codex"] != 3 {
		t.Errorf("codex formats %v, want 3 codex + 1 zstd", f)
	}
	if sk := got["pi .pi/agent/sessions"].Skipped; sk["lock file"] != 1 {
		t.Errorf("pi skipped %v, want the lock file counted", sk)
	}
	// The table says the same, with the reasons.
	table, _ := runOK(t, "sources", "--home", home)
	for _, want := range []string{"gemini-cli", "opencode", "thread history", "cannot read", "skipped in"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
