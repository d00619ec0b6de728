package sessiongen

import (
	"io"
	"testing"
)

// Write generates a session at path (created or truncated) for a test and
// returns what was written; a generator that fails fails the test, naming
// the file, so no test goes on with a session it does not have.
func Write(t testing.TB, path string, o Options) *Result {
	t.Helper()
	return ToTestFile(t, path, func(w io.Writer) (*Result, error) { return Generate(w, o) })
}

// ToTestFile is ToFile for a test: a generator that fails fails the test,
// naming the file. The other kits' Write helpers go through it.
func ToTestFile[R any](t testing.TB, path string, generate func(w io.Writer) (R, error)) R {
	t.Helper()
	res, err := ToFile(path, generate)
	if err != nil {
		t.Fatalf("generating session %s: %v", path, err)
	}
	return res
}
