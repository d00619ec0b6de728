package rolling

import (
	"slices"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

// An empty path names no file: pi's extractFileOpsFromMessage skips it, and
// compact did, but roll's own copy of the rule listed "" as a file.
func TestFileOpsSkipEmptyPaths(t *testing.T) {
	session := `{"type":"session","version":3,"id":"s1","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":"go","timestamp":1772442001000}}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-03-02T09:00:02.000Z","message":{"role":"assistant","content":[` +
		`{"type":"toolCall","id":"c1","name":"read","arguments":{"path":""}},` +
		`{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"a.go"}},` +
		`{"type":"toolCall","id":"c3","name":"edit","arguments":{"path":""}},` +
		`{"type":"toolCall","id":"c4","name":"write","arguments":{"path":"b.go"}}],"stopReason":"toolUse","timestamp":1772442002000}}
`
	s := testkit.Load(t, testkit.WriteTemp(t, "s.jsonl", []byte(session)))
	defer s.Close()
	var evicted []Message
	for _, cm := range s.Context().Messages {
		evicted = append(evicted, Message{Entry: cm.Entry, Role: cm.Role})
	}
	read, modified, err := fileOps(s, evicted, &Details{ReadFiles: []string{"old.md"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read, []string{"a.go", "old.md"}) || !slices.Equal(modified, []string{"b.go"}) {
		t.Fatalf("read %q, modified %q; want [a.go old.md], [b.go]", read, modified)
	}
}
