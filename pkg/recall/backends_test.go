package recall_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/pgtest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// kit is one backend the recall tests run against.
type kit struct {
	name string
	// location returns a new, empty index location.
	location func(t testing.TB) string
}

var kits = []kit{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "recall", "index.sqlite") }},
	{"postgres", pgtest.DB},
}

// eachBackend runs fn once per backend, as subtests.
func eachBackend(t *testing.T, fn func(t *testing.T, k kit)) {
	for _, k := range kits {
		t.Run(k.name, func(t *testing.T) { fn(t, k) })
	}
}

// open opens a new, empty index of this backend.
func (k kit) open(t testing.TB, opts ...recall.Option) *recall.Index {
	t.Helper()
	return openAt(t, k.location(t), opts...)
}

func openAt(t testing.TB, loc string, opts ...recall.Option) *recall.Index {
	t.Helper()
	ix, err := recall.OpenURL(loc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}
