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

// Interrupt, which cmd's signal handler calls, waits for a running
// critical section to complete, then runs the cleanups newest first
// (removing registered temp files), within CriticalWait. Signals and the
// exit are cmd's (cmd.TestInterruptWaitsForCriticalSection).
func TestInterruptWaitsForCriticalSection(t *testing.T) {
	defer func() { // this process goes on: undo what Interrupt did
		intrMu.Lock()
		exiting = false
		intrMu.Unlock()
	}()
	dir := t.TempDir()
	f, err := CreateTemp(filepath.Join(dir, "target"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	var order []string
	OnInterrupt("first", func() { order = append(order, "first") })
	OnInterrupt("second", func() { order = append(order, "second") })
	OnInterrupt("dropped", func() { order = append(order, "dropped") })
	OffInterrupt("dropped")
	entered, completed := make(chan struct{}), make(chan struct{})
	go Critical(func() error {
		close(entered)
		time.Sleep(200 * time.Millisecond)
		close(completed)
		return nil
	})
	<-entered
	start := time.Now()
	Interrupt()
	took := time.Since(start)
	select {
	case <-completed:
	default:
		t.Fatal("Interrupt returned before the critical section completed")
	}
	if took > CriticalWait+100*time.Millisecond {
		t.Fatalf("Interrupt took %v", took)
	}
	if fmt.Sprint(order) != "[second first]" {
		t.Fatalf("cleanups ran %v, want newest first without the dropped one", order)
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
