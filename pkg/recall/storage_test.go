package recall_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

func writeSessions(t *testing.T, dir string, n, turns int) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		recalltest.Write(t, p, recalltest.Options{Seed: uint64(300 + i), Turns: turns})
		out = append(out, p)
	}
	return out
}

// A full disk stops the run at once with an error that names the index
// file and says to free space; what was committed before stays, and the
// next run (with space) completes the index.
func TestIndexDiskFull(t *testing.T) {
	files := writeSessions(t, t.TempDir(), 3, 120)
	loc := filepath.Join(t.TempDir(), "index.sqlite")
	ix := openAt(t, loc, recall.WithBatchBytes(1)) // a commit per file
	if _, err := ix.Index(context.Background(), files[0]); err != nil {
		t.Fatal(err)
	}
	// The device fills up: SQLite may not grow the file any more.
	recall.LimitPages(t, ix)
	var reported []string
	err := ix.IndexFiles(context.Background(), files[1:], func(st recall.Stats, err error) { reported = append(reported, st.File) })
	var se *recall.StoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), loc) || !strings.Contains(err.Error(), "free space") ||
		!strings.Contains(err.Error(), "disk is full") || !strings.HasPrefix(err.Error(), "recall index "+loc) {
		t.Fatalf("disk full: %v", err)
	}
	t.Logf("disk full: %v", err)
	if len(reported) != 0 {
		t.Errorf("files reported as indexed although the disk was full: %v", reported)
	}
	ix.Close()
	ix = openAt(t, loc)
	if ok, err := ix.Covered(files[0]); !ok || err != nil {
		t.Fatalf("the file indexed before the disk filled up is gone: %v", err)
	}
	for _, f := range files[1:] {
		st, err := ix.Index(context.Background(), f)
		if err != nil || st.Mode != recall.ModeFull {
			t.Fatalf("next run: %+v %v", st, err)
		}
	}
}

// A damaged index file gives an error naming it and the remedy (index
// --rebuild), and Rebuild recovers.
func TestCorruptIndex(t *testing.T) {
	files := writeSessions(t, t.TempDir(), 2, 60)
	for _, where := range []string{"header", "pages"} {
		t.Run(where, func(t *testing.T) {
			loc := filepath.Join(t.TempDir(), "index.sqlite")
			ix := openAt(t, loc)
			for _, f := range files {
				if _, err := ix.Index(context.Background(), f); err != nil {
					t.Fatal(err)
				}
			}
			ix.Close()
			os.Remove(loc + "-wal")
			os.Remove(loc + "-shm")
			data := testkit.ReadFile(t, loc)
			if where == "header" {
				copy(data, "this is not a database file....")
			} else {
				// Garbage over every page but the first (schema): table
				// and FTS pages alike.
				for i := 4096; i < len(data); i++ {
					data[i] = byte(i*7 + 3)
				}
			}
			testkit.WriteFile(t, loc, data, 0o600)
			check := func(what string, err error) {
				t.Helper()
				var se *recall.StoreError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), loc) || !strings.Contains(err.Error(), "ctxtool index --rebuild") {
					t.Fatalf("%s on a corrupt index: %v", what, err)
				}
			}
			ix, err := recall.OpenURL(loc)
			if err == nil {
				_, err = ix.Search(context.Background(), "function error", recall.SearchOptions{})
				if err == nil {
					_, err = ix.Index(context.Background(), files[0])
				}
				ix.Close()
			}
			check("open/search/index", err)
			t.Logf("corrupt %s: %v", where, err)
			if err := recall.Rebuild(loc); err != nil {
				t.Fatal(err)
			}
			ix = openAt(t, loc)
			for _, f := range files {
				if st, err := ix.Index(context.Background(), f); err != nil || st.Mode != recall.ModeFull {
					t.Fatalf("after rebuild: %+v %v", st, err)
				}
			}
		})
	}
}

// A new index's storage settings (16 KiB pages, FTS5 automerge 16) change
// how the rows are laid out, never what is found: an index file with the
// settings of earlier builds (4 KiB pages, automerge 4, here with a small
// FTS5 hash too, so that many segments are merged) holds the same chunks
// and gives the same hits, scores and snippets.
func TestStorageSettingsSameResults(t *testing.T) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 4, 150)
	files := sessionFiles(t, dir)
	newLoc := filepath.Join(t.TempDir(), "index.sqlite")
	oldLoc := filepath.Join(t.TempDir(), "index.sqlite")
	sqlExec(t, oldLoc, `PRAGMA page_size = 4096`, `PRAGMA journal_mode = WAL`)
	fresh, old := openAt(t, newLoc), openAt(t, oldLoc)
	sqlExec(t, oldLoc+".fts", `INSERT INTO chunks_fts(chunks_fts, rank) VALUES('automerge', 4)`,
		`INSERT INTO chunks_fts(chunks_fts, rank) VALUES('hashsize', 65536)`)
	indexAll(t, fresh, files...)
	indexAll(t, old, files...)
	if got := pageSize(t, newLoc); got != 16384 {
		t.Errorf("new index: %d-byte pages, want 16384", got)
	}
	if got := pageSize(t, oldLoc); got != 4096 {
		t.Errorf("existing index: %d-byte pages, want its own 4096", got)
	}
	sameRows(t, fresh, old, "new", "old")
	hits := sameSearches(t, fresh, old, facts)
	t.Logf("%d queries, %d hits, the same in both", 2*len(facts), hits)
}

// sqlExec runs statements on the SQLite file at loc in a connection of its
// own.
func sqlExec(t *testing.T, loc string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func pageSize(t *testing.T, loc string) int { return sqlInt(t, loc, `PRAGMA page_size`) }

// sqlInt runs a query of one integer on the index at loc, straight from
// the SQLite files (no recall.Open, which migrates and repairs), with its
// FTS file attached as f.
func sqlInt(t *testing.T, loc, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`ATTACH DATABASE ? AS f`, loc+".fts"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
