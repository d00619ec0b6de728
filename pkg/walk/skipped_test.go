package walk

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory walk counts what it passed over, by reason: nothing is
// skipped in silence (issue 35).
func TestWalkCountsSkipped(t *testing.T) {
	dir := t.TempDir()
	sess := filepath.Join(dir, "sessions")
	for _, p := range []string{
		"sessions/a.jsonl", "sessions/a.jsonl.lock", "sessions/a.jsonl.bak.2026-01-01T00-00-00Z",
		"sessions/README.md", "sessions/.hidden/b.jsonl",
	} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sess, "a.jsonl"), filepath.Join(sess, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	sk := &Skipped{}
	files, err := Walk([]string{sess}, Options{Skipped: sk})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("files %v, want a.jsonl only", files)
	}
	want := "1 backup, 1 hidden directory, 1 lock file, 1 non-regular file (symlink, FIFO, device), 1 not a transcript"
	if got := sk.String(); got != want || sk.Total() != 5 {
		t.Errorf("skipped %q (%d), want %q", got, sk.Total(), want)
	}
}
