package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// startChild runs test name again in a child process with env set, and
// waits (10 s at most) until the child has created ready.
func startChild(t *testing.T, name, env, ready string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$")
	cmd.Env = append(os.Environ(), env)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return cmd
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never created %s", filepath.Base(ready))
		}
	}
}

// A signal during a critical section takes effect when it ends: the
// section completes, registered temp files are removed, the exit code is
// 128+signal, all within a second.
func TestInterruptWaitsForCriticalSection(t *testing.T) {
	if dir := os.Getenv("CTXTOOL_TEST_CRITICAL_CHILD"); dir != "" {
		interruptible(context.Background())
		f, err := safefile.CreateTemp(filepath.Join(dir, "target"), 0o600)
		if err != nil {
			os.Exit(3)
		}
		f.Close()
		safefile.Critical(func() error {
			os.WriteFile(filepath.Join(dir, "entered"), nil, 0o600)
			time.Sleep(300 * time.Millisecond)
			return os.WriteFile(filepath.Join(dir, "completed"), nil, 0o600)
		})
		time.Sleep(10 * time.Second)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := startChild(t, "TestInterruptWaitsForCriticalSection", "CTXTOOL_TEST_CRITICAL_CHILD="+dir, filepath.Join(dir, "entered"))
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	took := time.Since(sent)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit %v, want 143", err)
	}
	if took > time.Second {
		t.Fatalf("took %v to stop", took)
	}
	if _, err := os.Stat(filepath.Join(dir, "completed")); err != nil {
		t.Fatal("the critical section was cut short")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".target.ctxtool-tmp-*")); len(left) != 0 {
		t.Fatalf("temp file left: %v", left)
	}
}

// A process interrupted while it holds the session lock removes the lock
// on its way out, so Ctrl-C never leaves a session locked for 30 minutes.
func TestLockReleasedOnSignal(t *testing.T) {
	if session := os.Getenv("CTXTOOL_TEST_HOLD_LOCK"); session != "" {
		interruptible(context.Background())
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
		cmd := startChild(t, "TestLockReleasedOnSignal", "CTXTOOL_TEST_HOLD_LOCK="+session, session+".held")
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
