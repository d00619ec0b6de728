package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTempOwner(t *testing.T) {
	cases := map[string]struct {
		pid int
		ok  bool
	}{
		".s.jsonl.ctxtool-tmp-123-abcd1234":       {123, true},
		".s.jsonl.lock.ctxtool-tmp-9-00ff00ff":    {9, true},
		".s.jsonl.ctxtool-tmp-4831207":            {0, true}, // older ctxtool: no pid
		".capture.json.123456.tmp":                {0, true}, // older checkpoint store
		"s.jsonl":                                 {0, false},
		"notes.tmp":                               {0, false},
		".s.jsonl.ctxtool-tmp-x":                  {0, false},
		"s.jsonl.ctxtool-tmp-1-a (not a dotfile)": {0, false},
	}
	for name, want := range cases {
		pid, ok := tempOwner(name)
		if pid != want.pid || ok != want.ok {
			t.Errorf("tempOwner(%q) = %d, %v; want %d, %v", name, pid, ok, want.pid, want.ok)
		}
	}
}

// Sweep removes temp files of dead processes and old pid-less ones, and
// keeps those of live processes, fresh pid-less ones and other files.
func TestSweep(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("x"), 0o600)
		if age > 0 {
			old := time.Now().Add(-age)
			os.Chtimes(p, old, old)
		}
		return p
	}
	deadTmp := write(".s.jsonl.ctxtool-tmp-"+strconv.Itoa(dead.Process.Pid)+"-0000aaaa", 0)
	liveTmp := write(".s.jsonl.ctxtool-tmp-"+strconv.Itoa(os.Getppid())+"-0000bbbb", 0)
	oldLegacy := write(".s.jsonl.ctxtool-tmp-12345", time.Hour)
	newLegacy := write(".t.jsonl.ctxtool-tmp-12346", 0)
	oldCheckpoint := write(".latest.json.998877.tmp", time.Hour)
	session := write("s.jsonl", time.Hour)
	removed := Sweep(dir)
	for _, p := range []string{deadTmp, oldLegacy, oldCheckpoint} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s not removed", filepath.Base(p))
		}
	}
	for _, p := range []string{liveTmp, newLegacy, session} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed", filepath.Base(p))
		}
	}
	if len(removed) != 3 {
		t.Fatalf("removed %v", removed)
	}
}

// A signal during a critical section takes effect when it ends: the
// section completes, registered temp files are removed, the exit code is
// 128+signal, all within a second.
func TestInterruptWaitsForCriticalSection(t *testing.T) {
	if dir := os.Getenv("SAFEFILE_TEST_CHILD"); dir != "" {
		f, err := CreateTemp(filepath.Join(dir, "target"), 0o600)
		if err != nil {
			os.Exit(3)
		}
		f.Close()
		Critical(func() error {
			os.WriteFile(filepath.Join(dir, "entered"), nil, 0o600)
			time.Sleep(300 * time.Millisecond)
			return os.WriteFile(filepath.Join(dir, "completed"), nil, 0o600)
		})
		time.Sleep(10 * time.Second)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestInterruptWaitsForCriticalSection$")
	cmd.Env = append(os.Environ(), "SAFEFILE_TEST_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "entered")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child never entered the critical section")
		}
	}
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

// PathCause is the one wording of a file error without its operation and
// path (transcript, walk, lint, budget and estimate name the path themselves).
func TestPathCause(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "missing"))
	if got := PathCause(err); !errors.Is(got, fs.ErrNotExist) || strings.Contains(got.Error(), "missing") {
		t.Errorf("PathCause(%v) = %v, want the bare cause", err, got)
	}
	if wrapped := fmt.Errorf("open: %w", err); PathCause(wrapped).Error() != PathCause(err).Error() {
		t.Errorf("a wrapped *fs.PathError keeps its wrapper: %v", PathCause(wrapped))
	}
	other := errors.New("disk on fire")
	if PathCause(other) != other {
		t.Error("an error without a path changed")
	}
}
