package openclawsqlite

import (
	"os"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/testtmp"
)

// TestMain gives the tests a TMPDIR of their own, reaped by the next run if
// this one is killed (by its -timeout, say) before it removes its
// t.TempDir() directories.
func TestMain(m *testing.M) { os.Exit(testtmp.Run(m.Run)) }
