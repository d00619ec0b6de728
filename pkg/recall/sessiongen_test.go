package recall_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// contextLines are the physical lines of the entries in pi's rebuilt
// context of a session.
func contextLines(t *testing.T, path string) map[int]bool {
	t.Helper()
	s := testkit.Load(t, path)
	defer s.Close()
	lines := map[int]bool{}
	for _, m := range s.Context().Messages {
		if m.Entry != nil {
			lines[m.Entry.Line] = true
		}
	}
	return lines
}

// Facts planted by the shared session generator (paths, uuids, hashes,
// ports, urls, CJK, decisions) early in sessions that are then compacted
// (out of the active context), with branches, CJK turns, glued lines and a
// torn tail, are found in the top 3 with the right file and line.
func TestSessiongenFactsTop3(t *testing.T) { eachBackend(t, testSessiongenFactsTop3) }

func testSessiongenFactsTop3(t *testing.T, k kit) {
	dir := t.TempDir()
	type fact struct {
		file string
		sessiongen.PlantedFact
	}
	var facts []fact
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		res := sessiongen.Write(t, p, sessiongen.Options{
			Seed: uint64(40 + i), Version: []int{3, 3, 2, 1}[i], Turns: 80, Facts: 12, FactsWithin: 0.3,
			Compactions: 2, CompactionsWithin: 0.9, Branches: 2 * (i % 2), CJKShare: 0.2, Thinking: true,
			BashExecutions: 3, CustomMessages: 2, GluedLines: 1, TruncatedTail: i == 0,
		})
		if len(res.Facts) == 0 {
			t.Fatalf("%s: no facts planted", p)
		}
		inContext := contextLines(t, p)
		for _, f := range res.Facts {
			if inContext[f.Line] {
				t.Errorf("%s: fact on line %d is still in the active context; the test wants it evicted", p, f.Line)
			}
			facts = append(facts, fact{p, f})
		}
	}
	ix := k.open(t)
	for _, p := range sessionFiles(t, dir) {
		if _, err := ix.Index(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	found := 0
	for _, f := range facts {
		res, err := ix.Search(context.Background(), f.Value, recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
		if err != nil {
			t.Fatal(err)
		}
		r := rankOf(res.Hits, planted{file: f.file, Fact: factAt(f.Line)})
		if r >= 1 && r <= 3 {
			found++
			continue
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, fmt.Sprintf("%s %.3f", filepath.Base(h.Citation), h.Score))
		}
		t.Errorf("%s fact %q (%s, line %d, role %s): rank %d; hits %v", f.Kind, f.Value, filepath.Base(f.file), f.Line, f.Role, r, got)
	}
	kinds := map[string]int{}
	for _, f := range facts {
		kinds[f.Kind]++
	}
	t.Logf("%d/%d planted facts (out of the context) in the top 3; kinds %v", found, len(facts), kinds)
}
