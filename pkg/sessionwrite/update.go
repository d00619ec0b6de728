package sessionwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// UpdateOptions controls Update.
type UpdateOptions struct {
	// Wait is how long to wait for the session lock (0: fail at once).
	Wait time.Duration
	// DryRun plans but writes nothing.
	DryRun bool
	// FinalNewline ends an unterminated last line with a newline even when
	// the plan appends nothing (lint --fix), so the next writer's append
	// cannot glue onto it.
	FinalNewline bool
}

// Plan decides what to append to a freshly loaded session. Returning no lines
// writes nothing.
type Plan func(s *transcript.Session) ([][]byte, error)

// maxReplans bounds how often Update re-plans when another writer (pi does
// not take the lock) appended between our read and our write.
const maxReplans = 5

// Update appends the lines a plan returns, under the session lock: lock,
// load, plan, then append in one write unless the file changed since it was
// read — in that case it reloads and plans again, so new entries always hang
// off the true last line. A failed write is rolled back to the original
// size. The session passed to plan is closed when Update returns.
//
// For a plan that takes long (an LLM call), plan without the lock and write
// with Append instead, so the agent is never blocked meanwhile.
func Update(ctx context.Context, path string, opts UpdateOptions, plan Plan) error {
	if path == "-" {
		return fmt.Errorf("-: cannot write to standard input; give a session file path")
	}
	if !opts.DryRun {
		if _, err := transcript.WritablePath(path); err != nil {
			return err
		}
		lock, err := filelock.Acquire(ctx, path, opts.Wait)
		if err != nil {
			return err
		}
		defer lock.Release()
	}
	for attempt := 0; ; attempt++ {
		s, err := transcript.Load(path)
		if err != nil {
			return err
		}
		if !opts.DryRun {
			if err := s.Writable(); err != nil {
				s.Close()
				return err
			}
		}
		lines, err := plan(s)
		if err != nil || opts.DryRun || (len(lines) == 0 && (!opts.FinalNewline || s.EndsWithNewline || s.Size == 0)) {
			s.Close()
			return err
		}
		err = appendVerified(s, lines)
		s.Close()
		if err == ErrFileChanged && attempt < maxReplans {
			continue
		}
		return err
	}
}

// AppendOptions controls Append.
type AppendOptions struct {
	// Wait is how long to wait for the session lock (0: fail at once).
	Wait time.Duration
}

// Append is the write half of planning without the lock: it takes the
// session lock, checks that the file is still exactly the bytes s was loaded
// from — the same file, the same size, the same first and last bytes — and
// appends lines after them in one write, then releases the lock. When
// anything else wrote to the file since s was loaded (pi appends without
// the lock) nothing is written and the error is ErrFileChanged: reload,
// re-plan (the new entries must hang off the true last line) and call
// Append again. A session pi cannot load (duplicate ids, parent cycles), a
// read-only file or a file that is not a regular file is refused.
func Append(ctx context.Context, s *transcript.Session, opts AppendOptions, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	if err := s.Writable(); err != nil {
		return err
	}
	lock, err := filelock.Acquire(ctx, s.File, opts.Wait)
	if err != nil {
		return err
	}
	defer lock.Release()
	return appendVerified(s, lines)
}

// ErrFileChanged is returned by Update when another writer kept appending
// faster than ctxtool could re-plan (maxReplans times), and by Append when
// the file is no longer what the session was loaded from: nothing was
// written.
var ErrFileChanged = fmt.Errorf("the session file changed while ctxtool was planning (another process keeps writing it; retry later or use --older-than)")

// appendVerified appends lines (each without newline) in a single write
// after the bytes s was loaded from, after a newline if the file lacks its
// final one. It refuses (ErrFileChanged) when the file is no longer those
// bytes: another file, another size, other first or last bytes.
func appendVerified(s *transcript.Session, lines [][]byte) error {
	if err := s.Writable(); err != nil {
		return err
	}
	path := s.File
	real, err := transcript.WritablePath(path)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(real, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("%s: open for append: %w", path, safefile.PathCause(err))
	}
	defer f.Close()
	if err := sameBytes(s, f); err != nil {
		return err
	}
	var buf []byte
	if s.Size > 0 && !s.EndsWithNewline {
		buf = append(buf, '\n')
	}
	for _, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return fmt.Errorf("%s: internal error: an appended entry contains a raw newline", path)
		}
		buf = append(buf, l...)
		buf = append(buf, '\n')
	}
	safefile.CrashPoint("append-before-write")
	if _, err := f.Write(buf); err != nil {
		f.Truncate(s.Size)
		return fmt.Errorf("%s: append failed, file restored to its previous size: %w", path, err)
	}
	safefile.CrashPoint("append-written")
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %w", path, err)
	}
	return nil
}

// sameBytes checks that f (open on the session's real file) is still the
// file s was loaded from, of the same size, with the same first and last
// bytes.
func sameBytes(s *transcript.Session, f *os.File) error {
	if s.LoadedFrom() == nil {
		return fmt.Errorf("%s: internal error: the session was not loaded from a file", s.File)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	if !os.SameFile(st, s.LoadedFrom()) || st.Size() != s.Size {
		return ErrFileChanged
	}
	if same, err := s.SameStart(f); err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	} else if !same {
		return ErrFileChanged
	}
	return nil
}

// BusyError refuses to rewrite a session that was written to a moment ago.
type BusyError struct {
	File  string
	Since time.Duration
	Idle  time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: the session was written %s ago, within --idle %s: an agent is probably writing it, and --truncate replaces the file; retry when the session is quiet (or lower --idle)",
		e.File, e.Since.Round(time.Millisecond), e.Idle)
}

// Locked marks the error for exit code 4 (the session is busy).
func (e *BusyError) Locked() bool { return true }

// CheckIdle refuses (BusyError) a session modified less than idle ago.
func CheckIdle(path string, idle time.Duration) error {
	if idle <= 0 {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	if since := time.Since(fi.ModTime()); since < idle {
		if since < 0 {
			since = 0
		}
		return &BusyError{File: path, Since: since, Idle: idle}
	}
	return nil
}

// BackupStamp formats t like OpenClaw's archive stamps
// (2026-03-08T13-03-27.008Z).
func BackupStamp(t time.Time) string {
	return strings.ReplaceAll(t.UTC().Format("2006-01-02T15:04:05.000Z"), ":", "-")
}

var errNotLocked = errors.New("internal error: the session lock is not held")
