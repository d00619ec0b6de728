package cmd

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
)

// TestCheckInputStoreSession: "store.sqlite#<key>" names a session of an
// existing OpenClaw store, not a missing file (estimate, checkpoint and
// compact --dry-run read store sessions); a missing store is exit 2.
func TestCheckInputStoreSession(t *testing.T) {
	db := filepath.Join(t.TempDir(), "openclaw-agent.sqlite")
	testkit.WriteFile(t, db, []byte("SQLite format 3\x00"), 0o644)
	if err := checkInput(db + "#agent:main:main"); err != nil {
		t.Errorf("store session: %v", err)
	}
	err := checkInput(db + ".gone#agent:main:main")
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != exitcode.Usage {
		t.Errorf("missing store: %v, want a usage error", err)
	}
}
