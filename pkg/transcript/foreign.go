package transcript

import (
	"errors"
	"io/fs"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// The transcript core reads pi JSONL itself; every other format (Claude
// Code, Codex, zstd, OpenClaw's SQLite store) comes in through
// pkg/formats, which translates it to pi v3 lines. The session is then
// built from those lines exactly as from a pi file, and entry line
// numbers are mapped back to the source's lines (or database rows), so
// every reading command works on every format and cites the user's file.

// Format is the source format of the session.
func (s *Session) Format() formats.Format {
	if s.Foreign == nil {
		return formats.Pi
	}
	return s.Foreign.Format
}

// ReadOnly reports whether ctxtool refuses to write this session's file.
func (s *Session) ReadOnly() bool { return !s.Format().Writable() }

// loadForeign loads path through pkg/formats when it is not pi JSONL.
// handled is false for pi files (and for paths that do not exist, which
// the pi reader reports).
func loadForeign(path string) (s *Session, handled bool, err error) {
	v, err := formats.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, true, err
	}
	if v == nil {
		return nil, false, nil
	}
	s, err = loadView(path, v)
	return s, true, err
}

// loadView builds a session from a translated view.
func loadView(name string, v *formats.View) (*Session, error) {
	s, err := load(name, v.ReaderAt(), v.Size())
	if err != nil {
		v.Close()
		return nil, err
	}
	s.Foreign, s.src = v, v.ReaderAt()
	for _, e := range s.Entries {
		e.Line = v.SourceRow(e.Line)
	}
	if s.Header != nil {
		s.Header.Line = v.SourceRow(s.Header.Line)
		s.Header.ContextWindow = v.ContextWindow
	}
	for i := range s.Malformed {
		s.Malformed[i].Line = v.SourceRow(s.Malformed[i].Line)
	}
	for _, m := range v.Malformed {
		s.Malformed = append(s.Malformed, Malformed{Line: m.Line, Bytes: m.Bytes, Err: m.Err})
	}
	return s, nil
}

// CheckWritable refuses (with a *formats.ReadOnlyError saying why and what
// to do instead) a write to a file in a format ctxtool only reads.
func CheckWritable(path string) error { return formats.CheckWritable(path) }
