package recalltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// WritePriorDecision writes two short sessions in dir for tests of semantic
// history: old.jsonl decides the billing ledger's database ("PostgreSQL
// 16"), and the last prompt of cur.jsonl asks about that database, so
// recall should bring the old decision into cur.
func WritePriorDecision(t testing.TB, dir string) (old, cur string) {
	t.Helper()
	old = WriteConversation(t, filepath.Join(dir, "old.jsonl"), "Which database should the billing ledger use?",
		"Decision: the billing ledger uses PostgreSQL 16 with logical replication to the reporting replica.")
	cur = WriteConversation(t, filepath.Join(dir, "cur.jsonl"), "Set up the reporting replica for the billing ledger database.", "Looking at it.")
	return old, cur
}

// WriteConversation writes a pi session at path whose messages are texts,
// user and assistant in turn, and returns path.
func WriteConversation(t testing.TB, path string, texts ...string) string {
	t.Helper()
	return WriteConversationAt(t, path, sessiongen.Config{}, texts...)
}

// WriteConversationAt is WriteConversation with the header's settings in
// cfg (its cwd: the session's project; its start time), creating path's
// directories.
func WriteConversationAt(t testing.TB, path string, cfg sessiongen.Config, texts ...string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := sessiongen.NewBuilder(f, cfg)
	for i, s := range texts {
		if i%2 == 0 {
			b.UserText(s)
		} else {
			b.AssistantText(s)
		}
	}
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
