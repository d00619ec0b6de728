package filelock_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
)

// A process interrupted while it holds the session lock removes the lock
// on its way out, so Ctrl-C never leaves a session locked for 30 minutes.
func TestLockReleasedOnSignal(t *testing.T) {
	if session := os.Getenv("CTXTOOL_TEST_HOLD_LOCK"); session != "" {
		if _, err := filelock.Acquire(context.Background(), session, 0); err != nil {
			os.Exit(3)
		}
		os.WriteFile(session+".held", nil, 0o644)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		session := filepath.Join(t.TempDir(), "s.jsonl")
		os.WriteFile(session, []byte(`{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}`+"\n"), 0o644)
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLockReleasedOnSignal$")
		cmd.Env = append(os.Environ(), "CTXTOOL_TEST_HOLD_LOCK="+session)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(session + ".held"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("child never took the lock")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := os.Stat(session + ".lock"); err != nil {
			t.Fatalf("lock not held: %v", err)
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		if _, serr := os.Stat(session + ".lock"); !os.IsNotExist(serr) {
			t.Fatalf("%v: lock file left behind (child: %v)", sig, err)
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(sig) {
			t.Fatalf("%v: child exit %v, want %d", sig, err, 128+int(sig))
		}
	}
}
