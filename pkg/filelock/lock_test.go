package filelock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
)

// session is a session file of its own for one test: the lock only needs
// the file to exist.
func session(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(f, []byte(`{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLock(t *testing.T) {
	f := session(t)
	ctx := context.Background()
	l, err := filelock.Acquire(ctx, f, 0)
	if err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	data, _ := os.ReadFile(f + ".lock")
	if err := json.Unmarshal(data, &payload); err != nil || payload["pid"] == nil || payload["createdAt"] == nil || payload["starttime"] == nil {
		t.Fatalf("lock payload %s", data)
	}
	// Held by us (a live process with a start time): others are refused.
	_, err = filelock.Acquire(ctx, f, 0)
	var le *filelock.LockedError
	if !errors.As(err, &le) || !le.Locked() {
		t.Fatalf("second acquire: %v, want LockedError", err)
	}
	// --wait succeeds once the holder releases.
	go func() { time.Sleep(150 * time.Millisecond); l.Release() }()
	l2, err := filelock.Acquire(ctx, f, 3*time.Second)
	if err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	l2.Release()
	if _, err := os.Stat(f + ".lock"); !os.IsNotExist(err) {
		t.Fatal("lock file not removed on release")
	}
}

func TestStaleLocksAreTakenOver(t *testing.T) {
	f := session(t)
	cases := map[string]string{
		"dead pid":     `{"pid": 2147483000, "createdAt": "` + time.Now().UTC().Format(time.RFC3339) + `"}`,
		"too old":      `{"pid": 1, "createdAt": "2020-01-01T00:00:00.000Z"}`,
		"own orphan":   `{"pid": ` + itoa(os.Getpid()) + `, "createdAt": "` + time.Now().UTC().Format(time.RFC3339) + `"}`,
		"recycled pid": `{"pid": 1, "createdAt": "` + time.Now().UTC().Format(time.RFC3339) + `", "starttime": 123456789}`,
	}
	for name, payload := range cases {
		os.WriteFile(f+".lock", []byte(payload), 0o644)
		l, err := filelock.Acquire(context.Background(), f, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		l.Release()
	}
	// A garbage lock that is recent by mtime is respected...
	os.WriteFile(f+".lock", []byte("garbage"), 0o644)
	if _, err := filelock.Acquire(context.Background(), f, 0); err == nil {
		t.Fatal("a recent unreadable lock must be respected")
	}
	// ...and taken over once its mtime is older than 30 minutes.
	old := time.Now().Add(-31 * time.Minute)
	os.Chtimes(f+".lock", old, old)
	l, err := filelock.Acquire(context.Background(), f, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Lock files left by killed writers: an empty or garbage lock is described
// (never echoed whole, read with a small cap) and taken over once its mtime
// is 30 minutes old.
func TestLeftoverLockFiles(t *testing.T) {
	f := session(t)
	big := bytes.Repeat([]byte("garbage!"), 8<<20) // 64 MiB
	cases := map[string][]byte{"empty": nil, "garbage": []byte("\x00\x01not json"), "huge": big, "no pid": []byte(`{"createdAt":"2026-01-01T00:00:00Z"}`)}
	for name, payload := range cases {
		os.WriteFile(f+".lock", payload, 0o644)
		_, err := filelock.Acquire(context.Background(), f, 0)
		var le *filelock.LockedError
		if !errors.As(err, &le) || le.Problem == "" {
			t.Fatalf("%s: %v", name, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "pid 0") || len(msg) > 1000 || !strings.Contains(msg, "rm ") {
			t.Fatalf("%s: unclear message (%d bytes): %.300s", name, len(msg), msg)
		}
		old := time.Now().Add(-31 * time.Minute)
		os.Chtimes(f+".lock", old, old)
		l, err := filelock.Acquire(context.Background(), f, 0)
		if err != nil {
			t.Fatalf("%s, 31 minutes old: %v", name, err)
		}
		l.Release()
	}
	if !strings.Contains(errFor(t, f, nil), "is empty") || !strings.Contains(errFor(t, f, big), "67108864 bytes") {
		t.Fatal("messages do not say what was found")
	}
}

func errFor(t *testing.T, f string, payload []byte) string {
	os.WriteFile(f+".lock", payload, 0o644)
	defer os.Remove(f + ".lock")
	_, err := filelock.Acquire(context.Background(), f, 0)
	if err == nil {
		t.Fatal("acquired a fresh leftover lock")
	}
	return err.Error()
}

// Eight processes racing over one stale lock: exactly one holds it, every
// round, whatever made the lock stale.
func TestStaleLockTakeoverIsExclusive(t *testing.T) {
	if os.Getenv("CTXTOOL_TEST_RACE_LOCK") != "" {
		raceChild()
		return
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	deadPid := dead.Process.Pid
	now := time.Now().UTC().Format(time.RFC3339)
	stale := map[string]func(string){
		"dead pid": func(p string) {
			os.WriteFile(p, []byte(`{"pid": `+strconv.Itoa(deadPid)+`, "createdAt": "`+now+`"}`), 0o644)
		},
		"old empty lock": func(p string) {
			os.WriteFile(p, nil, 0o644)
			old := time.Now().Add(-time.Hour)
			os.Chtimes(p, old, old)
		},
		"too old": func(p string) { os.WriteFile(p, []byte(`{"pid": 1, "createdAt": "2020-01-01T00:00:00.000Z"}`), 0o644) },
	}
	const procs, rounds = 8, 4
	for name, mk := range stale {
		for round := 0; round < rounds; round++ {
			dir := t.TempDir()
			session := filepath.Join(dir, "s.jsonl")
			os.WriteFile(session, []byte("{}\n"), 0o644)
			mk(session + ".lock")
			var wg sync.WaitGroup
			outs := make([]string, procs)
			start := time.Now().Add(300 * time.Millisecond).UnixNano()
			for i := 0; i < procs; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					cmd := exec.Command(os.Args[0], "-test.run", "^TestStaleLockTakeoverIsExclusive$")
					cmd.Env = append(os.Environ(), "CTXTOOL_TEST_RACE_LOCK="+session, "CTXTOOL_TEST_RACE_START="+strconv.FormatInt(start, 10), "CTXTOOL_TEST_RACE_PROCS="+strconv.Itoa(procs))
					out, _ := cmd.CombinedOutput()
					outs[i] = string(out)
				}(i)
			}
			wg.Wait()
			got, overlaps := 0, 0
			for _, o := range outs {
				if strings.Contains(o, "HELD") {
					got++
				}
				if strings.Contains(o, "OVERLAP") {
					overlaps++
				}
			}
			if got != 1 || overlaps != 0 {
				t.Fatalf("%s, round %d: %d processes held the lock, %d saw another holder\n%s", name, round, got, overlaps, strings.Join(outs, "\n"))
			}
			if _, err := os.Stat(session + ".lock"); !os.IsNotExist(err) {
				t.Fatalf("%s: lock left behind", name)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*ctxtool-tmp*")); len(left) > 0 {
				t.Fatalf("%s: temp files left: %v", name, left)
			}
		}
	}
}

// raceChild waits for the common start time, tries the lock once, and
// while holding it checks that nobody else does (an O_EXCL marker); the
// holder keeps the lock until every child has tried.
func raceChild() {
	session := os.Getenv("CTXTOOL_TEST_RACE_LOCK")
	start, _ := strconv.ParseInt(os.Getenv("CTXTOOL_TEST_RACE_START"), 10, 64)
	procs, _ := strconv.Atoi(os.Getenv("CTXTOOL_TEST_RACE_PROCS"))
	time.Sleep(time.Until(time.Unix(0, start)))
	l, err := filelock.Acquire(context.Background(), session, 0)
	os.WriteFile(session+".tried."+strconv.Itoa(os.Getpid()), nil, 0o644)
	if err != nil {
		fmt.Println("REFUSED", err)
		os.Exit(0)
	}
	m, err := os.OpenFile(session+".holder", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Println("OVERLAP")
	} else {
		fmt.Println("HELD")
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if tried, _ := filepath.Glob(session + ".tried.*"); len(tried) >= procs {
				break
			}
		}
		m.Close()
		os.Remove(session + ".holder")
	}
	l.Release()
	os.Exit(0)
}

// A lock path that is not a file (a directory someone made) is never
// taken over, and the message says so.
func TestLockPathNotAFile(t *testing.T) {
	f := session(t)
	os.Mkdir(f+".lock", 0o755)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(f+".lock", old, old)
	_, err := filelock.Acquire(context.Background(), f, 0)
	var le *filelock.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "never takes such a lock over") || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory lock: %v", err)
	}
}
