package codex_test

import (
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// loadLines loads the session made of lines, in a file named name.
func loadLines(t *testing.T, name string, lines []string) *transcript.Session {
	t.Helper()
	s := testkit.Load(t, testkit.WriteTemp(t, name, []byte(strings.Join(lines, "\n")+"\n")))
	t.Cleanup(func() { s.Close() })
	return s
}
