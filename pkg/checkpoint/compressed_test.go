package checkpoint

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// writeZstd writes the lines as one zstd-compressed session file.
func writeZstd(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, path, enc.EncodeAll(bytes.Join(lines, nil), nil), 0o600)
}

// A compressed session is captured and checkpointed like a plain one: the
// capture mark's offsets are in the session's decompressed bytes (they
// were read from the compressed file, and every checkpoint of a
// *.jsonl.zst failed with "unexpected EOF"), a capture after the file grew
// reads only the new lines, and the state equals a plain file's.
func TestCaptureCompressedSession(t *testing.T) {
	dir := t.TempDir()
	src, lines := genFile(t, dir, "src.jsonl", sessiongen.Options{Seed: 11, Turns: 12, ToolErrors: 1})
	n := len(lines) - 1 // the last element is the empty rest after the final newline
	file := filepath.Join(dir, "s.jsonl.zst")
	st := &Store{StateDir: filepath.Join(dir, "state")}

	writeZstd(t, file, lines[:n/2])
	capture(t, st, file, "k")
	res, err := Take(TakeOptions{File: file, SessionKey: "k", Store: st, Force: true, Now: func() time.Time { return goldenNow }})
	if err != nil || !res.Written {
		t.Fatalf("checkpoint of %s: %v %+v", file, err, res)
	}
	writeZstd(t, file, lines[:n])
	r := capture(t, st, file, "k2")
	if !r.Restarted {
		t.Fatalf("first capture under a new key: %+v", r)
	}
	writeZstd(t, file, lines[:n/2])
	capture(t, st, file, "k3")
	writeZstd(t, file, lines[:n])
	r = capture(t, st, file, "k3")
	if r.Restarted || len(r.Warnings) > 0 || r.FromLine != n/2+1 || r.NewLines != n-n/2 {
		t.Fatalf("capture after the compressed file grew: %+v, want lines %d-%d read without a restart", r, n/2+1, n)
	}
	plain := &Store{StateDir: filepath.Join(dir, "plain")}
	capture(t, plain, src, "k3")
	if got, want := readState(t, st, "k3"), readState(t, plain, "k3"); !reflect.DeepEqual(got, want) {
		t.Errorf("state of the compressed session differs from the plain one's:\n%+v\n%+v", got, want)
	}
}
