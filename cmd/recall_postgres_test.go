package cmd

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/pgtest"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/rolling"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// index, search and roll against a PostgreSQL index given with --index:
// roll's recall check (Covered) and its indexing use the same database, and
// what roll evicts is found there. Nothing is written to the state
// directory's SQLite index.
func TestIndexSearchRollOnPostgres(t *testing.T) {
	url := pgtest.DB(t)
	root, files := rollTree(t)
	state := t.TempDir()

	args := []string{"roll", "--state-dir", state, "--index", url, "--json", "--context-window", "12000",
		"--trigger", "0.9", "--tokenizer", "heuristic", root}
	reps, _, stderr, err := runRollCmd(t, args...) // on an empty database
	if err != nil {
		t.Fatalf("roll: %v\n%s", err, stderr)
	}
	var rolled []rolling.Report
	for _, r := range reps {
		if r.Error != "" || r.Fallback != "" {
			t.Errorf("%s: error %q fallback %q (recall on PostgreSQL not used?)", r.File, r.Error, r.Fallback)
		}
		if r.Rolled {
			rolled = append(rolled, r)
		}
	}
	if len(rolled) != 3 {
		t.Fatalf("want the 3 big sessions rolled, got %d: %+v", len(rolled), reps)
	}
	ix, err := recall.OpenURL(url)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	// roll indexed each session into PostgreSQL before evicting: only
	// what roll itself appended is new to the index now.
	for _, r := range rolled {
		st, err := ix.Index(context.Background(), r.File)
		if err != nil || st.Mode != recall.ModeAppend || st.LinesIndexed > 2 {
			t.Errorf("%s: after roll the index was behind by more than roll's own entries: %+v %v", r.File, st, err)
		}
	}
	out, _ := runOK(t, "index", "--state-dir", state, "--index", url, "--json", root)
	lines := jsonLines[recall.Stats](t, out)
	if len(lines) != len(files)+1 { // + the .reset. archive
		t.Fatalf("index reported %d files, want %d: %s", len(lines), len(files)+1, out)
	}
	for _, l := range lines {
		if l.Skipped != "unchanged" && !l.Indexed {
			t.Errorf("index after roll: %+v", l)
		}
	}
	if _, err := os.Stat(recall.DBPath(state)); err == nil {
		t.Fatal("--index postgres:// also wrote the SQLite index")
	}

	p := rolled[0].File
	out, _ = runOK(t, "search", "--index", url, "--json", "--session", p, "--min-score", "0", "--max-results", "50", "user")
	hits := jsonLines[recall.Hit](t, out)
	early := false
	for _, h := range hits {
		if h.Path != p {
			t.Errorf("--session leaked %s", h.Citation)
		}
		if h.StartLine <= rolled[0].FirstKeptLine {
			early = true
		}
	}
	if !early {
		t.Errorf("no hit before the first kept line %d of %s: %+v", rolled[0].FirstKeptLine, filepath.Base(p), hits)
	}
}
