package filelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// StaleAge is OpenClaw's limit: a lock older than this may be taken over.
const StaleAge = 30 * time.Minute

// maxLockPayload caps what is read of a lock file: a payload is ~80 bytes,
// and a lock file of any size must not cost more than this to inspect.
const maxLockPayload = 4096

// Lock is a held OpenClaw session write lock (<file>.lock), or a store lock
// (AcquireStore).
type Lock struct {
	Path string
	f    *os.File
}

// LockedError says another process holds the session lock, or that the lock
// file is not a lock ctxtool may take over yet (empty, unreadable).
type LockedError struct {
	Session   string
	LockPath  string
	PID       int
	CreatedAt string
	// Problem describes a lock file that names no live process (empty,
	// not JSON, no pid…); StaleAt is when OpenClaw's rule lets it be taken
	// over (30 minutes after its last write).
	Problem string
	StaleAt time.Time
}

func (e *LockedError) Error() string {
	if e.Problem != "" && e.StaleAt.IsZero() {
		return fmt.Sprintf("%s: the lock file %s %s; ctxtool never takes such a lock over — if no process is writing this session, remove it (rm -r %s)",
			e.Session, e.LockPath, e.Problem, safefile.ShellQuote(e.LockPath))
	}
	if e.Problem != "" {
		return fmt.Sprintf("%s: the lock file %s %s; it counts as stale 30 minutes after it was written (at %s, in %s), when ctxtool takes it over; if no process is writing this session, remove it now (rm %s)",
			e.Session, e.LockPath, e.Problem, e.StaleAt.Local().Format("15:04:05"), time.Until(e.StaleAt).Round(time.Second), safefile.ShellQuote(e.LockPath))
	}
	return fmt.Sprintf("%s: locked by pid %d since %s (%s); wait for it to finish or pass --wait DURATION",
		e.Session, e.PID, e.CreatedAt, e.LockPath)
}

// Locked marks the error for exit code 4.
func (e *LockedError) Locked() bool { return true }

type lockPayload struct {
	PID       int    `json:"pid"`
	CreatedAt string `json:"createdAt"`
	Starttime *int64 `json:"starttime,omitempty"`
}

// Path is where OpenClaw keeps the lock of a session file: the real
// directory of the real session file (symlinks resolved) plus
// "<name>.lock". A symlink to a session and the session itself share one
// lock.
func Path(session string) string {
	if real, err := filepath.EvalSymlinks(session); err == nil {
		session = real
	}
	dir, name := filepath.Split(session)
	if dir == "" {
		dir = "."
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Join(dir, name+".lock")
}

// Acquire takes the session lock the way OpenClaw does (an exclusive
// create; stale locks are taken over). With wait > 0 it retries until the
// deadline with OpenClaw's backoff (min(1s, 50ms × attempt)).
//
// The payload is written to a temp file first and linked into place, so the
// lock never exists without its pid (a kill in between leaves a temp file
// that a later run removes, not an empty lock that blocks). A stale lock is
// taken over by renaming a new lock over it while holding flock(2) on the
// directory, after checking under that flock that the lock is still the
// stale one; ownership is then re-verified. Of any number of ctxtool
// processes racing over one stale lock, exactly one gets it.
func Acquire(ctx context.Context, session string, wait time.Duration) (*Lock, error) {
	path := Path(session)
	sweepDir(filepath.Dir(path))
	deadline := time.Now().Add(wait)
	quick := 0 // immediate retries after a lost race
	for attempt := 1; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := createLock(path)
		if err != nil || l != nil {
			return l, err
		}
		info := inspectLock(path)
		if info.gone && quick < 100 {
			quick++
			continue
		}
		if info.stale && quick < 100 {
			quick++
			l, err := takeOver(path, info)
			if err != nil || l != nil {
				return l, err
			}
			continue // someone else got it, or it changed: look again
		}
		quick = 0
		if wait <= 0 || time.Now().After(deadline) {
			le := &LockedError{Session: session, LockPath: path, PID: info.payload.PID, CreatedAt: info.payload.CreatedAt, Problem: info.problem}
			if info.problem != "" && info.byMtime {
				le.StaleAt = info.modTime.Add(StaleAge)
			}
			return nil, le
		}
		d := time.Duration(attempt) * 50 * time.Millisecond
		if d > time.Second {
			d = time.Second
		}
		if rem := time.Until(deadline); d > rem {
			d = rem
		}
		attempt++
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
}

// ownPayload is this process's lock payload as OpenClaw writes it: pid,
// creation time and the process start time that tells a recycled pid.
func ownPayload() []byte {
	p := lockPayload{PID: os.Getpid(), CreatedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
	if st, ok := safefile.ProcStartTime(os.Getpid()); ok {
		p.Starttime = &st
	}
	data, _ := json.MarshalIndent(p, "", "  ")
	return data
}

// newPayloadFile writes this process's lock payload to a temp file next to
// the lock.
func newPayloadFile(path string) (*os.File, error) {
	f, err := safefile.CreateTemp(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create lock: %w (is the directory writable?)", path, safefile.PathCause(err))
	}
	data := ownPayload()
	if _, err := f.Write(data); err != nil {
		discardTemp(f)
		return nil, fmt.Errorf("%s: write lock: %w", path, err)
	}
	return f, nil
}

func discardTemp(f *os.File) {
	f.Close()
	os.Remove(f.Name())
	safefile.Forget(f.Name())
}

// createLock links a fresh payload file to path. It returns (nil, nil) when
// a lock already exists.
func createLock(path string) (*Lock, error) {
	f, err := newPayloadFile(path)
	if err != nil {
		return nil, err
	}
	safefile.CrashPoint("lock-payload")
	err = os.Link(f.Name(), path)
	if err != nil && !errors.Is(err, os.ErrExist) && linkUnsupported(err) {
		// No hard links on this file system: an exclusive create, then the
		// payload (a kill in between leaves an empty lock, reported as such).
		discardTemp(f)
		return createLockNoLink(path)
	}
	tmp := f.Name()
	os.Remove(tmp)
	safefile.Forget(tmp)
	if err != nil {
		f.Close()
		if errors.Is(err, os.ErrExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: cannot create lock: %w (is the directory writable?)", path, safefile.PathCause(err))
	}
	return own(path, f)
}

func linkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EXDEV)
}

func createLockNoLink(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create lock: %w (is the directory writable?)", path, safefile.PathCause(err))
	}
	data := ownPayload()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: write lock: %w", path, err)
	}
	return own(path, f)
}

// own re-verifies that the lock file at path is the one f has open, then
// records the lock as held.
func own(path string, f *os.File) (*Lock, error) {
	mine, err1 := f.Stat()
	there, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(mine, there) {
		f.Close()
		return nil, nil // replaced under us: look again
	}
	l := &Lock{Path: path, f: f}
	heldMu.Lock()
	held[path] = l
	heldMu.Unlock()
	safefile.OnInterrupt("lock:"+path, func() { l.Release() })
	safefile.CrashPoint("lock-held")
	return l, nil
}

// takeOver replaces a stale lock by a fresh one of ours. Under flock(2) on
// the lock's directory (which every ctxtool taking over a lock there holds)
// it checks that the lock is still the very file found stale and still
// stale, then renames a new payload file over it. It returns (nil, nil)
// when the lock changed meanwhile.
func takeOver(path string, seen lockInfo) (*Lock, error) {
	unlock := flockDir(filepath.Dir(path))
	defer unlock()
	now := inspectLock(path)
	if now.gone || !now.stale || now.fi == nil || seen.fi == nil || !os.SameFile(now.fi, seen.fi) {
		return nil, nil
	}
	f, err := newPayloadFile(path)
	if err != nil {
		return nil, err
	}
	safefile.CrashPoint("lock-takeover")
	if err := os.Rename(f.Name(), path); err != nil {
		discardTemp(f)
		return nil, fmt.Errorf("%s: cannot take over the stale lock: %w", path, safefile.PathCause(err))
	}
	safefile.Forget(f.Name())
	return own(path, f)
}

// flockDir takes flock(2) on a directory; best effort (a file system
// without flock leaves only the inode check).
func flockDir(dir string) func() {
	d, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return func() {}
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}
}

// Release deletes the lock file, if it is still ours, and closes it.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	heldMu.Lock()
	f := l.f
	l.f = nil
	if held[l.Path] == l {
		delete(held, l.Path)
	}
	heldMu.Unlock()
	if f == nil {
		return nil
	}
	safefile.OffInterrupt("lock:" + l.Path)
	defer f.Close()
	mine, err1 := f.Stat()
	there, err2 := os.Stat(l.Path)
	if err1 != nil || err2 != nil || !os.SameFile(mine, there) {
		return nil // gone, or taken over as stale by someone else: not ours to delete
	}
	if err := os.Remove(l.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// lockInfo is what inspectLock found.
type lockInfo struct {
	payload lockPayload
	fi      os.FileInfo
	modTime time.Time
	gone    bool // no lock file (any more)
	stale   bool
	// problem describes a lock file that names no process ("" when its
	// payload is a valid lock); byMtime says it turns stale 30 minutes
	// after its mtime.
	problem string
	byMtime bool
}

// inspectLock applies OpenClaw's staleness rules to an existing lock. The
// file is read up to maxLockPayload bytes; whatever it holds is described,
// never echoed whole.
func inspectLock(path string) lockInfo {
	var info lockInfo
	fi, err := os.Lstat(path)
	if err != nil {
		info.gone = errors.Is(err, os.ErrNotExist)
		if !info.gone {
			info.problem = fmt.Sprintf("cannot be read (%v)", safefile.PathCause(err))
		}
		return info
	}
	info.fi, info.modTime = fi, fi.ModTime()
	oldByMtime := time.Since(fi.ModTime()) > StaleAge
	if !fi.Mode().IsRegular() {
		info.problem = fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type())
		return info // never taken over: removing it is for a human to decide
	}
	data, size, err := safefile.ReadCapped(path, maxLockPayload)
	if err != nil {
		info.gone = errors.Is(err, os.ErrNotExist)
		info.problem = fmt.Sprintf("cannot be read (%v)", safefile.PathCause(err))
		return info
	}
	trimmed := strings.TrimSpace(string(data))
	switch {
	case size == 0 || (trimmed == "" && size <= maxLockPayload):
		info.problem = "is empty (a writer was probably killed between creating it and writing its pid)"
	case size > maxLockPayload:
		info.problem = fmt.Sprintf("is %d bytes, not a lock payload (it starts with %s)", size, preview(data))
	case json.Unmarshal([]byte(trimmed), &info.payload) != nil:
		info.payload = lockPayload{}
		info.problem = fmt.Sprintf("does not hold a lock payload (%d bytes, starting with %s)", size, preview(data))
	}
	if info.problem != "" {
		info.stale, info.byMtime = oldByMtime, true
		return info
	}
	p := info.payload
	created, terr := time.Parse(time.RFC3339Nano, p.CreatedAt)
	switch {
	case p.PID <= 0:
		info.problem = fmt.Sprintf("names no pid (%s)", preview(data))
	case terr != nil:
		info.problem = fmt.Sprintf("has no valid createdAt (%s)", preview(data))
	}
	if info.problem != "" {
		info.stale, info.byMtime = oldByMtime, true
		return info
	}
	switch {
	case !safefile.PidAlive(p.PID):
		info.stale = true
	case p.Starttime != nil:
		if cur, ok := safefile.ProcStartTime(p.PID); ok && cur != *p.Starttime {
			info.stale = true // the pid was recycled
		}
	case p.PID == os.Getpid() && !Held(path):
		info.stale = true // our own orphan
	}
	if time.Since(created) > StaleAge {
		info.stale = true
	}
	return info
}

// preview quotes the start of an untrusted payload for a message.
func preview(data []byte) string {
	const max = 40
	if len(data) > max {
		return fmt.Sprintf("%q…", data[:max])
	}
	return fmt.Sprintf("%q", data)
}

// Held locks, by lock path.
var (
	heldMu sync.Mutex
	held   = map[string]*Lock{}
)

// Held reports whether this process holds the lock at path (a lock path,
// as Path gives it): sessionwrite.Rewrite checks it before it replaces a session.
func Held(path string) bool {
	heldMu.Lock()
	defer heldMu.Unlock()
	return held[path] != nil
}

// sweepDir removes, once per directory and process, what killed ctxtool
// runs left there: temp files of dead processes (rewrites, lock payloads)
// and backups that are still the live file itself (a rewrite killed between
// keeping the backup and the rename).
func sweepDir(dir string) {
	if !safefile.SweepOnce(dir) {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		i := strings.LastIndex(name, ".bak.")
		if i <= 0 || !e.Type().IsRegular() {
			continue
		}
		bak, live := filepath.Join(dir, name), filepath.Join(dir, name[:i])
		bfi, err1 := os.Stat(bak)
		lfi, err2 := os.Stat(live)
		if err1 != nil || err2 != nil || !os.SameFile(bfi, lfi) {
			continue
		}
		// A backup that is still the live file: its rewrite never got to
		// the rename. Only a rewrite holding the lock could still need it.
		if info := inspectLock(live + ".lock"); info.gone || info.stale {
			os.Remove(bak)
		}
	}
}
