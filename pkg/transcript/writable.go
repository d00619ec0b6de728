package transcript

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// What may be written, and whether a file is still the one a session was
// loaded from: the checks pkg/sessionwrite makes before it appends or
// rewrites, and Session.Writable's.

// WritablePath resolves a session path for writing: symlinks are followed
// to the real file (which is what gets locked, appended to and rewritten,
// so a link stays a link), and the real file must be a regular file that is
// not read-only.
func WritablePath(path string) (string, error) {
	if err := CheckWritable(path); err != nil {
		return "", err // Claude Code, Codex, zstd, OpenClaw stores (foreign.go)
	}
	real, err := resolve(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	if err := checkRegular(path, fi); err != nil {
		return "", err
	}
	if err := checkWritableMode(path, fi); err != nil {
		return "", err
	}
	return real, nil
}

// resolve follows symlinks; a dangling link is an error that says where it
// points.
func resolve(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		return real, nil
	}
	if target, lerr := os.Readlink(path); lerr == nil {
		return "", fmt.Errorf("%s: a symlink to %s, which does not exist", path, target)
	}
	return "", fmt.Errorf("%s: %w", path, safefile.PathCause(err))
}

// ReadOnlyError refuses to write a file without write permission bits:
// somebody made it read-only on purpose (root could write it anyway).
type ReadOnlyError struct {
	File string
	Mode os.FileMode
}

func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("%s: the file is read-only (mode %04o); ctxtool does not write to read-only sessions — make it writable (chmod u+w %s) if it may change", e.File, e.Mode.Perm(), safefile.ShellQuote(e.File))
}

func checkWritableMode(path string, fi os.FileInfo) error {
	if fi.Mode().Perm()&0o222 == 0 {
		return &ReadOnlyError{File: path, Mode: fi.Mode()}
	}
	return nil
}

// TreeError refuses a write into a session whose entry tree pi cannot load.
type TreeError struct {
	File     string
	Problems []TreeProblem
}

func (e *TreeError) Error() string {
	var parts []string
	for i, p := range e.Problems {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Problems)-3))
			break
		}
		parts = append(parts, p.String())
	}
	return fmt.Sprintf("%s: pi cannot load this session's entry tree (%s), so ctxtool will not write into it; list every problem with `ctxtool lint %s` and work on a repaired copy (`ctxtool export %s --to pi` writes a clean one)",
		e.File, strings.Join(parts, "; "), safefile.ShellQuote(e.File), safefile.ShellQuote(e.File))
}

// LoadedFrom is the session file as it was stat'ed when the session was
// loaded; nil when the session was not loaded from a file (standard input,
// bytes in memory). Writers compare it with the file they open
// (os.SameFile) to tell a replaced file.
func (s *Session) LoadedFrom() os.FileInfo { return s.fi }

// SameStart reports whether r (open on the session's file) still holds, in
// its first s.Size bytes, the bytes the session was loaded from: the same
// fingerprint of the size, the first and the last bytes.
func (s *Session) SameStart(r io.ReaderAt) (bool, error) {
	fp, err := fingerprint(r, s.Size)
	if err != nil {
		return false, err
	}
	return fp == s.fp, nil
}
