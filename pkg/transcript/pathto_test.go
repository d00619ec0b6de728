package transcript

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PathTo walks without a seen-set unless the chain is longer than the
// session (a cycle): both ways must give the same path.
func TestPathToCycleAndChain(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}` + "\n"
	msg := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n"
	}
	for name, c := range map[string]struct {
		body string
		want string
	}{
		"chain": {msg("a", "") + msg("b", "a") + msg("c", "b"), "a b c"},
		// c's parent is d, d's parent is c: the walk from d ends when it
		// comes back to d.
		"cycle": {msg("a", "") + msg("c", "d") + msg("d", "c"), "c d"},
	} {
		s, err := LoadBytes(name+".jsonl", []byte(head+c.body))
		if err != nil {
			t.Fatal(err)
		}
		leaf := s.Entries[len(s.Entries)-1]
		var got, slow []string
		for _, e := range s.PathTo(leaf) {
			got = append(got, e.ID())
		}
		for _, e := range s.pathToCyclic(leaf) {
			slow = append(slow, e.ID())
		}
		if strings.Join(got, " ") != c.want || strings.Join(slow, " ") != c.want {
			t.Errorf("%s: PathTo %v, with a seen-set %v, want %s", name, got, slow, c.want)
		}
	}
}

// PathTo's walk by file order must give exactly the map walk's path from
// every entry: on a chain, on branches (a parent far back), on duplicate
// ids (the later entry is the parent, so file order may not be used) and
// on the bundled sessions. Parent, one step of such a walk, gives the
// entry ByID gives, also between entries without ids.
func TestPathToFileOrderMatchesMapWalk(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}` + "\n"
	msg := func(id, parent string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n"
	}
	root := `{"type":"message","id":"a","parentId":null,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n"
	noID := `{"type":"message","parentId":null,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n"
	sessions := map[string][]byte{
		"branches":  []byte(head + root + msg("b", "a") + msg("c", "b") + msg("d", "a") + msg("e", "d") + msg("f", "c")),
		"duplicate": []byte(head + root + msg("b", "a") + msg("c", "b") + msg("b", "a") + msg("d", "c") + msg("e", "b")),
		"no ids":    []byte(head + noID + noID + msg("b", "") + noID),
	}
	for _, f := range []string{"sample-v1.jsonl", "sample-v3.jsonl", "edge-glued.jsonl", "edge-truncated.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		sessions[f] = data
	}
	for name, data := range sessions {
		s, err := LoadBytes(name, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.Entries {
			var got, want []string // ids and lines: a duplicated id's entries differ by line
			for _, p := range s.PathTo(e) {
				got = append(got, fmt.Sprintf("%s@%d", p.ID(), p.Line))
			}
			for _, p := range s.pathToCyclic(e) {
				want = append(want, fmt.Sprintf("%s@%d", p.ID(), p.Line))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s: PathTo(%s) = %v, the map walk gives %v", name, e.ID(), got, want)
			}
		}
		// Parent, a step of a walk, is the entry ByID gives.
		for i, e := range s.Entries {
			if p, pos := s.Parent(e, i); p != s.ByID(e.ParentID()) || pos != s.position(p) {
				t.Errorf("%s: Parent(%s@%d) = %v at %d, ByID gives %v", name, e.ID(), e.Line, p, pos, s.ByID(e.ParentID()))
			}
		}
	}
}

// KeptStarts finds each compaction's first kept entry as BuildContext does
// for the compaction in force.
func TestKeptStartsMatchesBuildContext(t *testing.T) {
	for _, f := range []string{"sample-v1.jsonl", "sample-v3.jsonl"} {
		s, err := Load(filepath.Join("..", "..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		path := s.Branch()
		kept := KeptStarts(path)
		n := 0
		for i, e := range path {
			if e.Type() != "compaction" {
				continue
			}
			n++
			if got, want := kept[i], BuildContext(path[:i+1]).KeptStart; got != want {
				t.Errorf("%s: compaction at path index %d: KeptStarts %d, BuildContext %d", f, i, got, want)
			}
		}
		if n == 0 || len(kept) != n {
			t.Errorf("%s: %d compactions on the path, KeptStarts has %d", f, n, len(kept))
		}
	}
}

// KeptStarts' one walk from the leaf finds what two walks from the root
// found, on entries whose ids repeat, whose compactions name ids that come
// later, never, or are compactions themselves, in both id forms (8 hex
// digits, packed; anything else, kept as text).
func TestKeptStartsMatchesTwoWalks(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}` + "\n"
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		id := func() string {
			if rng.Intn(4) == 0 {
				return fmt.Sprintf("id-%d", rng.Intn(30))
			}
			return fmt.Sprintf("%08x", rng.Intn(60)<<(rng.Intn(3)*12))
		}
		var b strings.Builder
		b.WriteString(head)
		for i := 0; i < 300; i++ {
			if rng.Intn(6) == 0 {
				kept := id()
				if rng.Intn(8) == 0 {
					kept = ""
				}
				fmt.Fprintf(&b, `{"type":"compaction","id":%q,"parentId":null,"timestamp":"2026-03-02T09:00:01.000Z","summary":"s","firstKeptEntryId":%q,"tokensBefore":5}`+"\n", id(), kept)
				continue
			}
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":null,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"hi"}}`+"\n", id())
		}
		file := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		got, want := KeptStarts(s.Entries), keptStartsTwoWalks(s.Entries)
		if !maps.Equal(got, want) {
			t.Fatalf("seed %d: KeptStarts %v, two walks %v", seed, got, want)
		}
		s.Close()
	}
}

// keptStartsTwoWalks is KeptStarts' walk as it was: the compactions' named
// ids from one walk from the root, their first path index from a second
// (the mapping to each compaction is keptByCompaction, shared).
func keptStartsTwoWalks(path []*Entry) map[int]int {
	first := map[packedID]int{}
	var compactions []int
	for i, e := range path {
		if e.Type() == "compaction" {
			compactions = append(compactions, i)
			if id := e.FirstKeptEntryID(); id != "" {
				first[packed(id)] = -1
			}
		}
	}
	for i, e := range path {
		if k, ok := first[e.key()]; ok && k < 0 {
			first[e.key()] = i
		}
	}
	return keptByCompaction(path, compactions, first)
}

// TreeProblems names every duplicated id with all its lines and every
// parent cycle once, with the lines on it (not the chain leading into it).
func TestTreeProblemsCyclesAndDuplicates(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}` + "\n"
	msg := func(id, parent string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n"
	}
	body := msg("a", "b") + msg("b", "a") + // line 2-3: a two-entry cycle
		msg("c", "a") + msg("d", "c") + // 4-5: a chain into it
		msg("e", "e") + // 6: its own parent
		msg("f", "x") + msg("g", "f") + msg("f", "g") + // 7-9: f duplicated; g→f(9)→g: a cycle
		msg("h", "f") // 10
	s, err := LoadBytes("problems.jsonl", []byte(head+body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.TreeProblems() {
		got = append(got, fmt.Sprintf("%s %s %v", p.Kind, p.ID, p.Lines))
	}
	want := []string{"duplicate id f [7 9]", "parent cycle a [2 3]", "parent cycle e [6]", "parent cycle g [8 9]"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("TreeProblems:\n got %q\nwant %q", got, want)
	}
}
