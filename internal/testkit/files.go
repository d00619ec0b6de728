// Package testkit holds the small helpers the tests of several packages
// share (generators and fakes have their own packages below it).
package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// CopyToTemp copies the file src into a new t.TempDir() under its own name
// and returns the copy's path: tests that write to a fixture write to that.
func CopyToTemp(t testing.TB, src string) string {
	t.Helper()
	return WriteTemp(t, filepath.Base(src), ReadFile(t, src))
}

// WriteTemp writes data to a file named name in a new t.TempDir() and
// returns its path: a session a test spells out line by line.
func WriteTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	WriteFile(t, dst, data, 0o644)
	return dst
}

// WriteFile writes data to path as os.WriteFile does; a file that cannot be
// written fails the test, naming the file and the cause.
func WriteFile(t testing.TB, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
}

// Stdin makes the file src the process's standard input until the test
// ends: what a command reading FILE "-" is fed.
func Stdin(t testing.TB, src string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = in
	t.Cleanup(func() {
		os.Stdin = stdin
		in.Close()
	})
}

// ReadFile returns the contents of path; a file that cannot be read fails
// the test, naming the file and the cause.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return b
}

// Load loads the pi session at path; a session that cannot be loaded fails
// the test, naming the file and the cause.
func Load(t testing.TB, path string) *transcript.Session {
	t.Helper()
	s, err := transcript.Load(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return s
}
