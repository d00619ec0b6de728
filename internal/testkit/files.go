// Package testkit holds the small helpers the tests of several packages
// share (generators and fakes have their own packages below it).
package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// CopyToTemp copies the file src into a new t.TempDir() under its own name
// and returns the copy's path: tests that write to a fixture write to that.
func CopyToTemp(t testing.TB, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}
