package recall_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// On the real transcripts of ../shared/fixtures/wild: the words that only
// occur past the old 4,000-character cut of a tool result, argument or
// output (the words a capped index lacks) are found now, each in its own
// file. (Of 15 real Claude Code and Codex files, 3 had such a word, and
// search missed all 3.)
func TestWildTailWordsAreFound(t *testing.T) {
	wild := oracle.WildDir(t)
	files, _ := filepath.Glob(filepath.Join(wild, "*", "*.jsonl"))
	if len(files) < 10 {
		t.Fatalf("only %d wild files", len(files))
	}
	dir := t.TempDir()
	capped := openAt(t, filepath.Join(dir, "capped", "index.sqlite"), recall.WithMaxChars(4000))
	whole := openAt(t, filepath.Join(dir, "whole", "index.sqlite"))
	indexAll(t, capped, files...)
	indexAll(t, whole, files...)
	before, err := recall.ChunkTexts(capped)
	if err != nil {
		t.Fatal(err)
	}
	after, err := recall.ChunkTexts(whole)
	if err != nil {
		t.Fatal(err)
	}
	// Whole words as the index cuts them ("assembly的" is one word), of
	// eight letters or more.
	token, plain := regexp.MustCompile(`[\p{L}\p{N}_]+`), regexp.MustCompile(`^[a-z]{8,}$`)
	words := func(s string) []string {
		var out []string
		for _, w := range token.FindAllString(strings.ToLower(s), -1) {
			if plain.MatchString(w) {
				out = append(out, w)
			}
		}
		return out
	}
	with := 0
	for _, p := range files {
		seen := map[string]bool{}
		for _, c := range before[p] {
			for _, w := range words(c) {
				seen[w] = true
			}
		}
		var tail []string
		for _, c := range after[p] {
			for _, w := range words(c) {
				if !seen[w] && len(tail) < 3 {
					seen[w] = true
					tail = append(tail, w)
				}
			}
		}
		if len(tail) > 0 {
			with++
		}
		for _, w := range tail {
			if hits := searchHits(t, whole, w, recall.SearchOptions{Scope: recall.Scope{Session: p}}); len(hits) == 0 {
				t.Errorf("%s: %q (only past the 4,000-character cut) not found", filepath.Base(p), w)
			}
			if hits := searchHits(t, capped, w, recall.SearchOptions{Scope: recall.Scope{Session: p}}); len(hits) != 0 {
				t.Errorf("%s: %q found in the capped index: the test picks the wrong words", filepath.Base(p), w)
			}
		}
	}
	t.Logf("%d of %d real files have words only past the 4,000-character cut", with, len(files))
	if with == 0 {
		t.Error("no file has a word past the cut: the test checks nothing")
	}
}

// On the real transcripts: the text search reads back (from the session
// file for pi and OpenClaw sessions, stored for the others) is exactly the
// text indexed, chunk for chunk, and most pi chunks are read back.
func TestWildTextReadBackIsIndexed(t *testing.T) {
	wild := oracle.WildDir(t)
	files, _ := filepath.Glob(filepath.Join(wild, "*", "*.jsonl"))
	ix := openAt(t, filepath.Join(t.TempDir(), "index.sqlite"))
	indexAll(t, ix, files...)
	got, err := recall.ChunkTexts(ix)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		want, err := recall.ScannedTexts(ix, p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[p], want) {
			t.Errorf("%s: read back %d chunks, indexed %d, not the same texts", p, len(got[p]), len(want))
		}
	}
	if share, err := recall.RefShare(ix); err != nil || share < 0.2 {
		t.Errorf("%.0f%% of the chunks are read from their file (%v)", share*100, err)
	}
}
