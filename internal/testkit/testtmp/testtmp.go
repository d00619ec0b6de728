// Package testtmp gives a test process a temporary directory of its own and
// reaps the ones of test processes that died.
//
// The testing package removes t.TempDir() directories when a test ends, but
// a test binary killed by go test's -timeout (a loaded machine pushes the
// slow packages past the 10-minute default) or by a signal never gets there:
// its directories, and those of every test running beside it, stay in TMPDIR
// for good. Run points TMPDIR (which t.TempDir, os.MkdirTemp and child
// processes use) at ctxtool-test-<pid>-*, removes it at the end, and first
// removes the directories whose process is gone.
//
// Use:
//
//	func TestMain(m *testing.M) { os.Exit(testtmp.Run(m.Run)) }
package testtmp

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// prefix names the per-process directories; the pid follows it.
const prefix = "ctxtool-test-"

// Run runs run with TMPDIR set to a new directory of this process's own,
// removed afterwards, and returns run's result.
func Run(run func() int) int {
	parent := os.TempDir()
	reap(parent)
	dir, err := os.MkdirTemp(parent, prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtmp:", err)
		return run()
	}
	// node's compile cache lives in TMPDIR by default: keep it shared
	// across runs rather than rebuild it in every directory.
	if os.Getenv("NODE_COMPILE_CACHE") == "" {
		os.Setenv("NODE_COMPILE_CACHE", filepath.Join(parent, "node-compile-cache"))
	}
	os.Setenv("TMPDIR", dir)
	code := run()
	os.Setenv("TMPDIR", parent)
	os.RemoveAll(dir)
	return code
}

// reap removes the directories ctxtool-test-<pid>-* in parent whose process
// is no longer running.
func reap(parent string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		pid, ok := OwnerPID(e.Name(), prefix)
		if ok && e.IsDir() && !Alive(pid) {
			os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// OwnerPID is the pid in a name made as prefix<pid>-<random>.
func OwnerPID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	return pid, ok && err == nil && pid > 0
}

// Alive reports whether process pid exists (EPERM: it does, as another
// user's).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
