package transcript

import (
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
			got = append(got, e.ID)
		}
		for _, e := range s.pathToCyclic(leaf) {
			slow = append(slow, e.ID)
		}
		if strings.Join(got, " ") != c.want || strings.Join(slow, " ") != c.want {
			t.Errorf("%s: PathTo %v, with a seen-set %v, want %s", name, got, slow, c.want)
		}
	}
}
