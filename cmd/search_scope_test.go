package cmd

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// writeProjectSession writes a pi session whose header names cwd.
func writeProjectSession(t *testing.T, path, cwd string, texts ...string) {
	recalltest.WriteConversationAt(t, path, sessiongen.Config{Cwd: cwd}, texts...)
}

// search --project / --agent / --since narrow the hits; every hit names its
// agent and project, in the table and in JSON; a bad --since is a usage
// error that says what to give.
func TestSearchScopeFlags(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	writeProjectSession(t, filepath.Join(dir, "shop.jsonl"), "/srv/shop", "The zebra rollout plan for the shop.", "Noted.")
	writeProjectSession(t, filepath.Join(dir, "blog.jsonl"), "/srv/blog", "The zebra rollout plan for the blog.", "Noted.")
	runOK(t, "--state-dir", state, "index", dir)

	out, _ := runOK(t, "--state-dir", state, "--json", "search", "zebra rollout")
	hits := jsonLines[recall.Hit](t, out)
	pinJSONNames(t, out, "agent", "project")
	if len(hits) != 2 {
		t.Fatalf("unscoped: %d hits, want 2", len(hits))
	}
	out, _ = runOK(t, "--state-dir", state, "--json", "search", "--project", "/srv/shop", "zebra rollout")
	hits = jsonLines[recall.Hit](t, out)
	if len(hits) != 1 || filepath.Base(hits[0].Path) != "shop.jsonl" || hits[0].Project != "/srv/shop" || hits[0].Agent != "pi" {
		t.Fatalf("--project /srv/shop: %+v", hits)
	}
	out, _ = runOK(t, "--state-dir", state, "search", "--project", "/srv/blog", "--agent", "pi", "zebra rollout")
	if !strings.Contains(out, "blog.jsonl#L") || strings.Contains(out, "shop.jsonl") || !strings.Contains(out, "agent pi, project /srv/blog") {
		t.Errorf("--project /srv/blog --agent pi, table:\n%s", out)
	}
	if out, _ := runOK(t, "--state-dir", state, "search", "--agent", "codex", "zebra rollout"); !strings.HasPrefix(out, "no hits") {
		t.Errorf("--agent codex: %s", out)
	}
	// The generated sessions are dated 2026-03; a later --since finds none.
	if out, _ := runOK(t, "--state-dir", state, "--json", "search", "--since", "2099-01-01", "zebra rollout"); out != "" {
		t.Errorf("--since 2099-01-01: %s", out)
	}
	_, errOut, code := runCLI(t, "--state-dir", state, "search", "--since", "last tuesday", "zebra")
	if code != 2 || !strings.Contains(errOut, "7d") {
		t.Errorf("--since 'last tuesday': exit %d, %s", code, errOut)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-03-02":           time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		"2026-03-02T15:04:05Z": time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"36h":                  now.Add(-36 * time.Hour),
	} {
		got, err := parseWhen("--since", in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := searchScope("", "", "", "7d", "10d", now); err == nil {
		t.Error("--since 7d --until 10d (since after until) accepted")
	}
}

// An index made by the previous release is emptied when opened, and index
// and search say so (rather than silently finding nothing).
func TestOldIndexIsRebuiltWithANote(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	writeProjectSession(t, filepath.Join(dir, "shop.jsonl"), "/srv/shop", "The zebra rollout plan for the shop.", "Noted.")
	runOK(t, "--state-dir", state, "index", dir)
	db, err := sql.Open("sqlite", recall.DBPath(state))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = '10' WHERE key = 'schema'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, errOut := runOK(t, "--state-dir", state, "search", "zebra rollout")
	if !strings.Contains(errOut, "earlier ctxtool (index schema 10") || !strings.Contains(errOut, "ctxtool index") {
		t.Errorf("search on an old index: stderr %q", errOut)
	}
	// (the search emptied it: index fills it again, and says nothing more)
	_, errOut = runOK(t, "--state-dir", state, "index", dir)
	if strings.Contains(errOut, "earlier ctxtool") {
		t.Errorf("second open: stderr %q", errOut)
	}
	if out, _ := runOK(t, "--state-dir", state, "search", "zebra rollout"); !strings.Contains(out, "shop.jsonl#L") {
		t.Errorf("after index: %s", out)
	}
}
