package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxtool/ctxtool/pkg/internal/jsout"
)

// lineReader yields lines (without the newline) of any length; a final line
// without newline counts.
type lineReader struct {
	br   *bufio.Reader
	src  io.Reader // what br reads
	long []byte
	// max bounds one line (0: unbounded).
	max int
}

var errLineTooLong = errors.New("line too long")

func newLineReader(r io.Reader) *lineReader { return newLineReaderSize(r, 1<<20) }

// readers keeps newLineReader's 1 MiB buffers for the next file: reading
// a directory of small sessions allocated and cleared one per file (1 GB
// of 3 MB Claude Code files: 1.3 GB of buffers, 7% of estimate's CPU).
var readers sync.Pool

// takeLineReader is newLineReader with a buffer from readers; release
// hands it back.
func takeLineReader(r io.Reader) *lineReader {
	if br, ok := readers.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return &lineReader{br: br, src: r}
	}
	return newLineReader(r)
}

// release hands l's buffer back once nothing reads through it any more
// (nor any slice it handed out: lines are copied by whoever keeps them).
func (l *lineReader) release() {
	l.br.Reset(nil)
	readers.Put(l.br)
	l.br = nil
}

// newLineReaderSize reads with a buffer of size bytes (longer lines are
// still read whole).
func newLineReaderSize(r io.Reader, size int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, size), src: r}
}

// rest reads what l has not handed out: the bytes in its buffer, then its
// source directly. The converters read a chunk at a time, a quarter of
// the buffer: through it, every byte of the file was copied once more.
func (l *lineReader) rest() io.Reader {
	buf, _ := l.br.Peek(l.br.Buffered())
	return io.MultiReader(bytes.NewReader(buf), l.src)
}

func (l *lineReader) peek(n int) ([]byte, error) {
	b, err := l.br.Peek(n)
	if err == io.EOF || err == bufio.ErrBufferFull {
		err = nil
	}
	return b, err
}

// next returns the next line; the slice is valid until the next call.
func (l *lineReader) next() ([]byte, error) {
	l.long = l.long[:0]
	for {
		part, err := l.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			l.long = append(l.long, part...)
			if l.max > 0 && len(l.long) > l.max {
				return nil, errLineTooLong
			}
			continue
		}
		if err == io.EOF {
			if len(part) == 0 && len(l.long) == 0 {
				return nil, io.EOF
			}
			if len(l.long) > 0 {
				return append(l.long, part...), nil
			}
			return part, nil
		}
		if err != nil {
			return nil, err
		}
		part = part[:len(part)-1]
		if len(l.long) > 0 {
			l.long = append(l.long, part...)
			return l.long, nil
		}
		return part, nil
	}
}

// spoolMemory is how much of a produced view stays in memory before the
// rest goes to a temporary file.
var spoolMemory = 32 << 20

// spoolBlock is the size of the spool's memory blocks: fixed blocks, so
// that growing never copies what is written.
const spoolBlock = 1 << 20

// spool is an append-only byte store readable at any offset: memory first,
// then an unlinked temporary file.
type spool struct {
	mu   sync.Mutex
	mem  [][]byte // full blocks of spoolBlock bytes, the last one filling
	file *os.File
	w    *bufio.Writer
	size int64
	// discard: only the size is kept (a lazy view, see OpenLazy).
	discard bool
}

func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.discard {
		s.size += int64(len(p))
		return len(p), nil
	}
	if s.file == nil && s.size+int64(len(p)) > int64(spoolMemory) {
		f, err := os.CreateTemp("", "ctxtool-view-*.jsonl")
		if err != nil {
			return 0, fmt.Errorf("temporary file for the converted transcript: %w (set TMPDIR to a writable directory)", err)
		}
		os.Remove(f.Name()) // unlinked: nothing is left behind, even after kill -9
		s.file = f
		s.w = bufio.NewWriterSize(f, 1<<20)
		for _, b := range s.mem {
			if _, err := s.w.Write(b); err != nil {
				return 0, err
			}
		}
		s.mem = nil
	}
	s.size += int64(len(p))
	if s.file != nil {
		return s.w.Write(p)
	}
	for rest := p; len(rest) > 0; {
		if len(s.mem) == 0 {
			// Small views (a line's, in recall) stay small: the first
			// block grows as needed, the next ones are allocated whole.
			s.mem = append(s.mem, make([]byte, 0, min(spoolBlock, 4096)))
		} else if len(s.mem[len(s.mem)-1]) == spoolBlock {
			s.mem = append(s.mem, make([]byte, 0, spoolBlock))
		}
		last := &s.mem[len(s.mem)-1]
		n := min(len(rest), spoolBlock-len(*last))
		*last = append(*last, rest[:n]...)
		rest = rest[n:]
	}
	return len(p), nil
}

// finish flushes the file part.
func (s *spool) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		return s.w.Flush()
	}
	return nil
}

func (s *spool) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	f, mem, size := s.file, s.mem, s.size
	s.mu.Unlock()
	if f != nil {
		return f.ReadAt(p, off)
	}
	n := 0
	for n < len(p) && off < size {
		b := mem[off/spoolBlock][off%spoolBlock:]
		c := copy(p[n:], b)
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (s *spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem = nil
	if s.file != nil {
		err := s.file.Close()
		s.file = nil
		return err
	}
	return nil
}

// jsonw appends JSON the way JSON.stringify writes it (no HTML escaping,
// compact), which is all the produced pi lines need.
//
// A measuring jsonw (skip set) appends nothing: it adds to gone the length
// each write would have, so that a lazy view (OpenLazy) knows every line's
// offset and length without producing the line. keep turns writing back
// on for the parts of a line its reader still reads (see view.keep).
type jsonw struct {
	b    []byte
	skip bool
	// gone is how many bytes of the line being written were measured, not
	// written.
	gone int
}

func (w *jsonw) raw(s string) {
	if w.skip {
		w.gone += len(s)
		return
	}
	w.b = append(w.b, s...)
}

func (w *jsonw) rawb(b []byte) {
	if w.skip {
		w.gone += len(b)
		return
	}
	w.b = append(w.b, b...)
}

func (w *jsonw) str(s string) {
	if w.skip {
		w.gone += jsout.StringLen(s)
		return
	}
	w.b = AppendString(w.b, s)
}

func (w *jsonw) int(n int64) {
	if w.skip {
		w.gone += intLen(n)
		return
	}
	w.b = appendInt(w.b, n)
}

// key and firstKey write a key of this package's own (a plain name, which
// needs no escaping) after a comma or the object's brace.
func (w *jsonw) key(k string) {
	if w.skip {
		w.gone += len(k) + 4
		return
	}
	w.b = append(append(append(w.b, ',', '"'), k...), '"', ':')
}

func (w *jsonw) firstKey(k string) {
	if w.skip {
		w.gone += len(k) + 4
		return
	}
	w.b = append(append(append(w.b, '{', '"'), k...), '"', ':')
}

// field writes the string field k: v after a comma and returns v as a
// reader of the line decodes it (see written), for Produced.
func (w *jsonw) field(k, v string) string {
	w.key(k)
	return w.strWritten(v)
}

// strWritten writes the string v and returns it as a reader of the line
// decodes it (see written). A string written as its own bytes in quotes
// (no escape, no invalid UTF-8: either would have lengthened it) is read
// back as it is, without a second pass over it.
func (w *jsonw) strWritten(v string) string {
	var n int
	if w.skip {
		n = jsout.StringLen(v)
		w.gone += n
	} else {
		at := len(w.b)
		w.str(v)
		n = len(w.b) - at
	}
	if n == len(v)+2 {
		return v
	}
	return written(v)
}

// id writes the id p and returns it for Produced: as text, as its 16
// bytes for a UUID, as its number for a row id.
func (w *jsonw) id(p pid) (text string, key [16]byte, uuid bool, row uint32, isRow bool) {
	switch {
	case p.uuid:
		if w.skip {
			w.gone += 38 // a quoted canonical UUID
		} else {
			w.b = append(appendUUID(append(w.b, '"'), p.key), '"')
		}
		return "", p.key, true, 0, false
	case p.isRow:
		if w.skip {
			w.gone += 3 + intLen(int64(p.row)) // "L<row>"
		} else {
			w.b = append(appendInt(append(w.b, '"', 'L'), int64(p.row)), '"')
		}
		return "", key, false, p.row, true
	}
	return w.strWritten(p.text), key, false, 0, false
}

// piLayout is pi's timestamp form (piForm reads it).
const piLayout = "2006-01-02T15:04:05.000Z"

// piTime writes the epoch ms ms as a JSON string in pi's form: 26 bytes.
func (w *jsonw) piTime(ms int64) {
	if w.skip {
		w.gone += len(piLayout) + 2
		return
	}
	w.b = append(time.UnixMilli(ms).UTC().AppendFormat(append(w.b, '"'), piLayout), '"')
}

// jstr writes an encoded JSON string; nil is "".
func (w *jsonw) jstr(s []byte) {
	if s == nil {
		w.raw(`""`)
		return
	}
	w.rawb(s)
}

// intLen is len(appendInt(nil, n)).
func intLen(n int64) int {
	l := 1
	if n < 0 {
		l++
		if n == -n { // the smallest int64: appendInt writes what -n is
			return len(appendInt(nil, n))
		}
		n = -n
	}
	for n >= 10 {
		n /= 10
		l++
	}
	return l
}

// jsonString encodes s as a JSON string.
func jsonString(s string) []byte { return AppendString(nil, s) }

func appendInt(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// AppendString is the one JSON string writer, jsout.AppendString (see
// there for the rule), under the name internal/sessiongen uses.
func AppendString(b []byte, s string) []byte { return jsout.AppendString(b, s) }

// isObject reports whether raw starts a JSON object.
func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}
