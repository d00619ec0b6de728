//go:build unix

package cmd

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/recall"
)

// The state directory and what is written in it are the user's alone:
// directories 0700, the index (and its WAL and shared-memory files) and
// checkpoints 0600, whatever the umask lets through.
func TestStateIsPrivate(t *testing.T) {
	cleanEnv(t)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	s := secretSessions(t, "nothing secret here")[0]
	state := filepath.Join(t.TempDir(), "state")
	runOK(t, "index", "--state-dir", state, s.path)
	runOK(t, "checkpoint", s.path, "--state-dir", state)
	// A second process keeps the WAL and shared-memory files open while
	// their modes are read.
	ix, err := recall.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Search(context.Background(), "loader", recall.SearchOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		st, _ := d.Info()
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
		n++
		return nil
	})
	for _, f := range []string{"recall/index.sqlite", "recall/index.sqlite.fts", "recall/index.sqlite-wal"} {
		if _, err := os.Stat(filepath.Join(state, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if n < 8 {
		t.Errorf("only %d paths under the state directory", n)
	}
}
