package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StaleLockAge is OpenClaw's limit: a lock older than this may be taken over.
const StaleLockAge = 30 * time.Minute

// Lock is a held OpenClaw session write lock (<file>.lock).
type Lock struct {
	Path string
	f    *os.File
}

// LockedError says another live process holds the session lock.
type LockedError struct {
	Session   string
	LockPath  string
	PID       int
	CreatedAt string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s: locked by pid %d since %s (%s); wait for it to finish, pass --wait DURATION, or remove the lock file if that process is gone",
		e.Session, e.PID, e.CreatedAt, e.LockPath)
}

// Locked marks the error for exit code 4.
func (e *LockedError) Locked() bool { return true }

type lockPayload struct {
	PID       int    `json:"pid"`
	CreatedAt string `json:"createdAt"`
	Starttime *int64 `json:"starttime,omitempty"`
}

// LockPath is where OpenClaw keeps the lock of a session file: the real
// directory of the session plus "<name>.lock".
func LockPath(session string) string {
	dir, name := filepath.Split(session)
	if dir == "" {
		dir = "."
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Join(dir, name+".lock")
}

// AcquireLock takes the session lock the way OpenClaw does (exclusive
// create; stale locks are taken over). With wait > 0 it retries until the
// deadline with OpenClaw's backoff (min(1s, 50ms × attempt)).
func AcquireLock(ctx context.Context, session string, wait time.Duration) (*Lock, error) {
	if err := CheckWritable(session); err != nil {
		return nil, err
	}
	path := LockPath(session)
	deadline := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			p := lockPayload{PID: os.Getpid(), CreatedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
			if st, ok := procStartTime(os.Getpid()); ok {
				p.Starttime = &st
			}
			data, _ := json.MarshalIndent(p, "", "  ")
			if _, err := f.Write(data); err != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("%s: write lock: %v", path, err)
			}
			l := &Lock{Path: path, f: f}
			registerHeld(l)
			return l, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s: cannot create lock: %v (is the directory writable?)", path, unwrapPathErr(err))
		}
		info, stale := inspectLock(path)
		if stale {
			os.Remove(path)
			continue
		}
		if wait <= 0 || time.Now().After(deadline) {
			return nil, &LockedError{Session: session, LockPath: path, PID: info.PID, CreatedAt: info.CreatedAt}
		}
		d := time.Duration(attempt) * 50 * time.Millisecond
		if d > time.Second {
			d = time.Second
		}
		if rem := time.Until(deadline); d > rem {
			d = rem
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
}

// Release closes and deletes the lock file.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	unregisterHeld(l)
	l.f.Close()
	l.f = nil
	if err := os.Remove(l.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// inspectLock applies OpenClaw's staleness rules to an existing lock.
func inspectLock(path string) (lockPayload, bool) {
	var p lockPayload
	data, err := os.ReadFile(path)
	if err != nil {
		// Vanished between our create and read: retry at once.
		return p, errors.Is(err, os.ErrNotExist)
	}
	st, statErr := os.Stat(path)
	oldByMtime := statErr == nil && time.Since(st.ModTime()) > StaleLockAge
	if json.Unmarshal(bytes.TrimSpace(data), &p) != nil {
		return p, oldByMtime
	}
	created, terr := time.Parse(time.RFC3339Nano, p.CreatedAt)
	if p.PID <= 0 || terr != nil {
		return p, oldByMtime
	}
	if !pidAlive(p.PID) {
		return p, true
	}
	if p.Starttime != nil {
		if cur, ok := procStartTime(p.PID); ok && cur != *p.Starttime {
			return p, true // the pid was recycled
		}
	} else if p.PID == os.Getpid() && !holdsLock(path) {
		return p, true // our own orphan
	}
	return p, time.Since(created) > StaleLockAge
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// procStartTime reads field 22 of /proc/<pid>/stat (clock ticks since boot).
func procStartTime(pid int) (int64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may contain spaces; fields resume after ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(fields[19], 10, 64)
	return v, err == nil
}

// Held locks are released if the process is interrupted, so a Ctrl-C never
// leaves a session locked for 30 minutes.
var (
	heldMu  sync.Mutex
	held    = map[*Lock]bool{}
	cleanup = map[string]bool{} // temp files to remove on interrupt
	sigOnce sync.Once
)

func registerHeld(l *Lock) {
	heldMu.Lock()
	held[l] = true
	heldMu.Unlock()
	sigOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
		go func() {
			sig := <-ch
			releaseAll()
			code := 130
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		}()
	})
}

func unregisterHeld(l *Lock) {
	heldMu.Lock()
	delete(held, l)
	heldMu.Unlock()
}

func holdsLock(path string) bool {
	heldMu.Lock()
	defer heldMu.Unlock()
	for l := range held {
		if l.Path == path {
			return true
		}
	}
	return false
}

func registerTemp(path string, on bool) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if on {
		cleanup[path] = true
	} else {
		delete(cleanup, path)
	}
}

func releaseAll() {
	heldMu.Lock()
	locks := make([]*Lock, 0, len(held))
	for l := range held {
		locks = append(locks, l)
	}
	temps := make([]string, 0, len(cleanup))
	for t := range cleanup {
		temps = append(temps, t)
	}
	heldMu.Unlock()
	for _, t := range temps {
		os.Remove(t)
	}
	for _, l := range locks {
		l.Release()
	}
}
