package transcript

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
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
type Plan func(s *Session) ([][]byte, error)

// maxReplans bounds how often Update re-plans when another writer (pi does
// not take the lock) appended between our read and our write.
const maxReplans = 5

// Update appends the lines a plan returns, under the session lock: lock,
// load, plan, then append in one write unless the file changed since it was
// read — in that case it reloads and plans again, so new entries always hang
// off the true last line. A failed write is rolled back to the original
// size. The session passed to plan is closed when Update returns.
func Update(ctx context.Context, path string, opts UpdateOptions, plan Plan) error {
	if path == "-" {
		return fmt.Errorf("-: cannot write to standard input; give a session file path")
	}
	var lock *Lock
	if !opts.DryRun {
		var err error
		if lock, err = AcquireLock(ctx, path, opts.Wait); err != nil {
			return err
		}
		defer lock.Release()
	}
	for attempt := 0; ; attempt++ {
		s, err := Load(path)
		if err != nil {
			return err
		}
		lines, err := plan(s)
		s.Close()
		if err != nil || opts.DryRun || (len(lines) == 0 && (!opts.FinalNewline || s.EndsWithNewline || s.Size == 0)) {
			return err
		}
		err = appendLines(path, s.Size, s.EndsWithNewline, lines)
		if err == ErrFileChanged && attempt < maxReplans {
			continue
		}
		return err
	}
}

// ErrFileChanged is returned by Update when another writer kept appending
// faster than ctxtool could re-plan (maxReplans times): nothing was written.
var ErrFileChanged = fmt.Errorf("the session file changed while ctxtool was planning (another process keeps writing it; retry later or use --older-than)")

// appendLines appends lines (each without newline) in a single write, after a
// newline if the file lacks its final one. It refuses when the file's size is
// no longer expectSize.
func appendLines(path string, expectSize int64, endsWithNewline bool, lines [][]byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("%s: open for append: %v", path, unwrapPathErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if st.Size() != expectSize {
		return ErrFileChanged
	}
	var buf []byte
	if expectSize > 0 && !endsWithNewline {
		buf = append(buf, '\n')
	}
	for _, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return fmt.Errorf("%s: internal error: an appended entry contains a raw newline", path)
		}
		buf = append(buf, l...)
		buf = append(buf, '\n')
	}
	if _, err := f.Write(buf); err != nil {
		f.Truncate(expectSize)
		return fmt.Errorf("%s: append failed, file restored to its previous size: %v", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %v", path, err)
	}
	return nil
}

// BackupStamp formats t like OpenClaw's archive stamps
// (2026-03-08T13-03-27.008Z).
func BackupStamp(t time.Time) string {
	return strings.ReplaceAll(t.UTC().Format("2006-01-02T15:04:05.000Z"), ":", "-")
}

// RewriteAtomic replaces a file's content with what write produces, keeping
// the original as <file>.bak.<stamp>: the backup is a hard link (or a copy)
// of the original, the new content goes to a temp file in the same directory
// which is fsynced and renamed over the original, then the directory is
// fsynced. Any failure leaves the original file untouched.
func RewriteAtomic(path string, write func(w io.Writer) error) (backup string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, unwrapPathErr(err))
	}
	dir := filepath.Dir(path)
	backup = path + ".bak." + BackupStamp(time.Now())
	if err := os.Link(path, backup); err != nil {
		if err := copyFile(path, backup, st.Mode().Perm()); err != nil {
			return "", fmt.Errorf("%s: cannot keep a backup at %s: %v", path, backup, err)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".ctxtool-tmp-*")
	if err != nil {
		os.Remove(backup)
		return "", fmt.Errorf("%s: cannot create a temp file in %s: %v", path, dir, err)
	}
	registerTemp(tmp.Name(), true)
	defer registerTemp(tmp.Name(), false)
	fail := func(e error) (string, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		os.Remove(backup)
		return "", fmt.Errorf("%s: rewrite failed, original untouched: %v", path, e)
	}
	if err := write(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return backup, nil
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
