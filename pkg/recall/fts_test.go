package recall_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// ftsStray counts the chunks of the index at loc without a full-text row
// and the full-text rows without a chunk, in the word and the bigram
// index.
func ftsStray(t *testing.T, loc string) int {
	t.Helper()
	return sqlInt(t, loc, `SELECT
		(SELECT count(*) FROM chunks WHERE id NOT IN (SELECT id FROM f.chunks_fts_docsize)) +
		(SELECT count(*) FROM f.chunks_fts_docsize WHERE id NOT IN (SELECT id FROM chunks)) +
		(SELECT count(*) FROM chunks WHERE has_cjk = 1 AND id NOT IN (SELECT id FROM f.chunks_cjk_docsize)) +
		(SELECT count(*) FROM f.chunks_cjk_docsize WHERE id NOT IN (SELECT id FROM chunks WHERE has_cjk = 1))`)
}

// sameSearches fails the test when a and b give different hits for the
// facts' queries and names; it returns how many hits each gave.
func sameSearches(t *testing.T, a, b *recall.Index, facts []planted) int {
	t.Helper()
	hits := 0
	for _, f := range facts {
		for _, q := range []string{f.Query, f.Name} {
			opts := recall.SearchOptions{MaxResults: 10}
			r1, err1 := a.Search(context.Background(), q, opts)
			r2, err2 := b.Search(context.Background(), q, opts)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !reflect.DeepEqual(r1.Hits, r2.Hits) {
				t.Fatalf("query %q: %+v, the other index %+v", q, r1.Hits, r2.Hits)
			}
			hits += len(r1.Hits)
		}
	}
	return hits
}

// A kill between a batch's two commits (the main file's done, the FTS
// file's not) leaves full-text rows behind the chunks; the next open
// repairs them, and the index then searches as a clean one does that went
// through the same runs without the kill: after new files, a file indexed
// again after a rewrite, and a removed file.
func TestKillBetweenCommits(t *testing.T) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 4, 60)
	loc := filepath.Join(t.TempDir(), "index.sqlite")
	cleanLoc := filepath.Join(t.TempDir(), "index.sqlite")
	crash := func(what string, env ...string) {
		t.Helper()
		if err := runCrashChild(t, cleanLoc, dir, env...).Wait(); err != nil {
			t.Fatalf("%s: the clean run: %v", what, err)
		}
		cmd := runCrashChild(t, loc, dir, append(env, "CTXTOOL_CRASH_AT=recall-between-commits")...)
		if err := cmd.Wait(); err == nil || !cmd.ProcessState.Exited() && cmd.ProcessState.String() != "signal: killed" {
			t.Fatalf("%s: the indexer was not killed between its commits: %v", what, err)
		}
		if n := ftsStray(t, loc); n == 0 {
			t.Fatalf("%s: the full-text rows are in sync after the kill: nothing to repair", what)
		}
		ix := openAt(t, loc)
		if n := ftsStray(t, loc); n != 0 {
			t.Fatalf("%s: %d full-text rows out of sync after the open", what, n)
		}
		ix.Close()
	}
	check := func(what string, facts []planted) {
		t.Helper()
		if err := runCrashChild(t, loc, dir).Wait(); err != nil {
			t.Fatalf("%s: the next run: %v", what, err)
		}
		clean := openAt(t, cleanLoc)
		ix := openAt(t, loc)
		sameRows(t, ix, clean, what, "clean")
		sameSearches(t, ix, clean, facts)
		ix.Close()
		clean.Close()
	}
	crash("new files")
	check("new files", facts)

	p := facts[0].file
	recalltest.Write(t, p, recalltest.Options{Seed: 77, Turns: 50, Facts: recalltest.DefaultFacts(77)})
	crash("a rewritten file")
	var kept []planted
	for _, f := range facts {
		if f.file != p {
			kept = append(kept, f)
		}
	}
	check("a rewritten file", kept)

	gone := kept[0].file
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	crash("a removed file", crashChild+"_PRUNE=1")
	var left []planted
	for _, f := range kept {
		if f.file != gone {
			left = append(left, f)
		}
	}
	check("a removed file", left)
}

// builtIndex generates n sessions of turns turns in dir and indexes them
// into a new index at loc, closed.
func builtIndex(t *testing.T, n, turns int) (dir, loc string, facts []planted) {
	dir = t.TempDir()
	facts = genSessions(t, dir, n, turns)
	loc = filepath.Join(t.TempDir(), "index.sqlite")
	ix := openAt(t, loc)
	indexAll(t, ix, sessionFiles(t, dir)...)
	ix.Close()
	return dir, loc, facts
}

// An FTS file that is lost (deleted), left from another index, or of the
// earlier layout (a trigram table where the CJK pairs are now) is rebuilt
// from the chunks when the index opens: the same hits as before.
func TestLostFTSFileRebuilt(t *testing.T) {
	dir, loc, facts := builtIndex(t, 3, 60)
	other := filepath.Join(t.TempDir(), "index.sqlite")
	ix := openAt(t, other)
	indexAll(t, ix, sessionFiles(t, dir)[:1]...)
	ix.Close()
	for _, how := range []string{"deleted", "another index's", "of the trigram layout"} {
		if how == "of the trigram layout" {
			sqlExec(t, loc+".fts", `DROP TABLE chunks_cjk`,
				`CREATE VIRTUAL TABLE chunks_tri USING fts5(text, content='', contentless_delete=1, tokenize='trigram case_sensitive 0')`,
				`UPDATE fts_meta SET value = substr(value, 1, instr(value, '/cjk') - 1) WHERE key = 'owner'`)
			if n := sqlInt(t, loc+".fts", `SELECT count(*) FROM fts_meta WHERE key = 'owner' AND value NOT LIKE '%/cjk%'`); n != 1 {
				t.Fatalf("the old layout's owner row is not in place (%d rows)", n)
			}
		} else {
			for _, suf := range []string{"", "-wal", "-shm"} {
				os.Remove(loc + ".fts" + suf)
			}
		}
		if how == "another index's" {
			for _, suf := range []string{"", "-wal"} {
				if b, err := os.ReadFile(other + ".fts" + suf); err == nil {
					os.WriteFile(loc+".fts"+suf, b, 0o600)
				}
			}
		}
		ix = openAt(t, loc)
		if n := ftsStray(t, loc); n != 0 {
			t.Fatalf("FTS file %s: %d full-text rows out of sync after the open", how, n)
		}
		clean := openAt(t, filepath.Join(t.TempDir(), "index.sqlite"))
		indexAll(t, clean, sessionFiles(t, dir)...)
		sameSearches(t, ix, clean, facts)
		ix.Close()
		clean.Close()
	}
}

// An index written by a build that kept the full-text tables in the main
// file (schema 9) opens: it is emptied (the index is a cache, its schema
// changed) and the next run fills the main file and the FTS file again.
func TestSingleFileIndexOpens(t *testing.T) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 2, 60)
	loc := filepath.Join(t.TempDir(), "index.sqlite")
	sqlExec(t, loc, `CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`INSERT INTO meta VALUES('schema', '9')`,
		`CREATE TABLE chunks(id INTEGER PRIMARY KEY, text TEXT NOT NULL)`,
		`CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id')`,
		`INSERT INTO chunks VALUES(1, 'an old chunk')`,
		`INSERT INTO chunks_fts(rowid, text) VALUES(1, 'an old chunk')`)
	ix := openAt(t, loc)
	refillsLikeNew(t, ix, dir, facts)
	ix.Close()
	if n := sqlInt(t, loc, `SELECT count(*) FROM main.sqlite_master WHERE name LIKE 'chunks_fts%'`); n != 0 {
		t.Errorf("main file still has %d full-text tables", n)
	}
}

// refillsLikeNew checks that ix, an old index just opened, is empty, and
// that indexing dir fills it with the rows and search results of a new
// index.
func refillsLikeNew(t *testing.T, ix *recall.Index, dir string, facts []planted) {
	t.Helper()
	if d, err := recall.Dump(ix); err != nil || len(d) != 0 {
		t.Fatalf("old index after open: %v %v", d, err)
	}
	indexAll(t, ix, sessionFiles(t, dir)...)
	clean := openAt(t, filepath.Join(t.TempDir(), "index.sqlite"))
	defer clean.Close()
	indexAll(t, clean, sessionFiles(t, dir)...)
	sameRows(t, ix, clean, "old file", "clean")
	sameSearches(t, ix, clean, facts)
}

// An index built by the previous release (schema 10: one text column in
// the word index, no line kinds, no origin of the files) opens without an
// error: it is emptied, says so (Emptied), and the next run fills it as a
// new one; searches then find what a new index finds.
func TestSchema10IndexIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 2, 40)
	loc := filepath.Join(t.TempDir(), "index.sqlite")
	sqlExec(t, loc, `CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`INSERT INTO meta VALUES('schema', '10'), ('fts_owner', 'abc'), ('fts_seq', '1')`,
		`CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
			head_len INTEGER NOT NULL, head_hash TEXT NOT NULL, sample_hash TEXT NOT NULL, last_line_start INTEGER NOT NULL,
			last_line_hash TEXT NOT NULL, bytes_indexed INTEGER NOT NULL, lines_indexed INTEGER NOT NULL, malformed INTEGER NOT NULL,
			indexed_at INTEGER NOT NULL)`,
		`CREATE TABLE chunks(id INTEGER PRIMARY KEY AUTOINCREMENT, file_id INTEGER NOT NULL, start_line INTEGER NOT NULL,
			end_line INTEGER NOT NULL, start_offset INTEGER NOT NULL, entry_ids TEXT NOT NULL, ts INTEGER NOT NULL,
			has_cjk INTEGER NOT NULL, text TEXT NOT NULL, model TEXT, embedding BLOB)`,
		`INSERT INTO files VALUES(1, '/old/session.jsonl', 10, 1, 10, 'h', 's', 0, 'h', 10, 1, 0, 0)`,
		`INSERT INTO chunks VALUES(1, 1, 1, 1, 0, 'e1', 0, 0, 'User: an old chunk about quokka', NULL, NULL)`)
	sqlExec(t, loc+".fts", `CREATE TABLE fts_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`INSERT INTO fts_meta VALUES('owner', 'abc/10'), ('seq', '1')`,
		`CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='', contentless_delete=1)`,
		`INSERT INTO chunks_fts(rowid, text) VALUES(1, 'User: an old chunk about quokka')`)
	ix := openAt(t, loc)
	if why := ix.Emptied(); !strings.Contains(why, "schema 10") || !strings.Contains(why, "ctxtool index") {
		t.Errorf("Emptied() = %q, want the old schema and what to run", why)
	}
	refillsLikeNew(t, ix, dir, facts)
	ix.Close()
	if again := openAt(t, loc); again.Emptied() != "" {
		t.Errorf("reopened: Emptied() = %q, want \"\" (the index is current)", again.Emptied())
	}
}

// An index of schema 13 (every chunk's text stored) opens without an
// error: it is emptied, says so, gives its pages back (the share index
// reports is the new index's, not the old one's), and the next run fills
// it as a new one, whose pi chunks are read from their files.
func TestSchema13IndexIsRebuilt(t *testing.T) {
	dir, loc, facts := builtIndex(t, 2, 60)
	sqlExec(t, loc, `UPDATE meta SET value = '13' WHERE key = 'schema'`)
	fi, err := os.Stat(loc)
	if err != nil {
		t.Fatal(err)
	}
	ix := openAt(t, loc)
	if why := ix.Emptied(); !strings.Contains(why, "schema 13") || !strings.Contains(why, "ctxtool index") {
		t.Errorf("Emptied() = %q, want the old schema and what to run", why)
	}
	emptyLoc := filepath.Join(t.TempDir(), "index.sqlite")
	openAt(t, emptyLoc).Close()
	empty, _ := os.Stat(emptyLoc)
	if after, err := os.Stat(loc); err != nil || after.Size() >= fi.Size() || after.Size() > empty.Size()+2<<14 {
		t.Errorf("emptied index file: %d bytes, %d before, a new one %d (%v)", after.Size(), fi.Size(), empty.Size(), err)
	}
	refillsLikeNew(t, ix, dir, facts)
	if share, err := recall.RefShare(ix); err != nil || share < 0.5 {
		t.Errorf("%.0f%% of the refilled chunks are read from their files (%v)", share*100, err)
	}
	ix.Close()
}

// The bigram table holds only a CJK chunk's words with CJK: a query
// mixing CJK and other words still finds the chunk with all of them (the
// other words through the word index); with a word it lacks, only half of
// the query matches (under 0.6).
func TestMixedCJKQuery(t *testing.T) { eachBackend(t, testMixedCJKQuery) }

func testMixedCJKQuery(t *testing.T, k kit) {
	p := recalltest.WriteConversation(t, filepath.Join(t.TempDir(), "mixed.jsonl"),
		"部署到生产环境之前 run kubectl rollout status deployment/api-gateway 并通知值班工程师。", "好的。")
	ix := k.open(t)
	indexAll(t, ix, p)
	for q, want := range map[string]bool{"生产环境 kubectl": true, "值班 rollout": true, "生产环境 gateway": true, "生产环境 nosuchword": false, "值班": true} {
		res, err := ix.Search(t.Context(), q, recall.SearchOptions{MinScore: 0.6})
		if err != nil {
			t.Fatal(err)
		}
		if found := len(res.Hits) > 0 && res.Hits[0].StartLine <= 2; found != want {
			t.Errorf("%q: found %v, want %v (%+v)", q, found, want, res.Hits)
		}
	}
}
