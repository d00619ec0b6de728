package transcript_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

// A single tool result can be tens of MB on one line: no line-length limit,
// exact size, and the lines around it are still found.
func TestHugeLine(t *testing.T) {
	const n = 30 << 20
	body := strings.Repeat("0123456789abcdé", n/16)
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}` + "\n")
	b.WriteString(`{"type":"message","id":"00000001","parentId":null,"timestamp":"t","message":{"role":"user","content":"go","timestamp":1}}` + "\n")
	b.WriteString(`{"type":"message","id":"00000002","parentId":"00000001","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"` + body + `"}],"isError":false,"timestamp":2}}` + "\n")
	b.WriteString(`{"type":"message","id":"00000003","parentId":"00000002","timestamp":"t","message":{"role":"user","content":"done","timestamp":3}}` + "\n")
	f := filepath.Join(t.TempDir(), "big.jsonl")
	testkit.WriteFile(t, f, []byte(b.String()), 0o644)
	s := testkit.Load(t, f)
	defer s.Close()
	if len(s.Entries) != 3 || len(s.Malformed) != 0 {
		t.Fatalf("%d entries, malformed %v", len(s.Entries), s.Malformed)
	}
	big := s.Entries[1]
	if big.Line != 3 || big.Chars != len([]rune(body)) || s.Entries[2].Line != 4 {
		t.Fatalf("line %d chars %d (want %d), next line %d", big.Line, big.Chars, len([]rune(body)), s.Entries[2].Line)
	}
	m, err := s.Message(big)
	if err != nil || len(m.Content) != 1 || m.Content[0].Text != body {
		t.Fatalf("decode of the huge line failed: %v", err)
	}
}
