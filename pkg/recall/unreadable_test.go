package recall_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/recall"
)

// A file ctxtool cannot read is an error naming it, never "indexed, 0
// chunks": that made it unsearchable in silence (issue 35). The current
// Claude Code shape (permission-mode first line) is read and indexed.
func TestIndexRefusesUnreadable(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "notes.jsonl")
	if err := os.WriteFile(bad, []byte(`{"type":"weird","x":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := recall.OpenURL(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	st, err := ix.Index(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "notes.jsonl:1") || !strings.Contains(err.Error(), `"weird"`) {
		t.Fatalf("index of an unreadable file: stats %+v, err %v; want an error naming the file, line and type", st, err)
	}
	st, err = ix.Index(context.Background(), "../../testdata/current/claude-code-2.1.jsonl")
	if err != nil || st.Chunks == 0 {
		t.Fatalf("current Claude Code shape: stats %+v, err %v; want chunks", st, err)
	}
}
