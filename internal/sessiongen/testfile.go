package sessiongen

import "testing"

// Write generates a session at path (created or truncated) for a test and
// returns what was written; a generator that fails fails the test, naming
// the file, so no test goes on with a session it does not have.
func Write(t testing.TB, path string, o Options) *Result {
	t.Helper()
	res, err := GenerateFile(path, o)
	if err != nil {
		t.Fatalf("generating session %s: %v", path, err)
	}
	return res
}
