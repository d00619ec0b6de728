package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/internal/slots"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Session is a loaded session file: header, entry metadata in file order,
// and the malformed lines pi would drop. Content stays on disk.
type Session struct {
	File    string
	Size    int64
	Header  *Header
	Version int
	Entries []*Entry
	// Malformed lists lines JSON.parse rejects (pi drops them silently).
	Malformed []Malformed
	// NonObjects lists lines that are valid JSON but not objects.
	NonObjects []int
	// Extra headers: later lines of type "session" (ignored by pi).
	ExtraHeaders []int
	Blank        []int
	Lines        int // physical lines (a final line without newline counts)
	// EndsWithNewline is false when the last byte is not '\n' (appends must
	// add one first, or the appended line glues onto the last one).
	EndsWithNewline bool
	// Unread is, for a session loaded by LoadTail, the number of lines
	// before the first one read (0 for Load): their entries are not in
	// Entries, and Parent and ByID do not find them.
	Unread int
	// Oversized lists lines over MaxLineBytes (not read into memory).
	Oversized []Oversized
	// Warnings name lines read in a defined but lossy way: out-of-range
	// numbers clamped, oversized entries not counted.
	Warnings []Warning
	// Foreign is the translated source when the file is not pi JSONL
	// (foreign.go); nil for pi files.
	Foreign *formats.View

	byID *idIndex
	// dups are entries whose id an earlier entry already has.
	dups []*Entry
	src  io.ReaderAt
	file *os.File
	mu   sync.Mutex
	// fi and fp identify the bytes the session was loaded from (the file,
	// and a hash of its first and last bytes up to Size): a write checks
	// them under the lock.
	fi os.FileInfo
	fp [32]byte
}

// Oversized is a line over MaxLineBytes.
type Oversized struct {
	Line   int
	Offset int64
	Bytes  int64
}

// Warning is something odd on a line that ctxtool read in a defined way.
type Warning struct {
	Line int
	Msg  string
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Msg) }

// Notes are what every command reports about how the file was read: the
// foreign reader's notes and the lossy-read warnings, as text.
func (s *Session) Notes() []string {
	var out []string
	if s.Foreign != nil {
		out = append(out, s.Foreign.Notes...)
	}
	for _, w := range s.Warnings {
		out = append(out, w.String())
	}
	return out
}

// InvalidHeaderError means the first parseable line is not a session header:
// pi would treat the file as empty and overwrite it.
type InvalidHeaderError struct {
	File string
	Line int
}

func (e *InvalidHeaderError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: no session header: the file has no parseable line (is it a pi/OpenClaw session?)", e.File)
	}
	return fmt.Sprintf("%s:%d: not a session header (the first record must be {\"type\":\"session\",\"id\":…}); pi would treat this file as empty and overwrite it — check that this is a pi/OpenClaw session file", e.File, e.Line)
}

// Load reads and indexes a session file. "-" reads standard input.
func Load(path string) (*Session, error) {
	if path == "-" {
		f, size, err := SpoolStdin()
		if err != nil {
			return nil, err
		}
		b := newProduced("-")
		if v, err := formats.OpenReader("-", f, b.add); err != nil || v != nil {
			f.Close() // a foreign view holds its own copy
			if err != nil {
				return nil, err
			}
			return b.load(v)
		}
		return LoadOpen("-", f, size)
	}
	if s, handled, err := loadForeign(path, formats.Open); handled {
		return s, err
	}
	f, st, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	s, err := load(path, f, st.Size())
	if err == nil {
		s.fp, err = fingerprint(f, s.Size)
		if err != nil {
			err = fmt.Errorf("%s: read: %w", path, err)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	s.file = f
	s.src = f
	s.fi = st
	return s, nil
}

// openRegular opens a file for reading, refusing at once anything that is
// not a regular file: a FIFO would block the read forever, a device never
// end, a directory is not a session. The open itself does not block on a
// FIFO swapped in at the last moment.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	} else if err := checkRegular(path, st); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	st, err := f.Stat()
	if err == nil {
		err = checkRegular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// NotRegularError refuses a path that is not a regular file.
type NotRegularError = safefile.NotRegularError

func checkRegular(path string, st os.FileInfo) error { return safefile.CheckRegular(path, st) }

// fingerprintSpan is how much of each end of a file fingerprint hashes.
const fingerprintSpan = 4096

// fingerprint hashes the first and last fingerprintSpan bytes of the first
// size bytes of r.
func fingerprint(r io.ReaderAt, size int64) ([32]byte, error) {
	h := sha256.New()
	var sz [8]byte
	binary.LittleEndian.PutUint64(sz[:], uint64(size))
	h.Write(sz[:])
	head := min(size, fingerprintSpan)
	tailFrom := max(head, size-fingerprintSpan)
	for _, span := range [][2]int64{{0, head}, {tailFrom, size}} {
		if span[1] <= span[0] {
			continue
		}
		if _, err := io.Copy(h, io.NewSectionReader(r, span[0], span[1]-span[0])); err != nil {
			return [32]byte{}, err
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// SpoolStdin copies standard input into an unlinked temporary file and
// returns it rewound. A session piped in is then read like a session file —
// indexed in one pass, content read back on demand — instead of being held
// in memory whole (a multi-GB pipe would need as much RAM). Nothing is left
// on disk: the file has no name, and the space is freed on close or exit.
func SpoolStdin() (*os.File, int64, error) {
	f, err := os.CreateTemp("", "ctxtool-stdin-*")
	if err != nil {
		return nil, 0, fmt.Errorf("stdin: cannot spool to a temporary file: %w (set TMPDIR to a writable directory)", safefile.PathCause(err))
	}
	os.Remove(f.Name())
	size, err := io.Copy(f, os.Stdin)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stdin: %w (is TMPDIR full?)", err)
	}
	return f, size, nil
}

// LoadOpen indexes a session from a file that is already open and rewound
// (standard input spooled by SpoolStdin); the session owns f and closes it.
// It can be read, not written: there is no path to append to.
func LoadOpen(name string, f *os.File, size int64) (*Session, error) {
	s, err := load(name, f, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.file = f
	s.src = f
	return s, nil
}

// Close releases the file handle used for reading content back.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Foreign != nil {
		s.Foreign.Close()
	}
	if s.file != nil {
		err := s.file.Close()
		s.file = nil
		return err
	}
	return nil
}

// batch is a run of complete lines handed to a parser goroutine.
type batch struct {
	seq       int
	data      []byte // complete lines, each ending in '\n' except possibly the file's last
	firstLine int
	offset    int64
	pooled    bool
	// oversize is the length of a line over MaxLineBytes of which data
	// holds only the head; endsNL says whether a newline follows it.
	oversize int64
	endsNL   bool
	lines    *lineSlices
}

const chunkSize = 1 << 20

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// load streams the file in chunks, splits complete lines, parses batches of
// lines on every core, and assembles the results in file order. Memory is
// bounded by the chunks in flight plus the entry metadata.
func load(name string, r io.ReaderAt, size int64) (*Session, error) {
	return loadFrom(name, r, size, start{})
}

// start is where loadFrom begins: the start of the file, or (LoadTail) the
// start of a line after the header, read before.
type start struct {
	off    int64
	line   int     // lines before off
	header *Header // nil: the file's first parsed line
}

// loadFrom is load of the lines from st on.
func loadFrom(name string, r io.ReaderAt, size int64, st start) (*Session, error) {
	workers := runtime.GOMAXPROCS(0)
	if workers > 8 {
		workers = 8
	}
	jobs := make(chan *batch, workers*2)
	done := make(chan *batch, workers*2)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p parser
			for b := range jobs {
				parseBatch(b, &p)
				done <- b
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		readErr <- produce(r, st, size, jobs)
		close(jobs)
		wg.Wait()
		close(done)
	}()

	// A line start after the header ends a line: nothing after it leaves
	// the file without its newline.
	s := &Session{File: name, Size: size, byID: &idIndex{}, Header: st.header,
		Lines: st.line, Unread: st.line, EndsWithNewline: st.off > 0}
	asm := assembler{s: s, pending: map[int]*batch{}, from: st.off, size: size}
	if st.header != nil {
		// Later "session" lines are extra headers, and no leading
		// whitespace is the file's.
		asm.firstParsedLine, asm.seenContent, asm.index = st.header.Line, true, 1
	}
	for b := range done {
		asm.pending[b.seq] = b
		for {
			nb, ok := asm.pending[asm.next]
			if !ok {
				break
			}
			delete(asm.pending, asm.next)
			asm.add(nb)
			asm.next++
		}
	}
	if err := <-readErr; err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	asm.finishTrailing()
	if asm.bigLines {
		// The buffers of lines that were read whole are garbage now; with
		// GOGC's default the heap would otherwise grow to twice their size
		// again before the next collection, so a command holding one such
		// line twice would reach four times its size.
		runtime.GC()
	}
	if s.Header == nil {
		return nil, &InvalidHeaderError{File: name, Line: asm.firstParsedLine}
	}
	s.Version = s.Header.Version
	s.finish()
	return s, nil
}

// MaxLineBytes caps a single line: a longer one is not read into memory.
// It stays in the tree (its type, id and parentId are read from its first
// bytes, where pi writes them) but its content is not counted or decoded,
// and the session reports it (Session.Oversized, a warning). 256 MiB is
// half of what Node can hold as one string, beyond which pi cannot read
// the file at all.
const MaxLineBytes = 256 << 20

// maxLineBytes is MaxLineBytes (tests lower it).
var maxLineBytes int64 = MaxLineBytes

// oversizeHead is how much of an oversized line is read for its metadata.
const oversizeHead = 64 << 10

// produce reads the file and emits batches of whole lines.
// readerCopied and readerScanned count the bytes produce copies between
// buffers and scans for newlines, so a test can prove the work is linear in
// the file size however long its lines are (a test reading them must be the
// only Load running).
var readerCopied, readerScanned atomic.Int64

func produce(r io.ReaderAt, st start, size int64, jobs chan<- *batch) error {
	off := st.off
	seq, line := 0, st.line+1
	// carry is the start of a line whose end has not been read yet (less
	// than a chunk); it never contains a newline.
	var carry []byte
	var scratch []byte
	for off < size || len(carry) > 0 {
		bp := chunkPool.Get().(*[]byte)
		buf := append((*bp)[:0], carry...)
		readerCopied.Add(int64(len(carry)))
		scanned := len(carry) // known to hold no newline
		start := off - int64(len(carry))
		if off < size {
			var err error
			if buf, off, size, err = fillChunk(r, buf, off, size); err != nil {
				chunkPool.Put(bp)
				return err
			}
		}
		cut := 0
		readerScanned.Add(int64(len(buf) - scanned))
		if i := bytes.LastIndexByte(buf[scanned:], '\n'); i >= 0 {
			cut = scanned + i + 1
		}
		if off >= size {
			cut = len(buf) // the last line may lack a newline
		}
		if cut == 0 {
			// A line longer than a chunk: find its end without keeping
			// it, then read it whole once into a buffer of its exact size
			// (or, over MaxLineBytes, only its head).
			chunkPool.Put(bp)
			if scratch == nil {
				scratch = make([]byte, chunkSize)
			}
			b, end, err := longLine(r, start, off, size, scratch)
			if err != nil {
				return err
			}
			b.seq, b.firstLine = seq, line
			off, carry = end, nil
			seq++
			line++
			jobs <- b
			continue
		}
		// The rest must not alias the batch, which a parser now owns.
		carry = append(carry[:0:0], buf[cut:]...)
		b := &batch{seq: seq, data: buf[:cut], firstLine: line, offset: start, pooled: true}
		line += bytes.Count(b.data, []byte{'\n'})
		if buf[cut-1] != '\n' {
			line++
		}
		seq++
		jobs <- b
		if off >= size && len(carry) == 0 {
			break
		}
	}
	return nil
}

// fillChunk reads into buf's free capacity from off, up to size, and
// returns the grown buffer, the new offset and the size (cut to off when the
// file shrank under us).
func fillChunk(r io.ReaderAt, buf []byte, off, size int64) ([]byte, int64, int64, error) {
	want := cap(buf) - len(buf)
	if int64(want) > size-off {
		want = int(size - off)
	}
	n, err := r.ReadAt(buf[len(buf):len(buf)+want], off)
	if err != nil && err != io.EOF {
		return buf, off, size, err
	}
	if n == 0 && err == io.EOF {
		size = off // the file shrank under us; stop here
	}
	return buf[:len(buf)+n], off + int64(n), size, nil
}

// longLine reads the line starting at start, whose end lies beyond off:
// it finds the end without keeping the bytes, then reads the line whole
// once into a buffer of its exact size (over MaxLineBytes, only its head).
// It returns the batch (seq and firstLine left to the caller) and the
// offset after the line.
func longLine(r io.ReaderAt, start, off, size int64, scratch []byte) (*batch, int64, error) {
	end, nl, err := lineEnd(r, off, size, scratch)
	if err != nil {
		return nil, 0, err
	}
	b := &batch{offset: start, endsNL: nl}
	if n := end - start; n > maxLineBytes {
		b.oversize = n
		b.data = make([]byte, oversizeHead)
	} else {
		if n >= bigLine {
			// What the caller decoded of this session before loading it
			// again (compact verifying the file it appended to: the
			// summarised 200 MB line) is garbage by now, but at GOGC's
			// default the heap holds it until it reaches twice what was
			// live: collect it before holding this line too (plain
			// compact on a 210 MB line: 552 MB peak RSS).
			runtime.GC()
		}
		b.data = make([]byte, n, n+1) // room for the newline
	}
	if _, err := r.ReadAt(b.data, start); err != nil && err != io.EOF {
		return nil, 0, err
	}
	if nl {
		b.data = append(b.data, '\n')
		end++
	}
	return b, end, nil
}

// LastNewline is the offset of the last '\n' of r in [from, end), -1 when
// there is none: where the last whole line ends, for a reader that must not
// take a line still being written (a rewrite's carry, a capture's mark).
func LastNewline(r io.ReaderAt, from, end int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end > from {
		start := max(from, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := r.ReadAt(b, start); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// lineEnd scans from off for the next newline and returns its offset (or
// size when the line runs to the end of the file without one).
func lineEnd(r io.ReaderAt, off, size int64, scratch []byte) (end int64, newline bool, err error) {
	for off < size {
		want := int64(len(scratch))
		if want > size-off {
			want = size - off
		}
		n, err := r.ReadAt(scratch[:want], off)
		if err != nil && err != io.EOF {
			return 0, false, err
		}
		if n == 0 {
			return off, false, nil // shrank under us
		}
		readerScanned.Add(int64(n))
		if i := bytes.IndexByte(scratch[:n], '\n'); i >= 0 {
			return off + int64(i), true, nil
		}
		off += int64(n)
	}
	return size, false, nil
}

// lineSlices are a batch's parsed lines and their start offsets within its
// data. They are reused from batch to batch: growing them anew for each
// batch was a third of what loading a 1 GB session allocated.
type lineSlices struct {
	results []parsedLine
	offsets []int32
}

var lineSlicesPool = sync.Pool{New: func() any { return new(lineSlices) }}

func parseBatch(b *batch, p *parser) {
	b.lines = lineSlicesPool.Get().(*lineSlices)
	ls := b.lines
	if b.oversize > 0 {
		ls.offsets = append(ls.offsets, 0)
		ls.results = append(ls.results, parseHead(bytes.TrimSuffix(b.data, []byte{'\n'})))
		return
	}
	data := b.data
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		var ln []byte
		if end < 0 {
			ln = data[pos:]
			end = len(data)
		} else {
			ln = data[pos : pos+end]
			end = pos + end + 1
		}
		ls.offsets = append(ls.offsets, int32(pos))
		pl := parseLineIn(ln, p)
		if pl.kind == kindMalformed {
			pl.header = nil
		}
		ls.results = append(ls.results, pl)
		pos = end
	}
}

type assembler struct {
	s               *Session
	next            int
	pending         map[int]*batch
	index           int // pi's array index of the next parsed record
	firstParsedLine int
	seenContent     bool // a non-blank line was placed
	bigLines        bool // a line over bigLine was read whole
	// trailing is a malformed line that would parse without trailing
	// Unicode whitespace: pi trims the end of the file, so if it stays the
	// last non-blank line it is read that way.
	trailing *trailingAlt
	// from and size are the offsets where reading began and ends, from
	// which reserve foresees how many entries the file holds.
	from, size int64
}

type trailingAlt struct {
	pl      parsedLine
	lineNo  int
	off     int64
	length  int
	malfIdx int
}

// bigLine is the size from which a line read whole is worth a collection
// once it is garbage.
const bigLine = 16 << 20

func (a *assembler) add(b *batch) {
	s := a.s
	if len(b.data) >= bigLine {
		a.bigLines = true
	}
	results, offsets := b.lines.results, b.lines.offsets
	for i, pl := range results {
		lineNo := b.firstLine + i
		start := int(offsets[i])
		end := len(b.data)
		if i+1 < len(offsets) {
			end = int(offsets[i+1])
		}
		raw := b.data[start:end]
		endsNL := len(raw) > 0 && raw[len(raw)-1] == '\n'
		if endsNL {
			raw = raw[:len(raw)-1]
		}
		s.Lines = lineNo
		off := b.offset + int64(start)
		length := len(raw)
		if b.oversize > 0 {
			length = int(b.oversize)
			endsNL = b.endsNL
			s.Oversized = append(s.Oversized, Oversized{Line: lineNo, Offset: off, Bytes: b.oversize})
		}
		if pl.kind != kindBlank {
			a.trailing = nil
			if !a.seenContent && pl.kind == kindMalformed && b.oversize == 0 {
				// pi trims the whole file first: leading Unicode
				// whitespace (a BOM) before the first line is not part of it.
				if k := len(raw) - len(TrimFileStart(raw)); k > 0 {
					if alt := parseLine(raw[k:]); alt.kind != kindMalformed {
						pl, off, length = alt, off+int64(k), length-k
					}
				}
			}
			a.seenContent = true
		}
		a.place(pl, lineNo, off, length, raw, endsNL, b.oversize > 0)
		if pl.kind == kindMalformed && b.oversize == 0 {
			if k := jsTrimRight(raw); k < len(raw) {
				if alt := parseLine(raw[:k]); alt.kind != kindMalformed {
					a.trailing = &trailingAlt{pl: alt, lineNo: lineNo, off: off, length: k, malfIdx: len(s.Malformed) - 1}
				}
			}
		}
	}
	if len(b.data) > 0 {
		s.EndsWithNewline = b.data[len(b.data)-1] == '\n'
	}
	if b.pooled {
		buf := b.data[:0:chunkSize]
		chunkPool.Put(&buf)
	}
	clear(results) // the pool must not keep entries alive
	b.lines.results, b.lines.offsets = results[:0], offsets[:0]
	lineSlicesPool.Put(b.lines)
	b.data, b.lines = nil, nil
}

// reserve grows a full s.Entries, before the entry at offset off is
// added, to what the rest of the file holds at the density of entries read
// so far (up to three times what it holds, so that a file whose tail is a
// few huge lines does not reserve for small ones). Grown by append, the
// array of a 1 GB session's 740k entries was copied a dozen times, 5% of
// loading it.
func (a *assembler) reserve(off int64) {
	s := a.s
	n := len(s.Entries)
	if n < cap(s.Entries) || n < 1024 || off <= a.from || off >= a.size {
		return
	}
	rest := float64(a.size-off) / float64(off-a.from) * float64(n)
	s.Entries = slices.Grow(s.Entries, int(min(rest*1.05, float64(3*n)))+1)
}

// finishTrailing reads the last non-blank line as pi does when only
// trailing Unicode whitespace made it malformed.
func (a *assembler) finishTrailing() {
	t := a.trailing
	if t == nil {
		return
	}
	s := a.s
	s.Malformed = append(s.Malformed[:t.malfIdx], s.Malformed[t.malfIdx+1:]...)
	a.place(t.pl, t.lineNo, t.off, t.length, nil, true, false)
}

// place records one parsed line in the session.
func (a *assembler) place(pl parsedLine, lineNo int, off int64, length int, raw []byte, endsNL, oversized bool) {
	s := a.s
	for _, w := range pl.warns {
		s.Warnings = append(s.Warnings, Warning{Line: lineNo, Msg: w})
	}
	switch pl.kind {
	case kindBlank:
		if length > 0 || endsNL {
			s.Blank = append(s.Blank, lineNo)
		}
	case kindMalformed:
		var m Malformed
		if oversized {
			m = Malformed{Bytes: length, Err: fmt.Sprintf("over the %d MiB line cap and does not start like a session entry", MaxLineBytes>>20), Truncated: !endsNL}
		} else {
			m = diagnose(pl, raw, endsNL)
		}
		m.Line, m.Offset = lineNo, off
		s.Malformed = append(s.Malformed, m)
	case kindNonObject:
		if a.firstParsedLine == 0 {
			a.firstParsedLine = lineNo
		}
		s.NonObjects = append(s.NonObjects, lineNo)
		a.index++
	case kindHeader:
		if a.firstParsedLine == 0 {
			a.firstParsedLine = lineNo
			if pl.header.ID != "" {
				pl.header.Line = lineNo
				s.Header = pl.header
			}
		} else {
			s.ExtraHeaders = append(s.ExtraHeaders, lineNo)
		}
		a.index++
	case kindEntry:
		if a.firstParsedLine == 0 {
			a.firstParsedLine = lineNo
		}
		e := pl.entry
		e.Line, e.Offset, e.Length = lineNo, off, length
		e.placeSystem()
		if oversized {
			e.Oversized = true
			e.Chars, e.Images, e.Wide, e.ThinkingChars = 0, 0, 0, 0
			s.Warnings = append(s.Warnings, Warning{Line: lineNo, Msg: fmt.Sprintf("the %s entry %s is %d MiB, over the %d MiB line cap: it stays in the tree but its content is not read or counted",
				e.Type(), e.ID(), length>>20, MaxLineBytes>>20)})
		}
		a.index++
		e.Index = a.index - 1
		a.reserve(off)
		s.Entries = append(s.Entries, e)
	}
}

// finish gives v1 entries their ids and builds the id index.
func (s *Session) finish() { s.finishFrom(0) }

// finishFrom does finish's work for the entries from index start on (the
// earlier ones are already finished).
func (s *Session) finishFrom(start int) {
	added := s.Entries[start:]
	if s.Version < 2 {
		var prev string
		if start > 0 {
			prev = s.Entries[start-1].ID()
		}
		for _, e := range added {
			e.setID(fmt.Sprintf("v1:L%d", e.Line))
			e.setParentID(prev)
			prev = e.ID()
		}
		for _, e := range added {
			if e.Type() == "compaction" && e.FirstKeptEntryIndex() >= 0 {
				// pi resolves the index while assigning ids in file order, so
				// a target after the compaction has no id yet: nothing kept.
				if t := s.entryAtIndex(e.FirstKeptEntryIndex()); t != nil && t.Index <= e.Index {
					e.more().firstKeptEntryID = t.ID()
				}
			}
		}
	}
	x := s.byID
	x.entries = s.Entries
	x.reserve(len(added))
	for i, e := range added {
		if e.forms.id() != idNone && x.positionOfKey(e.key()) >= 0 {
			s.dups = append(s.dups, e)
		}
		x.put(start + i)
		if e.Role() == "hookMessage" {
			if s.Version < 3 {
				n := *e.names
				n.role = "custom" // pi's v2→v3 migration renames it
				e.names = internNames(n)
			} else {
				e.Chars = 0 // an unknown role in a v3 file: pi counts nothing
			}
		}
	}
}

// WithAppended returns the session as it would be after appending lines
// (each one JSON entry without its newline), without writing or re-reading
// the file: planners use it to measure a result before committing to it.
// The new session shares the original's entries and reads their content
// through it, so the original must stay open while the new one is used.
func (s *Session) WithAppended(lines ...[]byte) (*Session, error) {
	n := &Session{File: s.File, Header: s.Header, Version: s.Version, Malformed: s.Malformed,
		NonObjects: s.NonObjects, ExtraHeaders: s.ExtraHeaders, Blank: s.Blank, EndsWithNewline: true, dups: s.dups,
		byID: &idIndex{base: s.byID}}
	n.Entries = append(s.Entries[:len(s.Entries):len(s.Entries)], make([]*Entry, 0, len(lines))...)
	var extra []byte
	if s.Size > 0 && !s.EndsWithNewline {
		extra = append(extra, '\n')
	}
	index := 1 // header
	if len(s.Entries) > 0 {
		index = s.Entries[len(s.Entries)-1].Index + 1
	}
	for i, line := range lines {
		pl := parseLine(line)
		if pl.kind != kindEntry {
			return nil, fmt.Errorf("%s: internal error: appended entry %d is not a valid entry (%s)", s.File, i+1, pl.err)
		}
		e := pl.entry
		e.Line, e.Offset, e.Length, e.Index = s.Lines+1+i, s.Size+int64(len(extra)), len(line), index+i
		e.placeSystem()
		extra = append(append(extra, line...), '\n')
		n.Entries = append(n.Entries, e)
	}
	n.Lines = s.Lines + len(lines)
	n.Size = s.Size + int64(len(extra))
	n.src = appendedReader{base: s, baseSize: s.Size, extra: extra}
	n.finishFrom(len(s.Entries))
	return n, nil
}

// appendedReader reads the original file below baseSize and the appended
// bytes above it.
type appendedReader struct {
	base     *Session
	baseSize int64
	extra    []byte
}

func (r appendedReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.baseSize {
		off -= r.baseSize
		if off >= int64(len(r.extra)) {
			return 0, io.EOF
		}
		n := copy(p, r.extra[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	return r.base.ReadAt(p, off)
}

// entryAtIndex returns the entry at pi's array index (header = 0).
func (s *Session) entryAtIndex(idx int) *Entry {
	if p := s.positionOfIndex(idx); p >= 0 {
		return s.Entries[p]
	}
	return nil
}

// positionOfIndex is the position in s.Entries of the entry at pi's array
// index idx (Entries are in index order), -1 when there is none.
func (s *Session) positionOfIndex(idx int) int {
	lo, hi := 0, len(s.Entries)
	for lo < hi {
		m := (lo + hi) / 2
		if s.Entries[m].Index < idx {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.Entries) && s.Entries[lo].Index == idx {
		return lo
	}
	return -1
}

// position is e's position in s.Entries, -1 when e is nil or not one of
// them.
func (s *Session) position(e *Entry) int {
	if e == nil {
		return -1
	}
	if p := s.positionOfIndex(e.Index); p >= 0 && s.Entries[p] == e {
		return p
	}
	return -1
}

// ByID returns the entry with the given id (the later one when duplicated).
func (s *Session) ByID(id string) *Entry { return s.byID.get(id) }

// idIndex finds entries by id (the later one when duplicated): a
// slots.Table of positions in the session's entries, hashed by id. It
// costs 8 to 16 bytes per entry where a map[string]*Entry cost 38 at
// 1 GB. A session with appended lines (WithAppended) indexes only those
// and asks the original's index for the rest: copying a 1 GB session's
// index for one planned line was 739k inserts.
type idIndex struct {
	entries []*Entry // what the positions index
	slots   slots.Table
	base    *idIndex
}

var idSeed = maphash.MakeSeed()

func (x *idIndex) get(id string) *Entry { return x.getKey(packed(id)) }

// getKey is get of an id in its packed form.
func (x *idIndex) getKey(k packedID) *Entry {
	if p := x.positionOfKey(k); p >= 0 {
		return x.entries[p]
	}
	return nil
}

// positionOfKey is the position of the entry with the id k, -1 when
// there is none. A base's positions are the same in x's entries, which
// begin with the base's.
func (x *idIndex) positionOfKey(k packedID) int {
	for ; x != nil; x = x.base {
		if p := x.find(k); p >= 0 {
			return p
		}
	}
	return -1
}

// find is the position of the id k in x's own slots, -1 when absent.
func (x *idIndex) find(k packedID) int {
	_, p := x.slots.Find(k.hash(idSeed), func(p int32) bool { return x.entries[p].is(k) })
	return int(p)
}

// reserve makes room for n more ids.
func (x *idIndex) reserve(n int) {
	if x.slots.Full(n) {
		x.slots.Grow(n, func(p int32) uint64 { return x.entries[p].key().hash(idSeed) })
	}
}

// put indexes the entry at position p by its id, replacing an earlier
// entry with the same id.
func (x *idIndex) put(p int) {
	k := x.entries[p].key()
	slot, _ := x.slots.Find(k.hash(idSeed), func(q int32) bool { return x.entries[q].is(k) })
	x.slots.Set(slot, int32(p))
}

// Raw returns the original bytes of an entry's line (without newline).
func (s *Session) Raw(e *Entry) ([]byte, error) {
	if e.Oversized {
		return nil, fmt.Errorf("%s:%d: the line is %d MiB, over the %d MiB line cap: ctxtool does not read it (split or remove it, e.g. in a copy of the session)",
			s.File, e.Line, e.Length>>20, MaxLineBytes>>20)
	}
	buf := make([]byte, e.Length)
	if _, err := s.ReadAt(buf, e.Offset); err != nil {
		return nil, fmt.Errorf("%s:%d: read: %w", s.File, e.Line, err)
	}
	return buf, nil
}

// ReadAt reads the bytes the session was loaded from, the offsets of its
// entries and Size: the file itself for pi JSONL, its pi translation for
// the other formats (a compressed or foreign file's own bytes are at other
// offsets).
func (s *Session) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	src := s.src
	s.mu.Unlock()
	if src == nil {
		return 0, fmt.Errorf("%s: session is closed", s.File)
	}
	return src.ReadAt(p, off)
}
