package recall_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// sessionFiles lists the indexable files under dir as the index command
// does.
func sessionFiles(t testing.TB, dir string) []string {
	t.Helper()
	fs, err := walk.Walk([]string{dir}, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

type planted struct {
	file string
	recalltest.Fact
}

// genSessions writes n sessions with planted facts and compactions that
// push the facts out of the active context.
func genSessions(t *testing.T, dir string, n, turns int) []planted {
	t.Helper()
	var all []planted
	for i := 0; i < n; i++ {
		seed := uint64(1000 + i)
		p := filepath.Join(dir, fmt.Sprintf("sess-%02d.jsonl", i))
		facts := recalltest.Write(t, p, recalltest.Options{Seed: seed, Turns: turns,
			Facts: recalltest.DefaultFacts(seed), Compactions: 2})
		inContext := contextLines(t, p)
		for _, f := range facts {
			if inContext[f.Line] {
				t.Fatalf("%s: fact %s on line %d is still in the active context", p, f.Name, f.Line)
			}
			all = append(all, planted{file: p, Fact: f})
		}
	}
	return all
}

func indexAll(t testing.TB, ix *recall.Index, files ...string) []recall.Stats {
	t.Helper()
	var out []recall.Stats
	for _, f := range files {
		st, err := ix.Index(context.Background(), f)
		if err != nil {
			t.Fatalf("index %s: %v", f, err)
		}
		out = append(out, st)
	}
	return out
}

// rankOf returns the 1-based rank of the first hit citing the fact's file
// and line, 0 if none.
func rankOf(hits []recall.Hit, p planted) int {
	for i, h := range hits {
		if h.Path == p.file && h.StartLine <= p.Line && p.Line <= h.EndLine {
			return i + 1
		}
	}
	return 0
}

func TestPlantedFactsTop3(t *testing.T) { eachBackend(t, testPlantedFactsTop3) }

func testPlantedFactsTop3(t *testing.T, k kit) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 6, 150)
	files := sessionFiles(t, dir)
	if len(files) != 6 {
		t.Fatalf("walk: %v", files)
	}
	ix := k.open(t)
	indexAll(t, ix, files...)
	for _, f := range facts {
		res, err := ix.Search(context.Background(), f.Query, recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
		if err != nil {
			t.Fatal(err)
		}
		r := rankOf(res.Hits, f)
		if r == 0 || r > 3 {
			var got []string
			for _, h := range res.Hits {
				got = append(got, fmt.Sprintf("%s %.3f", filepath.Base(h.Citation), h.Score))
			}
			t.Errorf("fact %s (%s, %s line %d) query %q: rank %d; hits %v", f.Name, f.Where, filepath.Base(f.file), f.Line, f.Query, r, got)
			continue
		}
		h := res.Hits[r-1]
		if h.Score < 0.35 || h.Score > 1 {
			t.Errorf("fact %s: score %v out of range", f.Name, h.Score)
		}
		if len([]rune(h.Snippet)) > 700 {
			t.Errorf("fact %s: snippet %d chars", f.Name, len([]rune(h.Snippet)))
		}
		if want := fmt.Sprintf("%s#L%d", f.file, h.StartLine); !strings.HasPrefix(h.Citation, want) {
			t.Errorf("citation %q, want prefix %q", h.Citation, want)
		}
		if h.EndLine-h.StartLine > 40 {
			t.Errorf("fact %s: line range %d-%d is not tight", f.Name, h.StartLine, h.EndLine)
		}
		if len(h.EntryIDs) == 0 || h.Timestamp == "" {
			t.Errorf("fact %s: hit without entry ids / timestamp: %+v", f.Name, h)
		}
	}
}

func TestSessionFilter(t *testing.T) { eachBackend(t, testSessionFilter) }

func testSessionFilter(t *testing.T, k kit) {
	dir := t.TempDir()
	facts := genSessions(t, dir, 2, 60)
	files := sessionFiles(t, dir)
	ix := k.open(t)
	indexAll(t, ix, files...)
	// The fact of session 0 must not be found when searching session 1.
	f := facts[0]
	other := files[1]
	res, err := ix.Search(context.Background(), f.Query, recall.SearchOptions{Session: other, MinScore: 0.35})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if h.Path != other {
			t.Errorf("session filter leaked %s", h.Citation)
		}
		if rankOf([]recall.Hit{h}, f) > 0 {
			t.Errorf("found session 0's fact in session 1")
		}
	}
	res, err = ix.Search(context.Background(), f.Query, recall.SearchOptions{Session: f.file, MinScore: 0.35})
	if err != nil || rankOf(res.Hits, f) != 1 {
		t.Errorf("with the right session: rank %d err %v", rankOf(res.Hits, f), err)
	}
	if _, err := ix.Search(context.Background(), "x", recall.SearchOptions{Session: filepath.Join(dir, "nope.jsonl")}); err == nil ||
		!strings.Contains(err.Error(), "not indexed") {
		t.Errorf("unindexed session: %v", err)
	}
}

func TestIncremental(t *testing.T) { eachBackend(t, testIncremental) }

func testIncremental(t *testing.T, k kit) {
	p := recalltest.TempFile(t, "s.jsonl", recalltest.Options{Seed: 7, Turns: 80})
	ix := k.open(t)
	first := indexAll(t, ix, p)[0]
	if !first.Indexed || first.Mode != recall.ModeFull || first.Chunks == 0 {
		t.Fatalf("first run: %+v", first)
	}
	if ok, err := ix.Covered(p); !ok || err != nil {
		t.Fatalf("covered after index: %v %v", ok, err)
	}
	second := indexAll(t, ix, p)[0]
	if second.Indexed || second.Skipped != "unchanged" || second.LinesIndexed != 0 || second.Bytes != 0 || second.Chunks != 0 {
		t.Fatalf("second run did work: %+v", second)
	}

	// Append a line carrying a new fact, plus a trailing half-written line.
	data, _ := os.ReadFile(p)
	lines := strings.Count(string(data), "\n")
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, `{"type":"message","id":"feed0001","parentId":null,"timestamp":"2026-03-05T10:00:00.000Z","message":{"role":"user","content":"remember the wombat-4411 incident","timestamp":1772704800000}}`)
	partial := `{"type":"message","id":"feed0002","parentId":"feed0001","timestamp":"2026-03-05T10:00:01.000Z","message":{"role":"user","content":"platypus-9 half`
	fmt.Fprint(f, partial)
	f.Close()
	if ok, _ := ix.Covered(p); ok {
		t.Fatal("covered although a complete line was appended")
	}
	third := indexAll(t, ix, p)[0]
	if third.Mode != recall.ModeAppend || third.LinesIndexed != 1 || third.Lines != lines+1 {
		t.Fatalf("append run: %+v (had %d lines)", third, lines)
	}
	if ok, _ := ix.Covered(p); !ok {
		t.Fatal("not covered although only a partial line remains")
	}
	res, _ := ix.Search(context.Background(), "wombat-4411", recall.SearchOptions{MinScore: 0.35})
	if len(res.Hits) == 0 || rankOf(res.Hits, planted{file: p, Fact: factAt(lines + 1)}) != 1 ||
		!strings.Contains(strings.Join(res.Hits[0].EntryIDs, " "), "feed0001") {
		t.Fatalf("appended fact: %+v", res.Hits)
	}
	if res, _ := ix.Search(context.Background(), "platypus", recall.SearchOptions{}); len(res.Hits) != 0 {
		t.Fatalf("partial line was indexed: %+v", res.Hits)
	}
	// Finish the partial line: only it is indexed.
	f, _ = os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, `","timestamp":1772704801000}}`)
	f.Close()
	fourth := indexAll(t, ix, p)[0]
	if fourth.Mode != recall.ModeAppend || fourth.LinesIndexed != 1 {
		t.Fatalf("completed line: %+v", fourth)
	}
	if res, _ := ix.Search(context.Background(), "platypus", recall.SearchOptions{}); len(res.Hits) != 1 || rankOf(res.Hits, planted{file: p, Fact: factAt(lines + 2)}) != 1 {
		t.Fatalf("completed line not found: %+v", res.Hits)
	}
	// The small last chunk was chunked again together with the new line.
	if fourth.LinesReread == 0 {
		t.Errorf("small last chunk not merged: %+v", fourth)
	}
	if res, _ := ix.Search(context.Background(), "wombat-4411", recall.SearchOptions{}); len(res.Hits) != 1 {
		t.Errorf("merged chunk lost or duplicated the earlier append: %+v", res.Hits)
	}

	// Rewrite the indexed part: reindexed from line 1.
	data, _ = os.ReadFile(p)
	data = []byte(strings.Replace(string(data), "wombat-4411", "koala-555555", 1))
	os.WriteFile(p, data, 0o644)
	fifth := indexAll(t, ix, p)[0]
	if fifth.Mode != recall.ModeReindex {
		t.Fatalf("rewritten file: %+v", fifth)
	}
	if res, _ := ix.Search(context.Background(), "wombat", recall.SearchOptions{}); len(res.Hits) != 0 {
		t.Fatal("stale text still indexed after reindex")
	}
	if res, _ := ix.Search(context.Background(), "koala-555555", recall.SearchOptions{}); len(res.Hits) != 1 {
		t.Fatal("new text not indexed after reindex")
	}

	// Removed files drop out.
	os.Remove(p)
	removed, err := ix.Prune(context.Background())
	if err != nil || len(removed) != 1 {
		t.Fatalf("prune: %v %v", removed, err)
	}
	if res, _ := ix.Search(context.Background(), "koala-555555", recall.SearchOptions{}); len(res.Hits) != 0 {
		t.Fatal("removed file still searchable")
	}
}

// A one-character CJK term cannot use the bigram table; a LIKE scan over
// the CJK chunks finds it. Two characters are one pair of the table.
func TestShortCJKQuery(t *testing.T) { eachBackend(t, testShortCJKQuery) }

func testShortCJKQuery(t *testing.T, k kit) {
	p := recalltest.TempFile(t, "s.jsonl", recalltest.Options{Seed: 9, Turns: 30})
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, `{"type":"message","id":"c0ffee01","parentId":null,"timestamp":"2026-03-05T10:00:00.000Z","message":{"role":"user","content":"这个项目代号是龘靐，不要告诉别人。","timestamp":1772704800000}}`)
	fmt.Fprintln(f, `{"type":"message","id":"c0ffee02","parentId":"c0ffee01","timestamp":"2026-03-05T10:00:01.000Z","message":{"role":"user","content":"另一个句子没有那个词。","timestamp":1772704801000}}`)
	f.Close()
	ix := k.open(t)
	st := indexAll(t, ix, p)[0]
	for _, q := range []string{"龘靐", "龘", "代号是龘靐"} {
		res, err := ix.Search(context.Background(), q, recall.SearchOptions{MinScore: 0.35})
		if err != nil {
			t.Fatal(err)
		}
		want := planted{file: p, Fact: factAt(st.Lines - 1)}
		if len(res.Hits) != 1 || rankOf(res.Hits, want) != 1 || !strings.Contains(strings.Join(res.Hits[0].EntryIDs, " "), "c0ffee01") {
			t.Errorf("query %q: %+v", q, res.Hits)
		}
	}
}

func TestMalformedAndFixtures(t *testing.T) { eachBackend(t, testMalformedAndFixtures) }

func testMalformedAndFixtures(t *testing.T, k kit) {
	fx := oracle.Fixture("pi-v1-compact-705ba5d.jsonl")
	ix := k.open(t)
	st := indexAll(t, ix, fx)[0]
	if st.Lines != 1013 || st.Malformed != 1 || len(st.MalformedLines) != 1 || st.MalformedLines[0].Line != 1013 || !st.MalformedLines[0].HidesCompaction() {
		t.Fatalf("fixture stats: %+v", st)
	}
	// The hidden compaction inside the malformed line 1013 is still indexed.
	res, err := ix.Search(context.Background(), "Conversation Summary Agent Compaction Hooks Documentation Refinement", recall.SearchOptions{MaxResults: 3, MinScore: 0.35})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range res.Hits {
		if h.StartLine <= 1013 && h.EndLine >= 1013 {
			found = true
		}
	}
	if !found {
		t.Errorf("text of malformed line 1013 not found")
	}
	// v1 entries carry pkg/transcript's synthetic ids.
	if len(res.Hits) == 0 || !strings.HasPrefix(res.Hits[0].EntryIDs[0], "v1:L") {
		t.Errorf("v1 entry ids: %+v", res.Hits)
	}
}

func factAt(line int) recalltest.Fact { return recalltest.Fact{Line: line} }

// Indexing while another process appends (each line written in two parts,
// so the indexer often sees a torn last line) loses nothing and indexes no
// half line.
func TestIndexWhileAppending(t *testing.T) { eachBackend(t, testIndexWhileAppending) }

func testIndexWhileAppending(t *testing.T, k kit) {
	p := recalltest.TempFile(t, "live.jsonl", recalltest.Options{Seed: 11, Turns: 10})
	ix := k.open(t)
	const n = 200
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		for i := 0; i < n; i++ {
			line := fmt.Sprintf(`{"type":"message","id":"live%04d","parentId":null,"timestamp":"2026-03-05T10:00:00.000Z","message":{"role":"user","content":"marker%04dx appended","timestamp":1772704800000}}`, i, i)
			half := len(line) / 2
			f.WriteString(line[:half])
			time.Sleep(200 * time.Microsecond)
			f.WriteString(line[half:] + "\n")
		}
		done <- nil
	}()
	runs := 0
	for writing := true; writing; runs++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			writing = false
		default:
		}
		if _, err := ix.Index(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ix.Index(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if want := strings.Count(string(data), "\n"); st.Lines != want {
		t.Fatalf("index covers %d lines, file has %d", st.Lines, want)
	}
	if ok, _ := ix.Covered(p); !ok {
		t.Fatal("not covered at the end")
	}
	for i := 0; i < n; i++ {
		res, err := ix.Search(context.Background(), fmt.Sprintf("marker%04dx", i), recall.SearchOptions{MaxResults: 3})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("marker %d lost after %d concurrent runs: %v", i, runs, err)
		}
	}
	t.Logf("%d index runs during the appends", runs)
}

// Two index handles (two ctxtool processes) racing on one growing file
// index every line exactly once between them.
func TestTwoIndexersOneFile(t *testing.T) { eachBackend(t, testTwoIndexersOneFile) }

func testTwoIndexersOneFile(t *testing.T, k kit) {
	p := recalltest.TempFile(t, "live.jsonl", recalltest.Options{Seed: 12, Turns: 5})
	state := k.location(t)
	var handles [2]*recall.Index
	for i := range handles {
		ix, err := recall.OpenURL(state)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		handles[i] = ix
	}
	stop := make(chan struct{})
	counts := make(chan int, 2)
	for _, ix := range handles {
		go func(ix *recall.Index) {
			n := 0
			for {
				st, err := ix.Index(context.Background(), p)
				if err != nil {
					t.Error(err)
				}
				if st.Mode == recall.ModeReindex {
					t.Error("unexpected reindex")
				}
				n += st.LinesIndexed
				select {
				case <-stop:
					st, _ := ix.Index(context.Background(), p)
					counts <- n + st.LinesIndexed
					return
				default:
				}
			}
		}(ix)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	for i := 0; i < 150; i++ {
		fmt.Fprintf(f, `{"type":"message","id":"two%04d","parentId":null,"timestamp":"2026-03-05T10:00:00.000Z","message":{"role":"user","content":"racer%04d","timestamp":1772704800000}}`+"\n", i, i)
		time.Sleep(100 * time.Microsecond)
	}
	f.Close()
	close(stop)
	total := <-counts + <-counts
	data, _ := os.ReadFile(p)
	if want := strings.Count(string(data), "\n"); total != want {
		t.Fatalf("lines indexed by both handles: %d, file has %d", total, want)
	}
}

// Words with letters beyond ASCII are found as unicode61 (remove_diacritics
// 2) finds them, with or without their accents and in any case; a
// character that is neither letter nor number (an arrow, a dash) separates
// words; a Latin word glued to CJK is a word of its own in SQLite (in
// PostgreSQL it is one lexeme with the CJK, a known difference). (The
// SQLite word index is tokenized by ascii over text tokenized in Go:
// ftsWords; unicode61 before it passed the same cases.)
func TestNonASCIIWords(t *testing.T) { eachBackend(t, testNonASCIIWords) }

func testNonASCIIWords(t *testing.T, k kit) {
	p := recalltest.WriteConversation(t, filepath.Join(t.TempDir(), "accents.jsonl"),
		"Le Café Zürich est ouvert — the naïve résumé parser→tokenizer handles ÅNGSTRÖM units and assembly的代码.",
		"Noted.")
	ix := k.open(t)
	indexAll(t, ix, p)
	for q, want := range map[string]bool{
		"cafe": true, "Café": true, "CAFÉ zurich": true, "naive resume": true, "naïve résumé": true,
		"tokenizer": true, "parser": true, "angstrom": true, "Ångström": true, "assembly": true,
		"parsertokenizer": false, "cafes": false,
	} {
		if q == "assembly" && k.name == "postgres" {
			continue
		}
		res, err := ix.Search(t.Context(), q, recall.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if found := len(res.Hits) > 0 && res.Hits[0].StartLine <= 2; found != want {
			t.Errorf("%q: found %v, want %v (%+v)", q, found, want, res.Hits)
		}
	}
}
