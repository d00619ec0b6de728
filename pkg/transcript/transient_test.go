package transcript_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

// The id, parentId and timestamp of a line, and its content blocks' types
// and ids, are read as views of the parse worker's buffer, which the next
// batch of lines overwrites: what an entry keeps of them (a text id, a
// parentId not the line before's, a timestamp pi did not write, a tool
// call's id) must be its own copy. A file of several buffers' worth of
// such lines, read back after the whole file was parsed, finds every
// value as written.
func TestKeptStringsOutliveTheReadBuffer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"sess-text-id","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}` + "\n")
	pad := strings.Repeat("x", 300)
	const n = 60000 // ~27 MB: more 1 MiB read buffers than the parse keeps in flight, so they are reused
	for i := range n {
		parent := fmt.Sprintf("entry-%d-of-text", i-1)
		if i%3 == 2 {
			parent = fmt.Sprintf("entry-%d-of-text", i-2) // not the line before
		}
		if i == 0 {
			parent = ""
		}
		fmt.Fprintf(&b, `{"type":"message","id":"entry-%d-of-text","parentId":%q,"timestamp":"day %d, noon","message":{"role":"assistant","content":[{"type":"text","text":"%s"},{"type":"toolCall","id":"%s","name":"read","arguments":{"path":"f%d"}}],"stopReason":"toolUse"}}`+"\n",
			i, parent, i, pad, callID(i, `\u00e9`), i)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := testkit.Load(t, file)
	defer s.Close()
	if len(s.Entries) != n {
		t.Fatalf("%d entries, want %d", len(s.Entries), n)
	}
	for i, e := range s.Entries {
		parent := fmt.Sprintf("entry-%d-of-text", i-1)
		if i%3 == 2 {
			parent = fmt.Sprintf("entry-%d-of-text", i-2)
		}
		if i == 0 {
			parent = ""
		}
		got := []string{e.ID(), e.ParentID(), e.Timestamp(), strings.Join(e.ToolCallIDs, ",")}
		want := []string{fmt.Sprintf("entry-%d-of-text", i), parent, fmt.Sprintf("day %d, noon", i), callID(i, "é")}
		for k := range got {
			if got[k] != want[k] {
				t.Fatalf("entry %d: %q, want %q", i, got, want)
			}
		}
	}
	if s.Header.ID != "sess-text-id" {
		t.Fatalf("header id %q", s.Header.ID)
	}
}

// callID is the i-th tool call id, every fifth with an escape (read
// decoded, not as a view).
func callID(i int, e string) string {
	if i%5 == 0 {
		return fmt.Sprintf("call-%d-%s", i, e)
	}
	return fmt.Sprintf("call-%d", i)
}
