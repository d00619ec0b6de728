package recall_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// writeAt writes a pi session at path (its directories created) with the
// header's cwd and start time, whose messages are texts.
func writeAt(t testing.TB, path, cwd string, start time.Time, texts ...string) string {
	return recalltest.WriteConversationAt(t, path, sessiongen.Config{Cwd: cwd, Start: start}, texts...)
}

// scopeSessions writes sessions of three agents and three projects that
// all hold "zebra deploy checklist".
type scopeSessions struct {
	openclaw, alice, api, claude string
}

func writeScopeSessions(t testing.TB) scopeSessions {
	t.Helper()
	dir := t.TempDir()
	day := func(m, d int) time.Time { return time.Date(2026, time.Month(m), d, 9, 0, 0, 0, time.UTC) }
	s := scopeSessions{
		openclaw: writeAt(t, filepath.Join(dir, ".openclaw", "agents", "main", "sessions", "oc.jsonl"), "/srv/shop", day(3, 1),
			"Write the zebra deploy checklist for the shop.", "Done: the zebra deploy checklist has five steps."),
		alice: writeAt(t, filepath.Join(dir, ".pi", "agent", "sessions", "--home-alice--", "alice.jsonl"), "/home/alice/notes", day(1, 1),
			"My private zebra deploy checklist notes.", "Noted."),
		api: writeAt(t, filepath.Join(dir, "pi", "api.jsonl"), "/srv/shop/api", day(2, 1),
			"The api's zebra deploy checklist differs.", "Yes, it has a canary."),
	}
	var buf bytes.Buffer
	if _, err := sessiongen.GenerateClaudeCode(&buf, sessiongen.AgentOptions{Seed: 3, Turns: 3, Fact: "the zebra deploy checklist of claude"}); err != nil {
		t.Fatal(err)
	}
	s.claude = filepath.Join(dir, "claude", "cc.jsonl")
	os.MkdirAll(filepath.Dir(s.claude), 0o700)
	testkit.WriteFile(t, s.claude, buf.Bytes(), 0o600)
	return s
}

func (s scopeSessions) all() []string { return []string{s.openclaw, s.alice, s.api, s.claude} }

// hitPaths are the sessions of a search's hits, sorted, each once.
func hitPaths(t testing.TB, ix *recall.Index, sc recall.Scope) []string {
	t.Helper()
	var out []string
	for _, h := range searchHits(t, ix, "zebra deploy checklist", recall.SearchOptions{MaxResults: 50, Scope: sc}) {
		if !slices.Contains(out, h.Path) {
			out = append(out, h.Path)
		}
	}
	slices.Sort(out)
	return out
}

func sorted(ps ...string) []string {
	out := slices.Clone(ps)
	slices.Sort(out)
	return out
}

// Search stays in the scope asked for, and every hit says where it comes
// from.
func TestSearchScope(t *testing.T) { eachBackend(t, testSearchScope) }

func testSearchScope(t *testing.T, k kit) {
	s := writeScopeSessions(t)
	ix := k.open(t)
	indexAll(t, ix, s.all()...)

	hits := searchHits(t, ix, "zebra deploy checklist", recall.SearchOptions{MaxResults: 50})
	want := map[string]recall.Origin{
		s.openclaw: {Agent: "openclaw/main", Project: "/srv/shop"},
		s.alice:    {Agent: "pi", Project: "/home/alice/notes"},
		s.api:      {Agent: "pi", Project: "/srv/shop/api"},
	}
	seen := map[string]bool{}
	for _, h := range hits {
		seen[h.Path] = true
		if h.Path == s.claude {
			if h.Agent != "claude-code" || h.Project == "" {
				t.Errorf("claude hit: agent %q project %q, want claude-code and its cwd", h.Agent, h.Project)
			}
			continue
		}
		if o := want[h.Path]; h.Agent != o.Agent || h.Project != o.Project {
			t.Errorf("%s: agent %q project %q, want %+v", h.Path, h.Agent, h.Project, o)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("unscoped search found %d of the 4 sessions", len(seen))
	}

	for _, c := range []struct {
		name  string
		scope recall.Scope
		want  []string
	}{
		{"agent openclaw", recall.Scope{Agent: "openclaw"}, []string{s.openclaw}},
		{"agent openclaw/main", recall.Scope{Agent: "openclaw/main"}, []string{s.openclaw}},
		{"agent openclaw/other", recall.Scope{Agent: "openclaw/other"}, nil},
		{"agent pi", recall.Scope{Agent: "pi"}, sorted(s.alice, s.api)},
		{"agent claude-code", recall.Scope{Agent: "claude-code"}, []string{s.claude}},
		{"project and below", recall.Scope{Project: "/srv/shop"}, sorted(s.openclaw, s.api)},
		{"project prefix is not a parent", recall.Scope{Project: "/srv/sho"}, nil},
		{"agent and project", recall.Scope{Agent: "pi", Project: "/srv/shop"}, []string{s.api}},
		{"session", recall.Scope{Session: s.api}, []string{s.api}},
		{"since", recall.Scope{Since: time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC), Agent: "openclaw"}, []string{s.openclaw}},
		{"since excludes older", recall.Scope{Since: time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC), Agent: "pi"}, nil},
		{"until", recall.Scope{Until: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), Agent: "pi"}, []string{s.alice}},
		{"between", recall.Scope{Since: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 2, 15, 0, 0, 0, 0, time.UTC)}, []string{s.api}},
	} {
		if got := hitPaths(t, ix, c.scope); !slices.Equal(got, c.want) {
			t.Errorf("%s: sessions %v, want %v", c.name, got, c.want)
		}
	}
	if o := recall.OriginOf(s.openclaw); o != want[s.openclaw] {
		t.Errorf("OriginOf(openclaw session) = %+v, want %+v", o, want[s.openclaw])
	}
}
