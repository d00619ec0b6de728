package testtmp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID is the pid of a process that has exited and been waited for.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func TestRunReapsDeadOwnersAndRemovesItsOwn(t *testing.T) {
	base := t.TempDir()
	t.Setenv("TMPDIR", base)
	t.Setenv("NODE_COMPILE_CACHE", "")
	dead := filepath.Join(base, prefix+strconv.Itoa(deadPID(t))+"-1")
	live := filepath.Join(base, prefix+strconv.Itoa(os.Getppid())+"-2")
	other := filepath.Join(base, "TestSomething123")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var inside string
	code := Run(func() int {
		inside = os.TempDir()
		if err := os.WriteFile(filepath.Join(t.TempDir(), "x"), []byte("x"), 0o644); err != nil {
			t.Error(err)
		}
		return 3
	})
	if code != 3 {
		t.Errorf("Run returned %d, want run's 3", code)
	}
	if filepath.Dir(inside) != base || !strings.HasPrefix(filepath.Base(inside), prefix+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("TMPDIR inside Run = %s, want %s/%s<pid>-*", inside, base, prefix)
	}
	if os.TempDir() != base {
		t.Errorf("TMPDIR after Run = %s, want %s back", os.TempDir(), base)
	}
	for d, want := range map[string]bool{dead: false, live: true, other: true, inside: false} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", d, err == nil, want)
		}
	}
}

func TestOwnerPID(t *testing.T) {
	for name, want := range map[string]int{
		"ctxtool-test-42-123": 42, "ctxtool-test-42": 0, "ctxtool-test-x-1": 0,
		"ctxtool-test--1": 0, "other-42-1": 0,
	} {
		pid, ok := OwnerPID(name, prefix)
		if pid != want && ok || ok != (want != 0) {
			t.Errorf("OwnerPID(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
}
