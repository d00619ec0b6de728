package budget_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/budget"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// conversationAt writes a pi session at path whose header names cwd.
func conversationAt(t *testing.T, path, cwd string, texts ...string) string {
	return recalltest.WriteConversationAt(t, path, sessiongen.Config{Cwd: cwd}, texts...)
}

// Semantic history stays in the session's agent and project: another
// user's standalone pi session on the same machine, about the same thing,
// never fills an OpenClaw agent's block (it did: the index spans every
// agent and project). With scope "all" it may.
func TestSemanticHistoryStaysInWorkspace(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, ".openclaw", "agents", "main", "sessions")
	old := conversationAt(t, filepath.Join(agent, "old.jsonl"), "/srv/shop",
		"Which database should the billing ledger use?",
		"Decision: the billing ledger uses PostgreSQL 16 with logical replication to the reporting replica.")
	other := conversationAt(t, filepath.Join(dir, ".pi", "agent", "sessions", "--home-alice--", "alice.jsonl"), "/home/alice",
		"Set up the reporting replica for my billing ledger database, the private one.",
		"Decision: your billing ledger database gets a reporting replica on SQLite.")
	cur := conversationAt(t, filepath.Join(agent, "cur.jsonl"), "/srv/shop",
		"Set up the reporting replica for the billing ledger database.", "Looking at it.")
	ix, err := recall.Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, p := range []string{old, other, cur} {
		if _, err := ix.Index(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	s := testkit.Load(t, cur)
	defer s.Close()
	paths := func(scope string) map[string]bool {
		cfg := budget.DefaultConfig()
		cfg.SemanticHistory.MinRelevanceScore = 0.3
		cfg.SemanticHistory.Scope = scope
		r, err := budget.Plan(context.Background(), budget.Input{Session: s, Window: 200000, Config: cfg, Searcher: ix, SessionPath: cur})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, c := range r.Semantic.Chunks {
			got[c.Path] = true
		}
		return got
	}
	for _, scope := range []string{"", budget.ScopeWorkspace, budget.ScopeAgent} {
		got := paths(scope)
		if !got[old] || got[other] {
			t.Errorf("scope %q: chunks from %v, want the agent's older session and not the other user's", scope, got)
		}
	}
	if got := paths(budget.ScopeAll); !got[other] {
		t.Errorf("scope all: chunks from %v, want the other user's session (it holds every word of the prompt)", got)
	}
}
