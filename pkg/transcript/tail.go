package transcript

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// LoadTail loads the end of a pi JSONL session file for a reader that read
// its beginning before (the incremental capture): the lines from the first
// one that starts at or after at-back on, numbered as in the file given
// that the line starting at at is line+1. Entries, Malformed and the other
// line lists hold only those lines and Unread says how many were not read;
// Size, Lines and EndsWithNewline are the file's, the header is read from
// its first line. Entry.Index counts from the first line read. When the
// window reaches the header the whole file is read (Unread 0). The session
// is for reading; an error (another format, a v1 session, a header not on
// the first line, at not the start of a line) means: Load the file.
func LoadTail(path string, at int64, line int, back int64) (*Session, error) {
	if sn, err := formats.SniffFile(path); err != nil || sn.Format != formats.Pi {
		return nil, fmt.Errorf("%s: not a pi JSONL file (%w): load it whole", path, err)
	}
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	st, err := tailStart(f, fi.Size(), at, line, back)
	var s *Session
	if err == nil {
		s, err = loadFrom(path, f, fi.Size(), st)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: load it whole", path, err)
	}
	s.file, s.src = f, f
	return s, nil
}

// tailStart is where LoadTail starts reading: the start of the file when
// at-back is within the header's line, else the first line start at or
// after at-back, numbered from line.
func tailStart(r io.ReaderAt, size, at int64, line int, back int64) (start, error) {
	hdr, hdrEnd, err := firstLineHeader(r, size)
	if err != nil {
		return start{}, err
	}
	if hdr.Version < 2 {
		return start{}, fmt.Errorf("a v%d session numbers its entries from the start", hdr.Version)
	}
	if at > size || at < hdrEnd || line < 1 {
		return start{}, fmt.Errorf("offset %d (line %d) is not in the file", at, line)
	}
	var nl [1]byte
	if _, err := r.ReadAt(nl[:], at-1); err != nil || nl[0] != '\n' {
		return start{}, fmt.Errorf("offset %d is not the start of a line", at)
	}
	if at-back <= hdrEnd {
		return start{}, nil
	}
	// The window: from the line after the newline at or after at-back-1.
	buf := make([]byte, back+1)
	if _, err := r.ReadAt(buf, at-back-1); err != nil {
		return start{}, err
	}
	i := bytes.IndexByte(buf, '\n') // buf ends in one: at's
	off := at - back + int64(i)
	first := line - bytes.Count(buf[i+1:], []byte{'\n'})
	if first < 1 {
		return start{}, fmt.Errorf("line %d at offset %d has more lines before it", line, at)
	}
	return start{off: off, line: first, header: hdr}, nil
}

// firstLineHeader is the header on the file's first line and the offset
// after that line. A first line Load reads otherwise (a byte order mark
// before it, trailing Unicode whitespace) is an error: load it whole.
func firstLineHeader(r io.ReaderAt, size int64) (*Header, int64, error) {
	end, nl, err := lineEnd(r, 0, min(size, maxHeaderLine), make([]byte, 64<<10))
	if err != nil {
		return nil, 0, err
	}
	if !nl {
		return nil, 0, fmt.Errorf("no header line")
	}
	raw := make([]byte, end)
	if _, err := r.ReadAt(raw, 0); err != nil {
		return nil, 0, err
	}
	pl := parseLine(raw)
	if pl.kind != kindHeader || pl.header.ID == "" {
		return nil, 0, fmt.Errorf("the first line is not a session header")
	}
	pl.header.Line = 1
	return pl.header, end + 1, nil
}
