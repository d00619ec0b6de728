package recall

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/internal/cputime"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/secretkit"
)

func scannedTexts(t *testing.T, ix *Index, path string) []string {
	t.Helper()
	out, err := ScannedTexts(ix, path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// indexOne indexes path into a new SQLite index.
func indexOne(t *testing.T, path string, opts ...Option) *Index {
	t.Helper()
	ix, err := OpenFile(filepath.Join(t.TempDir(), "i.sqlite"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if _, err := ix.Index(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	return ix
}

// Done when (issue 33, index size): the SQLite index stores no text for
// the chunks of plain pi JSONL files, and the text read back from the
// session file is exactly the text that was indexed, for every JSONL
// format (Claude Code, Codex and zstd files keep their text).
func TestRereadTextIsIndexedText(t *testing.T) {
	dir := t.TempDir()
	pi := filepath.Join(dir, "pi.jsonl")
	if _, err := sessiongen.GenerateFile(pi, sessiongen.Options{Seed: 7, Turns: 30, CJKShare: 0.5, Thinking: true,
		HugeToolResults: 1, HugeToolResultBytes: 200 << 10, ToolImages: 1}); err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(dir, "v1.jsonl")
	if _, err := sessiongen.GenerateFile(v1, sessiongen.Options{Seed: 8, Turns: 8, Version: 1}); err != nil {
		t.Fatal(err)
	}
	// A byte order mark before the first line and CRLF line ends.
	bom := filepath.Join(dir, "bom.jsonl")
	testkit.WriteFile(t, bom, append([]byte("\ufeff"), bytes.ReplaceAll(testkit.ReadFile(t, v1), []byte("\n"), []byte("\r\n"))...), 0o600)
	zst := filepath.Join(dir, "pi.jsonl.zst")
	zw, _ := zstd.NewWriter(nil)
	testkit.WriteFile(t, zst, zw.EncodeAll(testkit.ReadFile(t, pi), nil), 0o600)
	for _, c := range []struct {
		name, path string
		refs       bool // most chunks are refs
	}{
		{"pi", pi, true},
		{"pi v1", v1, true},
		{"pi glued lines", "../../testdata/edge-glued.jsonl", true},
		{"pi bom crlf", bom, true},
		{"pi cjk", "../../testdata/edge-cjk.jsonl", true},
		{"claude code", "../../testdata/current/claude-code-2.1.jsonl", false},
		{"codex", "../../testdata/current/codex-0.171.jsonl", false},
		{"zstd", zst, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			abs, _ := filepath.Abs(c.path)
			for _, opts := range [][]Option{nil, {WithMaxChars(500)}} {
				ix := indexOne(t, abs, opts...)
				want := scannedTexts(t, ix, abs)
				got, err := ChunkTexts(ix)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 || !slices.Equal(got[abs], want) {
					t.Fatalf("read back %d chunks, indexed %d; first difference:\n%s", len(got[abs]), len(want), firstDiff(got[abs], want))
				}
				share, err := RefShare(ix)
				if err != nil {
					t.Fatal(err)
				}
				if c.refs && share < 0.5 || !c.refs && share != 0 {
					t.Errorf("%.0f%% of the chunks are read from the file (refs %v)", share*100, c.refs)
				}
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return "got  " + got[i] + "\nwant " + want[i]
		}
	}
	return "(lengths differ)"
}

// A search hit's text is the indexed text, read from the file; a file
// that changed in place, was truncated or deleted after it was indexed
// gives no wrong text: its chunks are left out and the result names it
// with the remedy. Indexing it again brings its text back.
func TestRereadStaleFile(t *testing.T) {
	ctx := context.Background()
	for _, change := range []string{"edited", "truncated", "deleted", "a fifo"} {
		t.Run(change, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			b := sessiongen.NewBuilder(mustCreate(t, path), sessiongen.Config{})
			b.UserText("Where is the zebra deploy checklist kept?")
			b.AssistantText("The zebra deploy checklist is in ops/deploy.md, step four is the canary.")
			b.UserText("And the 斑马部署清单 in Chinese?")
			b.AssistantText("斑马部署清单在 ops/deploy-zh.md 里。")
			if _, err := b.Close(); err != nil {
				t.Fatal(err)
			}
			ix := indexOne(t, path)
			res, err := ix.Search(ctx, "zebra checklist", SearchOptions{})
			if err != nil || len(res.Hits) == 0 || res.Stale != nil {
				t.Fatalf("before the change: %d hits, stale %v, %v", len(res.Hits), res.Stale, err)
			}
			if !strings.Contains(res.Hits[0].Snippet, "step four is the canary") {
				t.Fatalf("hit text %q", res.Hits[0].Snippet)
			}
			data := testkit.ReadFile(t, path)
			switch change {
			case "edited": // same size: only the text's check sees it
				testkit.WriteFile(t, path, bytes.ReplaceAll(data, []byte("step four"), []byte("step FIVE")), 0o600)
			case "truncated":
				testkit.WriteFile(t, path, data[:len(data)/3], 0o600)
			case "deleted":
				os.Remove(path)
			case "a fifo": // opening it to read would wait for a writer
				os.Remove(path)
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Skip(err)
				}
			}
			for _, q := range []string{"zebra checklist", "斑马", "斑"} {
				res, err = ix.Search(ctx, q, SearchOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range res.Hits {
					if strings.Contains(h.Snippet, "FIVE") || strings.Contains(h.Snippet, "canary") || strings.Contains(h.Snippet, "斑马") {
						t.Errorf("%s: a hit of the changed file: %q", q, h.Snippet)
					}
				}
				if note := res.StaleNote(); !strings.Contains(note, path) || !strings.Contains(note, "ctxtool index") {
					t.Errorf("%s: stale note %q, want the file and the remedy", q, note)
				}
			}
			if change == "deleted" || change == "a fifo" {
				if !strings.Contains(res.StaleNote(), "no longer") {
					t.Errorf("note %q", res.StaleNote())
				}
				return
			}
			if _, err := ix.Index(ctx, path); err != nil {
				t.Fatal(err)
			}
			res, err = ix.Search(ctx, "zebra checklist", SearchOptions{})
			if err != nil || res.Stale != nil {
				t.Fatalf("indexed again: stale %v, %v", res.Stale, err)
			}
			if change == "edited" && (len(res.Hits) == 0 || !strings.Contains(res.Hits[0].Snippet, "step FIVE")) {
				t.Errorf("indexed again: hits %v", res.Hits)
			}
		})
	}
}

func mustCreate(t *testing.T, path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Text read again from the session file is redacted as the indexed text
// was: no secret comes back, the markers do.
func TestRereadTextIsRedacted(t *testing.T) {
	samples := secretkit.Samples(33)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	b := sessiongen.NewBuilder(mustCreate(t, path), sessiongen.Config{})
	for _, s := range samples {
		b.UserText("deploy note: " + s.Text)
		b.AssistantText("noted the deploy credential")
	}
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ix := indexOne(t, path)
	if share, err := RefShare(ix); err != nil || share < 0.5 {
		t.Fatalf("%.0f%% of the chunks are refs (%v)", share*100, err)
	}
	texts, err := ChunkTexts(ix)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(texts[path], "\n")
	res, err := ix.Search(context.Background(), "deploy note", SearchOptions{MaxResults: 50})
	if err != nil || len(res.Hits) == 0 {
		t.Fatal(len(res.Hits), err)
	}
	for _, h := range res.Hits {
		all += "\n" + h.Snippet
	}
	for _, s := range samples {
		if strings.Contains(all, s.Value) {
			t.Errorf("the %s is in the text read back", s.Kind)
		}
	}
	if !strings.Contains(all, "[secret:") {
		t.Errorf("no redaction marker in the text read back")
	}
}

// The FTS file is rebuilt from the session files when it is lost; a file
// that changed meanwhile gives its chunks empty rows (no error, no wrong
// text), and the next index run indexes it again.
func TestLostFTSFileRebuiltFromChangedFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	same, changed := filepath.Join(dir, "same.jsonl"), filepath.Join(dir, "changed.jsonl")
	for _, p := range []string{same, changed} {
		b := sessiongen.NewBuilder(mustCreate(t, p), sessiongen.Config{})
		b.UserText("Where is the zebra deploy checklist of " + filepath.Base(p) + "?")
		b.AssistantText("In ops/deploy.md, step four is the canary; 斑马部署清单在 ops 里。")
		if _, err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	loc := filepath.Join(t.TempDir(), "i.sqlite")
	ix, err := OpenFile(loc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{same, changed} {
		if _, err := ix.Index(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ix.Close()
	os.Remove(ftsPath(loc))
	testkit.WriteFile(t, changed, bytes.ReplaceAll(testkit.ReadFile(t, changed), []byte("step four"), []byte("step FIVE")), 0o600)
	if ix, err = OpenFile(loc); err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, q := range []string{"zebra checklist canary", "斑马", "斑"} {
		res, err := ix.Search(ctx, q, SearchOptions{MinScore: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 || res.Hits[0].Path != same {
			t.Errorf("%s after the rebuild: %+v, want the unchanged file's chunk only", q, res.Hits)
		}
	}
	if _, err := ix.Index(ctx, changed); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(ctx, "step FIVE", SearchOptions{})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Path != changed || res.Stale != nil {
		t.Errorf("indexed again: %+v %v", res, err)
	}
}

// A one-character CJK query is the prefix query X* on the pairs table
// (the index holds no text to scan with LIKE): it matches exactly the
// chunks whose text holds X, wherever X stands in its word (first, inside,
// last, alone).
func TestOneCJKCharacterMatchesItsChunks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "cjk.jsonl")
	if _, err := sessiongen.GenerateFile(p, sessiongen.Options{Seed: 5, Turns: 12, CJKShare: 1}); err != nil {
		t.Fatal(err)
	}
	ix := indexOne(t, p)
	if _, err := ix.Index(ctx, "../../testdata/edge-cjk.jsonl"); err != nil {
		t.Fatal(err)
	}
	st := ix.st.(*sqliteStore)
	rows, err := sqlRows(st.db.Query(`SELECT c.id, f.path, c.start_line, c.start_offset, c.text FROM chunks c JOIN files f ON f.id = c.file_id`))
	all, err := allRows(rows, err, func(r *idRef) []any { return []any{&r.id, &r.path, &r.line, &r.off, &r.value} })
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]textRef, len(all))
	for i, r := range all {
		refs[i] = r.textRef
	}
	rr := rereader{redact: true}
	texts, _, err := rr.chunkTexts(refs)
	if err != nil {
		t.Fatal(err)
	}
	// Characters of every position: each CJK word's first, second and
	// last, up to 60 of them.
	chars := map[string]bool{}
	for _, text := range texts {
		eachCJKWord(text, func(w string) {
			r := []rune(w)
			for _, c := range []rune{r[0], r[min(1, len(r)-1)], r[len(r)-1]} {
				if isCJK(c) && len(chars) < 60 {
					chars[string(c)] = true
				}
			}
		})
	}
	if len(chars) < 30 {
		t.Fatalf("only %d CJK characters", len(chars))
	}
	for c := range chars {
		var want []int64
		for i, text := range texts {
			if strings.Contains(text, c) {
				want = append(want, all[i].id)
			}
		}
		got, err := st.match(ctx, []string{c}, noFilter, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s matches chunks %v, its text is in %v", c, got, want)
		}
	}
}

// BenchmarkLoad100 loads the text of 100 random chunks, as a search loads
// its candidates: stored (the session indexed through a zstd copy) and
// read again from the session file.
func BenchmarkLoad100(b *testing.B) {
	dir := b.TempDir()
	pi := filepath.Join(dir, "s.jsonl")
	if _, err := sessiongen.GenerateFile(pi, sessiongen.Options{Seed: 3, TargetBytes: 8 << 20, CJKShare: 0.5}); err != nil {
		b.Fatal(err)
	}
	zst := pi + ".zst"
	zw, _ := zstd.NewWriter(nil)
	testkit.WriteFile(b, zst, zw.EncodeAll(testkit.ReadFile(b, pi), nil), 0o600)
	for _, c := range []struct{ name, path string }{{"stored", zst}, {"reread", pi}} {
		ix, err := OpenFile(filepath.Join(b.TempDir(), "i.sqlite"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.Index(context.Background(), c.path); err != nil {
			b.Fatal(err)
		}
		st := ix.st.(*sqliteStore)
		var n int64
		st.db.QueryRow(`SELECT max(id) FROM chunks`).Scan(&n)
		ids := make([]int64, 100)
		for i := range ids {
			ids[i] = 1 + int64(i)*n/100 + int64(i*7)%(n/100)
		}
		b.Run(c.name, func(b *testing.B) {
			start := cputime.Used()
			for b.Loop() {
				cs, stale, err := st.chunks(context.Background(), ids)
				if err != nil || len(cs) != len(ids) || stale != nil {
					b.Fatal(len(cs), stale, err)
				}
			}
			// The process's CPU: on a shared machine, wall time measures
			// the load.
			b.ReportMetric(float64(cputime.Used()-start)/float64(b.N), "cpu-ns/op")
		})
		ix.Close()
	}
}

// A session indexed as it grows (a small last chunk is chunked again with
// the new lines) reads back every chunk: the refs written by appends cite
// the right lines, and the text read back holds every message.
func TestRereadAfterAppends(t *testing.T) {
	ctx := context.Background()
	full := filepath.Join(t.TempDir(), "full.jsonl")
	if _, err := sessiongen.GenerateFile(full, sessiongen.Options{Seed: 11, Turns: 20, CJKShare: 0.3}); err != nil {
		t.Fatal(err)
	}
	data := testkit.ReadFile(t, full)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	ix, err := OpenFile(filepath.Join(t.TempDir(), "i.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n := 1; n <= len(lines); n += 1 + n/3 {
		testkit.WriteFile(t, path, bytes.Join(lines[:n], nil), 0o600)
		if _, err := ix.Index(ctx, path); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WriteFile(t, path, data, 0o600)
	if _, err := ix.Index(ctx, path); err != nil {
		t.Fatal(err)
	}
	got, err := ChunkTexts(ix)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(got[path], "\n")
	if strings.Contains(all, "(stale)") || len(got[path]) == 0 {
		t.Fatalf("%d chunks, some stale", len(got[path]))
	}
	want, err := ScannedTexts(ix, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range want { // every message's text is in some chunk read back
		for _, l := range strings.Split(c, "\n") {
			if !strings.Contains(all, l) {
				t.Fatalf("not read back: %.80q", l)
			}
		}
	}
	if share, err := RefShare(ix); err != nil || share < 0.5 {
		t.Errorf("%.0f%% refs (%v)", share*100, err)
	}
}
