package conv

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

// LineReader yields lines (without the newline) of any length; a final line
// without newline counts.
type LineReader struct {
	Br   *bufio.Reader
	src  io.Reader // what br reads
	long []byte
	// max bounds one line (0: unbounded).
	max int
}

var ErrLineTooLong = errors.New("line too long")

func NewLineReader(r io.Reader) *LineReader { return NewLineReaderSize(r, 1<<20) }

// readers keeps NewLineReader's 1 MiB buffers for the next file: reading
// a directory of small sessions allocated and cleared one per file (1 GB
// of 3 MB Claude Code files: 1.3 GB of buffers, 7% of estimate's CPU).
var readers sync.Pool

// TakeLineReader is NewLineReader with a buffer from readers; release
// hands it back.
func TakeLineReader(r io.Reader) *LineReader {
	if br, ok := readers.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return &LineReader{Br: br, src: r}
	}
	return NewLineReader(r)
}

// Release hands l's buffer back once nothing reads through it any more
// (nor any slice it handed out: lines are copied by whoever keeps them).
func (l *LineReader) Release() {
	l.Br.Reset(nil)
	readers.Put(l.Br)
	l.Br = nil
}

// NewLineReaderSize reads with a buffer of size bytes (longer lines are
// still read whole).
func NewLineReaderSize(r io.Reader, size int) *LineReader {
	return &LineReader{Br: bufio.NewReaderSize(r, size), src: r}
}

// Rest reads what l has not handed out: the bytes in its buffer, then its
// source directly. The converters read a chunk at a time, a quarter of
// the buffer: through it, every byte of the file was copied once more.
func (l *LineReader) Rest() io.Reader {
	buf, _ := l.Br.Peek(l.Br.Buffered())
	return io.MultiReader(bytes.NewReader(buf), l.src)
}

func (l *LineReader) Peek(n int) ([]byte, error) {
	b, err := l.Br.Peek(n)
	if err == io.EOF || err == bufio.ErrBufferFull {
		err = nil
	}
	return b, err
}

// Next returns the next line; the slice is valid until the next call.
func (l *LineReader) Next() ([]byte, error) {
	l.long = l.long[:0]
	for {
		part, err := l.Br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			l.long = append(l.long, part...)
			if l.max > 0 && len(l.long) > l.max {
				return nil, ErrLineTooLong
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

// spoolBlock is the size of the Spool's memory blocks: fixed blocks, so
// that growing never copies what is written.
const spoolBlock = 1 << 20

// Spool is an append-only byte store readable at any offset: memory first,
// then an unlinked temporary file.
type Spool struct {
	mu   sync.Mutex
	mem  [][]byte // full blocks of spoolBlock bytes, the last one filling
	file *os.File
	w    *bufio.Writer
	Size int64
	// Discard: only the size is kept (a lazy view, see OpenLazy).
	Discard bool
}

func (s *Spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Discard {
		s.Size += int64(len(p))
		return len(p), nil
	}
	if s.file == nil && s.Size+int64(len(p)) > int64(spoolMemory) {
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
	s.Size += int64(len(p))
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

// Finish flushes the file part.
func (s *Spool) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		return s.w.Flush()
	}
	return nil
}

func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	f, mem, size := s.file, s.mem, s.Size
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

func (s *Spool) Close() error {
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

// JSONWriter appends JSON the way JSON.stringify writes it (no HTML escaping,
// compact), which is all the produced pi lines need.
//
// A measuring JSONWriter (skip set) appends nothing: it adds to gone the length
// each write would have, so that a lazy view (OpenLazy) knows every line's
// offset and length without producing the line. keep turns writing back
// on for the parts of a line its reader still reads (see view.keep).
type JSONWriter struct {
	B    []byte
	Skip bool
	// gone is how many bytes of the line being written were measured, not
	// written.
	gone int
}

func (w *JSONWriter) Raw(s string) {
	if w.Skip {
		w.gone += len(s)
		return
	}
	w.B = append(w.B, s...)
}

func (w *JSONWriter) rawb(b []byte) {
	if w.Skip {
		w.gone += len(b)
		return
	}
	w.B = append(w.B, b...)
}

func (w *JSONWriter) Str(s string) {
	if w.Skip {
		w.gone += jsout.StringLen(s)
		return
	}
	w.B = AppendString(w.B, s)
}

func (w *JSONWriter) int(n int64) {
	if w.Skip {
		w.gone += intLen(n)
		return
	}
	w.B = appendInt(w.B, n)
}

// key and FirstKey write a key of this package's own (a plain name, which
// needs no escaping) after a comma or the object's brace.
func (w *JSONWriter) key(k string) {
	if w.Skip {
		w.gone += len(k) + 4
		return
	}
	w.B = append(append(append(w.B, ',', '"'), k...), '"', ':')
}

func (w *JSONWriter) FirstKey(k string) {
	if w.Skip {
		w.gone += len(k) + 4
		return
	}
	w.B = append(append(append(w.B, '{', '"'), k...), '"', ':')
}

// field writes the string field k: v after a comma and returns v as a
// reader of the line decodes it (see written), for Produced.
func (w *JSONWriter) field(k, v string) string {
	w.key(k)
	return w.strWritten(v)
}

// strWritten writes the string v and returns it as a reader of the line
// decodes it (see written). A string written as its own bytes in quotes
// (no escape, no invalid UTF-8: either would have lengthened it) is read
// back as it is, without a second pass over it.
func (w *JSONWriter) strWritten(v string) string {
	var n int
	if w.Skip {
		n = jsout.StringLen(v)
		w.gone += n
	} else {
		at := len(w.B)
		w.Str(v)
		n = len(w.B) - at
	}
	if n == len(v)+2 {
		return v
	}
	return written(v)
}

// id writes the id p and returns it for Produced: as text, as its 16
// bytes for a UUID, as its number for a row id.
func (w *JSONWriter) id(p Pid) (text string, key [16]byte, uuid bool, row uint32, isRow bool) {
	switch {
	case p.UUID:
		if w.Skip {
			w.gone += 38 // a quoted canonical UUID
		} else {
			w.B = append(appendUUID(append(w.B, '"'), p.Key), '"')
		}
		return "", p.Key, true, 0, false
	case p.isRow:
		if w.Skip {
			w.gone += 3 + intLen(int64(p.row)) // "L<row>"
		} else {
			w.B = append(appendInt(append(w.B, '"', 'L'), int64(p.row)), '"')
		}
		return "", key, false, p.row, true
	}
	return w.strWritten(p.text), key, false, 0, false
}

// piLayout is pi's timestamp form (PiForm reads it).
const piLayout = "2006-01-02T15:04:05.000Z"

// PiTime writes the epoch ms ms as a JSON string in pi's form: 26 bytes.
func (w *JSONWriter) piTime(ms int64) {
	if w.Skip {
		w.gone += len(piLayout) + 2
		return
	}
	w.B = append(time.UnixMilli(ms).UTC().AppendFormat(append(w.B, '"'), piLayout), '"')
}

// Str writes an encoded JSON string; nil is "".
func (w *JSONWriter) jstr(s []byte) {
	if s == nil {
		w.Raw(`""`)
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

// JSONString encodes s as a JSON string.
func JSONString(s string) []byte { return AppendString(nil, s) }

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

// ZstdMagic starts a zstd frame.
var ZstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
