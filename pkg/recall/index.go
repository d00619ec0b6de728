package recall

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// headLen is how much of a file's start is hashed to notice a rewrite.
const headLen = 4096

// maxReportedMalformed bounds Stats.MalformedLines.
const maxReportedMalformed = 20

// Modes of one Index call.
const (
	ModeFull      = "full"      // first time this file is indexed
	ModeReindex   = "reindex"   // the indexed prefix changed: indexed again from line 1
	ModeAppend    = "append"    // the file grew: only the new lines were read
	ModeUnchanged = "unchanged" // nothing new (a trailing line without newline does not count)
)

// Stats reports one Index call.
type Stats struct {
	File    string `json:"file"`
	Indexed bool   `json:"indexed"`
	// Skipped is why nothing was indexed ("unchanged", "not a transcript: …").
	Skipped string `json:"skipped,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// LinesIndexed counts the new physical lines indexed this run; Lines is
	// the number of complete lines the index now covers. LinesReread are
	// already indexed lines read again to merge a small last chunk with the
	// new lines.
	LinesIndexed int `json:"linesIndexed"`
	LinesReread  int `json:"linesReread,omitempty"`
	Lines        int `json:"lines"`
	Chunks       int `json:"chunks"`
	// Bytes were read and indexed this run.
	Bytes int64 `json:"bytes"`
	// Malformed lines found this run (not one JSON object); their text is
	// still indexed where it decodes as concatenated objects.
	Malformed      int                    `json:"malformed"`
	MalformedLines []transcript.Malformed `json:"malformedLines,omitempty"`
	Embedded       int                    `json:"embedded,omitempty"`
	Seconds        float64                `json:"seconds"`
	// LeftOut counts what was left out of the new lines' text: blobs
	// (base64, binary output) and images.
	LeftOut LeftOut `json:"leftOut,omitzero"`
}

type fileRow struct {
	id                          int64
	size, mtimeNs               int64
	headLen                     int64
	headHash, sampleHash        string
	lastLineStart, bytesIndexed int64
	lastLineHash                string
	lines, malformed            int
	indexedAt                   int64 // unix ms
	// agent and project say where the session comes from (see origin).
	agent, project string
}

func absPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("recall: %s: %w", p, err)
	}
	return filepath.Clean(a), nil
}

func hashRange(f *os.File, off, n int64) (string, error) {
	h := sha256.New()
	// A buffer of the range's size (io.Copy's own is 32 KiB per call,
	// and a plan hashes a few short ranges of every file).
	buf := make([]byte, min(max(n, 1), 32<<10))
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, n), buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// sampleHash hashes 16 blocks of 512 bytes spread over the indexed prefix
// [0, n): with the head and the last line it catches rewrites of the middle
// of a file without reading all of it (an in-place edit between the samples
// that keeps the size goes unnoticed; pi and OpenClaw only append, or
// rewrite whole files).
func sampleHash(f *os.File, n int64) (string, error) {
	h := sha256.New()
	const blocks, size = 16, 512
	var buf [size]byte
	for k := int64(1); k <= blocks; k++ {
		off := k * n / (blocks + 1)
		l := min(int64(size), n-off)
		if l <= 0 {
			continue
		}
		if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, l), buf[:]); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// plan decides what an Index call has to do with a file, by checking that
// the indexed prefix is still there (hashes of the first bytes, of sampled
// blocks and of the last indexed line) and whether a complete line follows
// it.
func plan(f *os.File, size int64, row *fileRow) (string, error) {
	if row == nil {
		return ModeFull, nil
	}
	if size < row.bytesIndexed {
		return ModeReindex, nil
	}
	if h, err := hashRange(f, 0, row.headLen); err != nil {
		return "", err
	} else if h != row.headHash {
		return ModeReindex, nil
	}
	if h, err := hashRange(f, row.lastLineStart, row.bytesIndexed-row.lastLineStart); err != nil {
		return "", err
	} else if h != row.lastLineHash {
		return ModeReindex, nil
	}
	if h, err := sampleHash(f, row.bytesIndexed); err != nil {
		return "", err
	} else if h != row.sampleHash {
		return ModeReindex, nil
	}
	if size == row.bytesIndexed {
		return ModeUnchanged, nil
	}
	// Grown: does a complete line follow? (a line still being written has
	// no newline yet and waits for the next run)
	br := bufio.NewReaderSize(io.NewSectionReader(f, row.bytesIndexed, size-row.bytesIndexed), 64<<10)
	for {
		_, err := br.ReadSlice('\n')
		if err == nil {
			return ModeAppend, nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			return ModeUnchanged, nil
		}
		return "", err
	}
}

// Covered reports whether every complete line of the file, as it is now, is
// in the index (a trailing line without newline is not required). roll asks
// this before it evicts messages: evicting what recall cannot find is
// amnesia.
func (ix *Index) Covered(path string) (bool, error) {
	abs, err := absPath(path)
	if err != nil {
		return false, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return false, fmt.Errorf("recall: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("recall: %w", err)
	}
	row, err := ix.st.fileRow(context.Background(), abs)
	if err != nil || row == nil {
		return false, err
	}
	mode, err := plan(f, fi.Size(), row)
	if err != nil {
		return false, fmt.Errorf("recall: read %s: %w", abs, err)
	}
	return mode == ModeUnchanged, nil
}

// readResult is what reading a file's new lines produced.
type readResult struct {
	end           int64 // offset after the last complete line
	lastLineStart int64
	lines         int // physical line number of the last complete line
	read          int // lines read this run
	malformed     []transcript.Malformed
	nMalformed    int
	leftOut       LeftOut
	// cwd is the session header's working directory, when one was read
	// (pi lines only: other formats are translated, see scanCwd).
	cwd        string
	headerSeen bool
}

// scanLines reads complete lines from off (line numbers continue after
// line), extracts and chunks them, and hands finished chunks to emit.
// Malformed lines are counted after line newFrom only (earlier ones were
// counted when first indexed).
func (ix *Index) scanLines(ctx context.Context, src source, off int64, line, newFrom int, emit func([]chunk) error) (readResult, error) {
	f := src.f
	conv := formats.NewLineConverter(src.format)
	res := readResult{end: off, lastLineStart: off, lines: line}
	x := extractor{maxChars: ix.maxChars, redact: !ix.keepSecrets}
	ch := newChunker()
	ch.reread, ch.maxChars = src.plain, ix.maxChars
	br := readers.Get().(*bufio.Reader)
	defer readers.Put(br)
	br.Reset(io.NewSectionReader(f, off, 1<<62))
	lr := lineReader{f: f, br: br}
	for {
		l, n, oversized, err := lr.next(res.end)
		if err == io.EOF {
			break // a trailing line without newline is not complete yet
		}
		if err != nil {
			return res, err
		}
		res.lines++
		res.read++
		res.lastLineStart = res.end
		res.end += int64(n)
		if oversized {
			if res.lines > newFrom && res.countMalformed() {
				res.malformed = append(res.malformed, transcript.Malformed{Line: res.lines, Offset: res.lastLineStart, Bytes: n,
					Err: fmt.Sprintf("a line of %d bytes, over the %d MiB line cap: measured, not indexed", n, transcript.MaxLineBytes>>20)})
			}
			continue
		}
		if res.lines == 1 {
			l = transcript.TrimFileStart(l) // a BOM, as pi and every other reader see it
		}
		if conv == nil && !res.headerSeen && res.lines <= 64 {
			res.cwd, res.headerSeen = headerCwd(l)
		}
		units, ok := extractSourceLine(&x, conv, res.lines, l)
		if !ok && res.lines > newFrom && res.countMalformed() {
			res.malformed = append(res.malformed, describeMalformed(l, res.lines, res.lastLineStart))
		}
		addUnits(ch, units, res.lines, res.lastLineStart, res.end)
		if res.read%256 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := emitChunks(ch.take(), emit); err != nil {
				return res, err
			}
		}
	}
	res.leftOut = x.leftOut
	return res, emitChunks(ch.finish(), emit)
}

// readers are the 1 MiB line buffers of scans: a directory of small
// sessions would otherwise allocate (and zero) one per file.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 1<<20) }}

// lineReader reads a file's complete lines. A line longer than the buffer
// is measured first and then read at its exact size from the file; a line
// over transcript.MaxLineBytes is only measured, as every other command
// treats it. A multi-GB line without a newline costs no memory.
type lineReader struct {
	f  *os.File
	br *bufio.Reader
}

// next returns the line starting at file offset at, its length n and
// whether it is oversized (then only n is meaningful); io.EOF when no
// complete line is left.
func (lr lineReader) next(at int64) (l []byte, n int, oversized bool, err error) {
	longBytes := 0
	isLong := false
	for {
		part, err := lr.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			isLong = true
			longBytes += len(part)
			continue
		}
		if err == io.EOF {
			return nil, 0, false, io.EOF
		}
		if err != nil {
			return nil, 0, false, fmt.Errorf("recall: read %s: %w", lr.f.Name(), err)
		}
		l, n = part, len(part)
		if !isLong {
			return l, n, false, nil
		}
		n += longBytes
		if n > transcript.MaxLineBytes {
			return l, n, true, nil
		}
		if n >= bigLine {
			// What the caller decoded of an earlier big line (compact
			// --truncate indexing its backup: the summarised line) is
			// garbage by now; collect it before holding this one twice.
			runtime.GC()
		}
		l = make([]byte, n)
		if _, err := lr.f.ReadAt(l, at); err != nil {
			return nil, 0, false, fmt.Errorf("recall: read %s: %w", lr.f.Name(), err)
		}
		return l, n, false, nil
	}
}

// bigLine is the line size from which a collection before reading it
// pays (transcript reads its big lines the same way).
const bigLine = 16 << 20

// countMalformed counts one more malformed line and reports whether it is
// still to be described in malformed.
func (r *readResult) countMalformed() bool {
	r.nMalformed++
	return len(r.malformed) < maxReportedMalformed
}

// describeMalformed describes the malformed line l (number line, at offset
// off) as transcript.Load describes it, so index reports bad lines the way
// every other command does.
func describeMalformed(l []byte, line int, off int64) transcript.Malformed {
	raw := bytes.TrimRight(l, "\r\n")
	m, bad := transcript.DiagnoseLine(raw, true)
	if !bad {
		m = transcript.Malformed{Bytes: len(raw), Err: "not a session entry"}
	}
	m.Line, m.Offset = line, off
	return m
}

// addUnits adds the units extracted from one line (from off to end) to
// the chunker.
func addUnits(ch *chunker, units []unit, line int, off, end int64) {
	for i, u := range units {
		if u.id == "" {
			// v1 entries have no ids; pkg/transcript names them by line.
			u.id = "v1:L" + strconv.Itoa(line)
		}
		ch.add(contentLine{line: line, off: off, end: end, ord: i, unit: u})
	}
}

// emitChunks hands out finished chunks, if any.
func emitChunks(out []chunk, emit func([]chunk) error) error {
	if len(out) == 0 {
		return nil
	}
	return emit(out)
}

// Index brings the index of one session file up to date: nothing when it is
// unchanged, only the new lines when it grew, everything when the indexed
// part changed. It is safe while the session is being appended to.
func (ix *Index) Index(ctx context.Context, path string) (Stats, error) {
	var st Stats
	var ferr error
	err := ix.IndexFiles(ctx, []string{path}, func(s Stats, err error) { st, ferr = s, err })
	if err != nil {
		if st.File == "" {
			st.File = path
		}
		return st, err
	}
	return st, ferr
}

// IndexFiles brings many files up to date, calling report once per file
// (in order) after its rows are committed, with its Stats or the error that
// kept it out of the index. Files are all-or-nothing each; on SQLite many
// files share one transaction (up to ~64 MB of new text), which is what
// makes a directory of small sessions index as fast as one big file.
//
// The returned error is a *StoreError (disk full, corrupt index, lost
// database connection: it would fail every other file too) or the
// context's; files not reported were not indexed.
func (ix *Index) IndexFiles(ctx context.Context, paths []string, report func(Stats, error)) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	actx, stopAhead := context.WithCancel(ctx)
	ahead := ix.readAhead(actx, paths)
	defer func() {
		stopAhead()
		for o := range ahead {
			o.close()
		}
	}()
	r := &indexRun{ix: ix, ctx: ctx, report: report}
	defer r.rollback()
	var redo []string
	for {
		var o *opened
		if len(redo) > 0 {
			// Files of a lost batch: opened again, not read ahead.
			o, redo = ix.open(ctx, redo[0]), redo[1:]
		} else if o = <-ahead; o == nil {
			break // every file, or ctx is done
		}
		if err := ctx.Err(); err != nil {
			o.close()
			return err
		}
		more, err := r.indexOne(o)
		if err != nil {
			return err
		}
		redo = append(more, redo...)
		if r.bytes >= ix.batchBytes {
			if err := r.flush(); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.flush()
}

// indexRun is one IndexFiles call: the open batch and the files decided
// since the last commit, reported (and embedded) once it commits.
type indexRun struct {
	ix     *Index
	ctx    context.Context
	report func(Stats, error)
	b      batch
	bytes  int64 // new text written into b
	queue  []pending
}

// pending is a file decided in this run, reported at the next commit.
type pending struct {
	st      Stats
	err     error
	id      int64 // file to embed once committed (0: none)
	path    string
	written bool // in the open batch: redone if the batch is lost
}

// indexOne takes an opened file through the steps that follow its plan
// (unchanged files stop there): write its rows into the batch under the
// file's lock, and queue the outcome. A returned error (the store's or the
// context's) ends the run; redo lists files to index again because the
// batch holding them was lost.
func (r *indexRun) indexOne(o *opened) (redo []string, fatal error) {
	defer o.close()
	start := time.Now().Add(-o.took)
	st := o.st
	switch {
	case o.err != nil:
		var se *StoreError
		if errors.As(o.err, &se) {
			return nil, o.err
		}
		r.queue = append(r.queue, pending{st: st, err: o.err})
		return nil, nil
	case o.mode == ModeUnchanged && o.stillUnchanged():
		st.Mode, st.Skipped, st.Lines = ModeUnchanged, "unchanged", o.row.lines
		st.Seconds = time.Since(start).Seconds()
		r.queue = append(r.queue, pending{st: st, id: o.row.id})
		return nil, nil
	}
	var err error
	if r.b == nil {
		if r.b, err = r.ix.st.batch(r.ctx); err != nil {
			return nil, err
		}
	}
	fileID, err := r.write(o, &st)
	st.Seconds = time.Since(start).Seconds()
	if err != nil {
		return r.failed(st.File, err)
	}
	r.queue = append(r.queue, pending{st: st, id: fileID, path: o.path, written: true})
	r.bytes += st.Bytes
	return nil, nil
}

// write indexes one file's new lines into the open batch under the file's
// lock.
func (r *indexRun) write(o *opened, st *Stats) (int64, error) {
	var fileID int64
	err := r.b.file(r.ctx, st.File, func(w writer) error {
		var err error
		fileID, err = r.ix.indexFile(r.ctx, w, o, st)
		return err
	})
	return fileID, err
}

// failed settles a file whose rows could not be written: a store or
// context error ends the run; a lost batch sends the files written into it
// back to be indexed again; any other error is that file's alone.
func (r *indexRun) failed(abs string, err error) (redo []string, fatal error) {
	var se *StoreError
	if errors.As(err, &se) {
		return nil, se
	}
	if r.ctx.Err() != nil {
		return nil, r.ctx.Err()
	}
	if errors.Is(err, errBatchLost) {
		// The files written earlier in this batch are gone with it:
		// index them again, in a new batch.
		r.b, r.bytes = nil, 0
		kept := r.queue[:0]
		for _, p := range r.queue {
			if p.written {
				redo = append(redo, p.path)
			} else {
				kept = append(kept, p)
			}
		}
		r.queue = kept
		err = unwrapBatchLost(err)
	}
	r.queue = append(r.queue, pending{st: Stats{File: abs}, err: err})
	return redo, nil
}

// flush commits the open batch, then embeds and reports every queued file.
func (r *indexRun) flush() error {
	if r.b != nil {
		err := r.b.commit()
		r.b, r.bytes = nil, 0
		if err != nil {
			return err
		}
	}
	for _, p := range r.queue {
		if p.err == nil && p.id != 0 {
			n, err := r.ix.embedMissing(r.ctx, p.id)
			p.st.Embedded = n
			if err != nil {
				p.err = err
			}
		}
		if r.report != nil {
			r.report(p.st, p.err)
		}
	}
	r.queue = r.queue[:0]
	return nil
}

// rollback drops a batch left open by an error.
func (r *indexRun) rollback() {
	if r.b != nil {
		r.b.rollback()
	}
}

// unwrapBatchLost is the error that made a batch roll back.
func unwrapBatchLost(err error) error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			if e != errBatchLost {
				return e
			}
		}
	}
	return err
}

// openIndexable opens a file to index (through openSource: the file, or
// the temporary copy of a zstd file or store session). The type is checked
// before the open: opening a FIFO for reading blocks until a writer comes.
// A store session ("store.sqlite#key") is no path; openSource checks it.
func openIndexable(abs string) (source, error) {
	if fi, err := os.Stat(abs); err == nil {
		if fi.IsDir() {
			return source{}, fmt.Errorf("recall: %s is a directory (index walks directories, Index takes files)", abs)
		}
		if !fi.Mode().IsRegular() {
			return source{}, fmt.Errorf("recall: %s is not a file (%s): not a session file; only regular files are indexed", abs, fi.Mode().Type())
		}
	}
	src, err := openSource(abs)
	if err != nil {
		return source{}, fmt.Errorf("recall: %w", err)
	}
	return src, nil
}

// planFile reads the file's bookkeeping without a lock and decides.
// fi is the file as the plan saw it.
func (ix *Index) planFile(ctx context.Context, f *os.File, abs string) (row *fileRow, mode string, fi os.FileInfo, err error) {
	if fi, err = f.Stat(); err != nil {
		return nil, "", nil, fmt.Errorf("recall: %w", err)
	}
	if row, err = ix.st.fileRow(ctx, abs); err != nil {
		return nil, "", nil, err
	}
	if mode, err = plan(f, fi.Size(), row); err != nil {
		return nil, "", nil, fmt.Errorf("recall: read %s: %w", abs, err)
	}
	return row, mode, fi, nil
}

// indexFile writes one file's new rows through w (the file's lock is held:
// the plan is made again, another process may have indexed the file since
// the unlocked plan). It returns the file's id.
func (ix *Index) indexFile(ctx context.Context, w writer, o *opened, st *Stats) (int64, error) {
	f, abs := o.f, st.File
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("recall: %w", err)
	}
	row, err := w.fileRow(ctx, abs)
	if err != nil {
		return 0, err
	}
	mode, err := plan(f, fi.Size(), row)
	if err != nil {
		return 0, fmt.Errorf("recall: read %s: %w", abs, err)
	}
	if mode == ModeUnchanged {
		st.Mode, st.Skipped, st.Lines = ModeUnchanged, "unchanged", row.lines
		return row.id, nil
	}
	st.Mode = mode
	from, err := resumePoint(ctx, w, row, mode, st)
	if err != nil {
		return 0, err
	}
	fileID, err := fileRows(ctx, w, abs, row, mode)
	if err != nil {
		return 0, err
	}
	newFrom := from.line + st.LinesReread // lines up to here were indexed before
	res, err := writeChunks(ctx, w, fileID, ix.scanner(ctx, o, from.off, from.line, newFrom), st)
	if err != nil {
		return 0, err
	}
	nr, err := indexedRow(f, fi, res, from.malformed)
	if err != nil {
		return 0, fmt.Errorf("recall: read %s: %w", abs, err)
	}
	if mode == ModeAppend && row != nil {
		nr.agent, nr.project = row.agent, row.project
	} else {
		nr.agent, nr.project = agentOf(abs, o.format), cleanProject(res.cwd)
		if !res.headerSeen && o.format != formats.Pi {
			nr.project = cleanProject(scanCwd(o.source))
		}
	}
	if err := w.updateFile(ctx, fileID, nr); err != nil {
		return 0, err
	}
	st.Indexed = true
	st.LinesIndexed = res.lines - newFrom
	st.Lines = res.lines
	st.Bytes = res.end - max(from.off, rowBytes(row, mode))
	st.Malformed = res.nMalformed
	st.MalformedLines = res.malformed
	st.LeftOut = res.leftOut
	return fileID, nil
}

// resume is where reading starts: byte offset, lines before it, and the
// malformed lines counted before it.
type resume struct {
	off             int64
	line, malformed int
}

// resumePoint is where a file's new lines start: the start of the file,
// or, when appending, the end of the indexed part. A small last chunk is
// chunked again together with the new lines (its lines re-read, not
// counted as new), so a session indexed after every turn does not end up as
// a row of tiny chunks.
func resumePoint(ctx context.Context, w writer, row *fileRow, mode string, st *Stats) (resume, error) {
	if mode != ModeAppend {
		return resume{}, nil
	}
	r := resume{off: row.bytesIndexed, line: row.lines, malformed: row.malformed}
	last, startOff, ok, err := w.lastChunk(ctx, row.id)
	if err != nil {
		return r, err
	}
	if ok && last.end == row.lines && weightedLen(last.text) < chunkMaxChars/2 {
		if err := w.deleteChunk(ctx, last.id); err != nil {
			return r, err
		}
		st.LinesReread = row.lines - last.start + 1
		r.off, r.line = startOff, last.start-1
	}
	return r, nil
}

// fileRows returns the file's id, adding the file when it is new and
// dropping its chunks when it is indexed again from the start.
func fileRows(ctx context.Context, w writer, abs string, row *fileRow, mode string) (int64, error) {
	if row == nil {
		return w.addFile(ctx, abs)
	}
	if mode == ModeReindex {
		if err := w.deleteFileChunks(ctx, row.id); err != nil {
			return 0, err
		}
	}
	return row.id, nil
}

// indexedRow is the file's bookkeeping after a read that ended at res: the
// hashes that tell an append from a rewrite next time, and its size and
// modification time (fi: as planned, unless a new stat succeeds).
func indexedRow(f *os.File, fi os.FileInfo, res readResult, malformedBefore int) (*fileRow, error) {
	hl := min(int64(headLen), res.end)
	nr := &fileRow{headLen: hl, lastLineStart: res.lastLineStart, bytesIndexed: res.end, lines: res.lines,
		malformed: malformedBefore + res.nMalformed, indexedAt: time.Now().UnixMilli()}
	var err error
	if nr.headHash, err = hashRange(f, 0, hl); err != nil {
		return nil, err
	}
	if nr.lastLineHash, err = hashRange(f, res.lastLineStart, res.end-res.lastLineStart); err != nil {
		return nil, err
	}
	if nr.sampleHash, err = sampleHash(f, res.end); err != nil {
		return nil, err
	}
	if fi2, err := f.Stat(); err == nil {
		fi = fi2 // the file may have grown while it was read
	}
	nr.size, nr.mtimeNs = fi.Size(), fi.ModTime().UnixNano()
	return nr, nil
}

// writeChunks stores the chunks of scan s as it reads them: reading and
// extracting (JSON decoding) runs beside the inserts (index tokenizing),
// two cores, two stages.
func writeChunks(ctx context.Context, w writer, fileID int64, s *scan, st *Stats) (readResult, error) {
	defer s.stop()
	for cs := range s.c {
		if err := w.addChunks(ctx, fileID, cs); err != nil {
			return readResult{}, err
		}
		st.Chunks += len(cs)
	}
	return s.res, s.err
}

// rowBytes is where new bytes start: the end of the indexed part when
// appending, 0 otherwise.
func rowBytes(row *fileRow, mode string) int64 {
	if mode == ModeAppend && row != nil {
		return row.bytesIndexed
	}
	return 0
}

func (ix *Index) remove(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	b, err := ix.st.batch(ctx)
	if err != nil {
		return err
	}
	defer b.rollback()
	for _, p := range paths {
		if err := b.file(ctx, p, func(w writer) error {
			_, err := w.removeFile(ctx, p)
			return err
		}); err != nil {
			return err
		}
	}
	return b.commit()
}

// PruneUnder is Prune for an index run over paths: only the directories
// among them are roots (a run over single files prunes nothing, since it
// says nothing of the other files the index holds).
func (ix *Index) PruneUnder(ctx context.Context, paths []string) ([]string, error) {
	var roots []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			roots = append(roots, p)
		}
	}
	if len(roots) == 0 {
		return nil, nil
	}
	return ix.Prune(ctx, roots...)
}

// Prune drops every indexed file that no longer exists and returns their
// paths. Files under one of roots only, when roots are given.
func (ix *Index) Prune(ctx context.Context, roots ...string) ([]string, error) {
	paths, err := ix.st.files(ctx)
	if err != nil {
		return nil, err
	}
	var absRoots []string
	for _, r := range roots {
		a, err := absPath(r)
		if err != nil {
			return nil, err
		}
		absRoots = append(absRoots, a)
	}
	var gone []string
	for _, p := range paths {
		if len(absRoots) > 0 && !underAny(p, absRoots) {
			continue
		}
		if _, err := os.Stat(sourceFile(p)); errors.Is(err, os.ErrNotExist) {
			gone = append(gone, p)
		}
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if err := ix.remove(ctx, gone); err != nil {
		return nil, err
	}
	return gone, nil
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
