package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

func jsonLines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		out = append(out, v)
	}
	return out
}

// pinJSONNames checks that the first line of out names each field: the
// names are the output's contract for scripts, and decoding through the
// type that writes them (recall.Hit, recall.Stats) would follow a rename.
func pinJSONNames(t *testing.T, out string, names ...string) {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	for _, n := range names {
		if !strings.Contains(first, `"`+n+`":`) {
			t.Errorf("no %q in %s", n, first)
		}
	}
}

func TestIndexAndSearchCommands(t *testing.T) {
	dir := t.TempDir()
	state := t.TempDir()
	facts := recalltest.Write(t, filepath.Join(dir, "a.jsonl"), recalltest.Options{Seed: 1, Turns: 60,
		Facts: recalltest.DefaultFacts(1), Compactions: 1})
	recalltest.Write(t, filepath.Join(dir, "b.jsonl.reset.2026-03-08T13-03-27.008Z"), recalltest.Options{Seed: 2, Turns: 20})
	// Never indexed: a lock, a backup, a checkpoint copy.
	for _, n := range []string{"a.jsonl.lock", "a.jsonl.bak.2026-03-08T13-03-27.008Z", "a.checkpoint.0b6f3c1e-5a47-4d0e-9c1a-2f8e7d6c5b4a.jsonl"} {
		os.WriteFile(filepath.Join(dir, n), []byte(`{"type":"message","message":{"role":"user","content":"hidden-backup-text"}}`+"\n"), 0o644)
	}

	io, _, out, _ := iostreams.Test()
	if err := runIndex(context.Background(), &IndexOptions{IO: io, Paths: []string{dir}, JSON: true, Recall: recallSettings{StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	got := jsonLines[recall.Stats](t, out.String())
	pinJSONNames(t, out.String(), "file", "indexed", "linesIndexed", "chunks", "bytes", "seconds")
	if len(got) != 2 {
		t.Fatalf("indexed %d files, want 2 (transcript + reset archive): %s", len(got), out)
	}
	for _, l := range got {
		if !l.Indexed || l.LinesIndexed == 0 || l.Chunks == 0 || l.Bytes == 0 {
			t.Errorf("first run: %+v", l)
		}
	}

	// Second run: nothing to do; human table.
	io, _, out, _ = iostreams.Test()
	if err := runIndex(context.Background(), &IndexOptions{IO: io, Paths: []string{dir}, Recall: recallSettings{StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0 indexed, 2 unchanged") || strings.Count(out.String(), "unchanged") < 3 {
		t.Errorf("second run table:\n%s", out)
	}

	// Search, JSON: one hit per line with the contract's fields.
	f := facts[0]
	io, _, out, _ = iostreams.Test()
	if err := runSearch(context.Background(), &SearchOptions{IO: io, Query: f.Query, MaxResults: 6, MinScore: 0.35, JSON: true, Recall: recallSettings{StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	hits := jsonLines[recall.Hit](t, out.String())
	pinJSONNames(t, out.String(), "path", "startLine", "endLine", "score", "snippet", "citation", "entryIds", "timestamp")
	if len(hits) == 0 || hits[0].StartLine > f.Line || hits[0].EndLine < f.Line || hits[0].Score < 0.35 ||
		hits[0].Citation == "" || hits[0].Snippet == "" || len(hits[0].EntryIDs) == 0 || hits[0].Timestamp == "" ||
		filepath.Base(hits[0].Path) != "a.jsonl" {
		t.Fatalf("search %q (fact line %d): %+v", f.Query, f.Line, hits)
	}
	// Human output names the citation.
	io, _, out, _ = iostreams.Test()
	if err := runSearch(context.Background(), &SearchOptions{IO: io, Query: f.Query, MaxResults: 2, MinScore: 0.35, Recall: recallSettings{StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "1. "+hits[0].Citation) {
		t.Errorf("human output:\n%s", out)
	}
	// Backups are not searchable.
	io, _, out, _ = iostreams.Test()
	runSearch(context.Background(), &SearchOptions{IO: io, Query: "hidden-backup-text", MaxResults: 6, JSON: true, Recall: recallSettings{StateDir: state}})
	if out.Len() != 0 {
		t.Errorf("backup/lock/checkpoint text indexed: %s", out)
	}

	// A removed file drops out on the next run over its directory.
	os.Remove(filepath.Join(dir, "a.jsonl"))
	io, _, out, _ = iostreams.Test()
	if err := runIndex(context.Background(), &IndexOptions{IO: io, Paths: []string{dir}, JSON: true, Recall: recallSettings{StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"skipped":"removed"`) {
		t.Errorf("removal not reported: %s", out)
	}
	io, _, out, _ = iostreams.Test()
	runSearch(context.Background(), &SearchOptions{IO: io, Query: f.Query, MaxResults: 6, MinScore: 0.35, JSON: true, Recall: recallSettings{StateDir: state}})
	for _, h := range jsonLines[recall.Hit](t, out.String()) {
		if filepath.Base(h.Path) == "a.jsonl" {
			t.Errorf("removed file still found: %s", h.Citation)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no session store to index on the way
	io, _, _, _ := iostreams.Test()
	err := runSearch(context.Background(), &SearchOptions{IO: io, Query: "x", MaxResults: 6, Recall: recallSettings{StateDir: t.TempDir()}})
	if exitcode.Code(err) != exitcode.Runtime || !strings.Contains(err.Error(), "ctxtool index") {
		t.Errorf("no index: %v", err)
	}
	err = runSearch(context.Background(), &SearchOptions{IO: io, Query: "x", MaxResults: 0, Recall: recallSettings{StateDir: t.TempDir()}})
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("--max-results 0: %v", err)
	}
	err = runSearch(context.Background(), &SearchOptions{IO: io, Query: "x", MaxResults: 3, MinScore: 2, Recall: recallSettings{StateDir: t.TempDir()}})
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("--min-score 2: %v", err)
	}
	err = runIndex(context.Background(), &IndexOptions{IO: io, Paths: []string{filepath.Join(t.TempDir(), "missing.jsonl")}, Recall: recallSettings{StateDir: t.TempDir()}})
	if err == nil {
		t.Error("missing path accepted")
	}
}

// The command line wires flags and config: --state-dir, --json, --max-results.
func TestIndexSearchCLI(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	facts := recalltest.Write(t, filepath.Join(dir, "s.jsonl"), recalltest.Options{Seed: 5, Turns: 40, Facts: recalltest.DefaultFacts(5)})
	run := func(args ...string) string {
		io, _, out, errOut := iostreams.Test()
		root, _ := NewRootCmd(io)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		return out.String()
	}
	run("--state-dir", state, "index", dir)
	var cjk = facts[0]
	for _, f := range facts {
		if f.Name == "cjk" {
			cjk = f
		}
	}
	hits := jsonLines[recall.Hit](t, run("--state-dir", state, "--json", "search", "--max-results", "1", cjk.Query))
	if len(hits) != 1 || hits[0].StartLine > cjk.Line || hits[0].EndLine < cjk.Line {
		t.Fatalf("CJK query %q (line %d): %+v", cjk.Query, cjk.Line, hits)
	}
}

// A search that finds nothing in an index holding no session (never filled,
// or emptied when an earlier build's index was opened) says so and how to
// fill it; one that finds nothing among indexed sessions does not.
func TestSearchSaysWhenTheIndexIsEmpty(t *testing.T) {
	state := t.TempDir()
	ix, err := recall.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	_, stderr := runOK(t, "--state-dir", state, "search", "retry config")
	if !strings.Contains(stderr, "holds no sessions") || !strings.Contains(stderr, "ctxtool index") {
		t.Errorf("empty index: stderr %q", stderr)
	}
	runOK(t, "--state-dir", state, "index", filepath.Join("..", "testdata", "sample-v3.jsonl"))
	_, stderr = runOK(t, "--state-dir", state, "search", "qqzzxxnosuchword")
	if strings.Contains(stderr, "holds no sessions") {
		t.Errorf("filled index: stderr %q", stderr)
	}
}
