package transcript

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// maxHeaderLine bounds the first line ReadHeader reads: a session header is
// a few hundred bytes; a file whose first line is longer has none worth
// reading without Load.
const maxHeaderLine = 1 << 20

// ReadHeader reads only the session header (the first non-blank line) of a
// transcript, for callers that need its id without loading the session
// (checkpoint keys). A file without a header gives a zero Header and no
// error.
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	return ReadHeaderFrom(path, f)
}

// ReadHeaderFrom is ReadHeader reading r (a decompressed stream); path
// names it in errors.
func ReadHeaderFrom(path string, r io.Reader) (Header, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxHeaderLine), 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return Header{}, nil
		}
		if err != nil && err != io.EOF {
			return Header{}, fmt.Errorf("%s: %w", path, err)
		}
		pl := parseLine(trimNewline(line))
		if pl.kind == kindMalformed {
			if k := TrimFileStart(line); len(k) < len(line) {
				pl = parseLine(trimNewline(k)) // a BOM before the header
			}
		}
		switch pl.kind {
		case kindBlank:
			if err == io.EOF {
				return Header{}, nil
			}
			continue
		case kindHeader:
			if pl.header != nil {
				h := *pl.header
				h.Line = lineNo
				return h, nil
			}
		}
		return Header{}, nil
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
