package transcript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Reading a line much longer than a chunk costs work linear in its length:
// the line's buffer doubles instead of being copied and rescanned on every
// read (which made a 100 MB line take 20 s instead of under 1 s).
func TestLongLineReadIsLinear(t *testing.T) {
	const n = 64 << 20
	f := filepath.Join(t.TempDir(), "s.jsonl")
	content := `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}` + "\n" +
		`{"type":"message","id":"00000001","parentId":null,"timestamp":"t","message":{"role":"user","content":"` +
		strings.Repeat("y", n) + `","timestamp":1}}` + "\n"
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	readerCopied.Store(0)
	readerScanned.Store(0)
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Entries[0].Chars != n {
		t.Fatalf("chars %d, want %d", s.Entries[0].Chars, n)
	}
	size := int64(len(content))
	copied, scanned := readerCopied.Load(), readerScanned.Load()
	t.Logf("file %d MB: copied %d MB, scanned %d MB", size>>20, copied>>20, scanned>>20)
	if scanned > size {
		t.Fatalf("scanned %d bytes for newlines in a %d-byte file", scanned, size)
	}
	if copied > 3*size {
		t.Fatalf("copied %d bytes to read a %d-byte file: not linear", copied, size)
	}
}
