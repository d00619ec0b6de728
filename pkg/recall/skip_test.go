package recall_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

func TestSearchSkip(t *testing.T) { eachBackend(t, testSearchSkip) }

// A prompt searched from inside its own (indexed) session matches itself
// with every keyword. Skip drops those chunks before the search decides to
// widen to single words, so the older history is found; without Skip the
// prompt's own chunk is all there is.
func testSearchSkip(t *testing.T, k kit) {
	dir := t.TempDir()
	write := func(name string, texts ...string) string {
		return recalltest.WriteConversation(t, filepath.Join(dir, name), texts...)
	}
	old := write("old.jsonl", "Which database should the billing ledger use?",
		"Decision: the billing ledger uses PostgreSQL 16 with logical replication.")
	prompt := "Set up the reporting replica for the billing ledger database."
	cur := write("cur.jsonl", prompt, "Looking at it.")
	ix := k.open(t)
	indexAll(t, ix, old, cur)
	ctx := context.Background()

	res, err := ix.Search(ctx, prompt, recall.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Path != cur {
		t.Fatalf("without Skip the prompt should find itself first: %+v", res.Hits)
	}
	res, err = ix.Search(ctx, prompt, recall.SearchOptions{Skip: func(path string, _ []string) bool { return path == cur }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Fatal("with the own session skipped, nothing was found")
	}
	for _, h := range res.Hits {
		if h.Path == cur {
			t.Fatalf("a skipped chunk came back: %s", h.Citation)
		}
	}
	if res.Hits[0].Path != old {
		t.Fatalf("want the older decision first, got %s", res.Hits[0].Citation)
	}
}
