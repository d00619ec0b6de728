package estimate

import (
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// ActiveTokens equals BuildContext of every path prefix.
func TestActiveTokensEqualsBuildContext(t *testing.T) {
	for _, f := range realFiles(t) {
		s := testkit.Load(t, f)
		path := s.Branch()
		got := ActiveTokens(path)
		for i := range path {
			if want := transcript.BuildContext(path[:i+1]).HeuristicTokens(); got[i] != want {
				t.Fatalf("%s: index %d (line %d): %d, BuildContext %d", filepath.Base(f), i, path[i].Line, got[i], want)
			}
		}
		s.Close()
	}
}

// realFiles are the vendored sessions in testdata and the wild fixtures.
func realFiles(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join(oracle.ModuleRoot(), "testdata", "*.jsonl"))
	return append(files, oracle.Fixtures(t)...)
}
