// Package safefile writes files so that a crash, a kill -9 or Ctrl-C never
// leaves something behind that blocks or confuses the next run: temp files
// carry the pid of the process that made them (a later run removes them once
// that process is dead), interrupted processes remove their temp files and
// release their locks before they exit, and short critical sections (a
// rename and what must follow it) finish before an interrupt ends the
// process.
//
// It must not know what it writes: callers own formats and locking.
package safefile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// tempMarker is in the name of every temp file ctxtool makes:
// .<target name>.ctxtool-tmp-<pid>-<random>.
const tempMarker = ".ctxtool-tmp-"

// legacyCheckpointTemp matches the temp files of older checkpoint stores.
var legacyCheckpointTemp = lazyre.New(`^\..+\.[0-9]+\.tmp$`)

// LegacyTempAge is how old a temp file without a pid in its name (written by
// an older ctxtool) must be before a later run removes it.
const LegacyTempAge = 30 * time.Minute

// CreateTemp creates an empty temp file next to target, named after it and
// after this process, registered for removal if the process is interrupted.
// Call Forget once the file has been renamed or removed.
func CreateTemp(target string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	for i := 0; ; i++ {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, "."+base+tempMarker+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, perm)
		if err == nil {
			OnInterrupt(name, func() { os.Remove(name) })
			return f, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 100 {
			return nil, err
		}
	}
}

// Forget unregisters a temp file made by CreateTemp (it was renamed into
// place or removed).
func Forget(name string) { OffInterrupt(name) }

// tempOwner parses a ctxtool temp file name. ok is false for names that are
// not ctxtool temp files; pid is 0 for temp files of older versions, which
// did not record it.
func tempOwner(name string) (pid int, ok bool) {
	base := filepath.Base(name)
	i := strings.LastIndex(base, tempMarker)
	if i <= 0 || base[0] != '.' {
		// Older checkpoint stores wrote .<name>.<digits>.tmp.
		return 0, legacyCheckpointTemp().MatchString(base)
	}
	rest := base[i+len(tempMarker):]
	if j := strings.IndexByte(rest, '-'); j > 0 {
		if p, err := strconv.Atoi(rest[:j]); err == nil && p > 0 {
			return p, true
		}
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	return 0, rest != ""
}

// isLeftover reports whether a file is a ctxtool temp file that no running
// process will finish: its pid is dead (or, for an old name without a pid,
// it is older than LegacyTempAge).
func isLeftover(path string, modTime time.Time) bool {
	pid, ok := tempOwner(path)
	if !ok {
		return false
	}
	if pid == 0 {
		return time.Since(modTime) > LegacyTempAge
	}
	return pid != os.Getpid() && !PidAlive(pid)
}

// Sweep removes the leftover temp files (isLeftover) directly in dir and
// returns their names. Errors are ignored: sweeping is housekeeping.
func Sweep(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if _, ok := tempOwner(e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if isLeftover(p, info.ModTime()) && os.Remove(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

var swept sync.Map

// SweepOnce is Sweep, at most once per directory and process (reading a
// directory of thousands of sessions for every file would be quadratic).
// It reports whether this call swept.
func SweepOnce(dir string) bool {
	if _, done := swept.LoadOrStore(filepath.Clean(dir), true); done {
		return false
	}
	Sweep(dir)
	return true
}

// WriteFile replaces path with data atomically: a temp file carrying this
// process's pid, fsync, rename, fsync of the directory.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := CreateTemp(path, perm)
	if err != nil {
		return err
	}
	name := f.Name()
	defer Forget(name)
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	CrashPoint("temp-written")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// SyncDir fsyncs a directory so a rename in it survives a power cut.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// PidAlive reports whether a process with this pid exists.
func PidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ProcStartTime reads a process's start time in clock ticks since boot
// (field 22 of /proc/<pid>/stat): with the pid it names a process for good,
// since pids are recycled.
func ProcStartTime(pid int) (int64, bool) {
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

// ReadCapped reads at most limit bytes of a file and says whether there was
// more: for files whose content is reported, never trusted to be small.
func ReadCapped(path string, limit int) (data []byte, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	buf := make([]byte, limit)
	n, err := f.ReadAt(buf, 0)
	if n < limit && err != nil && !errors.Is(err, io.EOF) {
		return nil, st.Size(), err
	}
	return buf[:n], st.Size(), nil
}

// NotRegularError refuses a path that is not a regular file.
type NotRegularError struct {
	File string
	What string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: is %s, not a session file; ctxtool reads and writes regular .jsonl files only", e.File, e.What)
}

// CheckRegular refuses (NotRegularError) anything but a regular file: a
// FIFO would block a read forever, a device never ends, a directory is not
// a file.
func CheckRegular(path string, st os.FileInfo) error {
	m := st.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeCharDevice != 0:
		what = "a character device"
	case m&os.ModeDevice != 0:
		what = "a block device"
	default:
		what = "not a regular file (" + m.Type().String() + ")"
	}
	return &NotRegularError{File: path, What: what}
}

// PathCause drops the *os.PathError wrapper (operation and path) from err:
// ctxtool's messages name the path themselves, with what it was for.
func PathCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
