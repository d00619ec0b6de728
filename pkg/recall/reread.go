package recall

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"unsafe"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The SQLite index stores no text for the chunks of plain pi JSONL files
// (pi's and OpenClaw's sessions; source.plain): their text is read again
// from the session file when it is needed, from the lines the chunk cites.
// The stored text was half of the index (14 of 29 MB for 52 MB of
// CJK-heavy sessions, after compression).
//
// A chunk's stored value is then a ref (tag refTag, see textz.go for the
// other tags): the byte length of its line range (from chunks.start_offset),
// the tool output cap it was extracted with, the length and CRC-32C of its
// text, and one entry per segment of the chunk (a piece of one unit, in
// the chunker's sense): its line after the previous segment's, the unit's
// ordinal among the line's units, and the piece's start and the bytes
// after its end in the unit's text. Re-reading runs the extractor on the
// lines (redacted as at index time: the same extractor gives the same
// text) and joins the pieces with newlines, as the chunker did.
//
// A file that changed or vanished since it was indexed gives another text,
// or none: the length and the CRC tell, and the chunk is left out of what
// the search returns, which says so (Result.Stale) with the remedy (index
// the file again). Pi and OpenClaw only append, which leaves the indexed
// lines as they were; a rewrite (compact --truncate, a manual edit) is
// re-indexed by the next index run.
//
// Kept as text (tags 0 and 1): zstd files and store sessions (read
// through a temporary copy), Claude Code and Codex files (a line's text
// depends on earlier lines: tool names carry over), and chunks whose
// lines span more than refMaxBytes: a search re-reads about a hundred
// candidates, and a chunk cut from a 5 MB tool result would parse all of
// it each time.
//
// The price is the extractor's work at search time: the text of 100
// candidates took 3.4-4.0 ms of CPU to re-read against 0.7-0.8 ms to
// decompress (BenchmarkLoad100; the JSON of a line is about 3.4 times its
// chunk's text), 1-3 ms more per search at p50 on a CJK-heavy corpus,
// whose index went from 56% to 34% of the corpus.

// refTag starts a stored value that is a ref to the session file.
const refTag = 2

// refMaxBytes is the longest line range whose chunks are re-read rather
// than stored.
const refMaxBytes = 32 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// textCRC is the CRC-32C of a chunk's text, read in place ([]byte(text)
// copied every chunk's text once more, at index time and when read back).
func textCRC(text string) uint32 {
	return crc32.Checksum(unsafe.Slice(unsafe.StringData(text), len(text)), castagnoli)
}

// newRef is the ref of the chunk made of segs (text joined), or nil when
// its lines span more than refMaxBytes.
func newRef(segs []segment, text string, maxChars int) []byte {
	first, last := segs[0], segs[len(segs)-1]
	span := last.end - first.off
	if span > refMaxBytes || span <= 0 {
		return nil
	}
	b := make([]byte, 0, 16+4*len(segs))
	b = append(b, refTag)
	b = binary.AppendUvarint(b, uint64(span))
	b = binary.AppendUvarint(b, uint64(maxChars))
	b = binary.AppendUvarint(b, uint64(len(text)))
	b = binary.LittleEndian.AppendUint32(b, textCRC(text))
	b = binary.AppendUvarint(b, uint64(len(segs)))
	line := first.line
	for _, s := range segs {
		b = binary.AppendUvarint(b, uint64(s.line-line))
		b = binary.AppendUvarint(b, uint64(s.ord))
		b = binary.AppendUvarint(b, uint64(s.at))
		b = binary.AppendUvarint(b, uint64(s.unitBytes-s.at-len(s.text)))
		line = s.line
	}
	return b
}

// ref is a decoded ref.
type ref struct {
	span     int64
	maxChars int
	size     int
	crc      uint32
	segs     []refSeg
}

// refSeg is a segment of a ref: its line (counted from the chunk's first),
// its unit's ordinal, and the bytes of the unit's text before and after it.
type refSeg struct {
	line, ord, at, tail int
}

var errBadRef = errors.New("a chunk's reference to its session file is damaged: rebuild the index with 'ctxtool index --rebuild PATH...'")

// parseRef decodes a stored ref (the value with its tag).
func parseRef(b []byte) (ref, error) {
	var r ref
	if len(b) == 0 || b[0] != refTag {
		return r, errBadRef
	}
	b = b[1:]
	next := func() int {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<40 {
			b = nil
			return -1
		}
		b = b[n:]
		return int(v)
	}
	span, maxChars, size := next(), next(), next()
	if size < 0 || len(b) < 4 {
		return r, errBadRef
	}
	r.span, r.maxChars, r.size = int64(span), maxChars, size
	r.crc = binary.LittleEndian.Uint32(b)
	b = b[4:]
	n := next()
	if n <= 0 || n > len(b) {
		return r, errBadRef
	}
	r.segs = make([]refSeg, n)
	line := 0
	for i := range r.segs {
		d, ord, at, tail := next(), next(), next(), next()
		if tail < 0 || d < 0 || ord < 0 || at < 0 {
			return r, errBadRef
		}
		line += d
		r.segs[i] = refSeg{line: line, ord: ord, at: at, tail: tail}
	}
	if span <= 0 || len(b) != 0 {
		return r, errBadRef
	}
	return r, nil
}

// textRef is a stored chunk whose text is wanted: its stored value, and
// the file and first line (number and offset) a ref counts from.
type textRef struct {
	path  string
	line  int
	off   int64
	value []byte
}

// rereader gives stored chunks their text (chunkTexts): stored text is
// decompressed, refs are read again from their files, each file opened
// once and each line extracted once, however many chunks cite it.
type rereader struct {
	redact bool
	// stale is why the chunks of a file could not be read again, by path.
	stale map[string]string
}

// chunkTexts is the one place the SQLite index's text comes back from
// (search, FTS repair, embeddings): each ref's text, and ok[i] false for a
// chunk whose file changed or vanished since it was indexed (r.stale says
// which file and why). The error is a damaged stored value.
func (r *rereader) chunkTexts(refs []textRef) (texts []string, ok []bool, err error) {
	texts, ok = make([]string, len(refs)), make([]bool, len(refs))
	byFile := map[string][]int{}
	parsed := make([]ref, len(refs))
	for i, t := range refs {
		if len(t.value) > 0 && t.value[0] == refTag {
			if parsed[i], err = parseRef(t.value); err != nil {
				return nil, nil, err
			}
			byFile[t.path] = append(byFile[t.path], i)
			continue
		}
		if texts[i], err = chunkText(t.value); err != nil {
			return nil, nil, err
		}
		ok[i] = true
	}
	var jobs []*spanJob
	for path, idx := range byFile {
		f, js, why := planFile(path, refs, parsed, idx)
		if f != nil {
			defer f.Close()
		}
		r.note(path, why)
		jobs = append(jobs, js...)
	}
	// One goroutine: spans on two, under the load of a shared machine,
	// made a search slower (its goroutine waited for the other's core).
	// One buffer: a span's texts are copies, nothing keeps its bytes.
	var buf []byte
	for _, j := range jobs {
		buf = j.run(buf, refs, parsed, texts, ok, r.redact)
		r.note(j.path, j.why)
	}
	return texts, ok, nil
}

// note records why chunks of path could not be read ("": they could).
func (r *rereader) note(path, why string) {
	if why == "" {
		return
	}
	if r.stale == nil {
		r.stale = map[string]string{}
	}
	r.stale[path] = why
}

// spanJob reads one span of a file (the union of overlapping line ranges)
// and gives the chunks of group, which cite it, their text; why says why
// some could not be read.
type spanJob struct {
	f          *os.File
	path       string
	start, end int64
	group      []int
	why        string
}

const changedFile = "it changed since it was indexed"

// planFile opens the file of the chunks idx and cuts their line ranges
// into spans; why says why some chunks cannot be read (the file is gone,
// or shorter than a range).
func planFile(path string, refs []textRef, parsed []ref, idx []int) (*os.File, []*spanJob, string) {
	// Checked before the open, which would wait for a writer if a FIFO
	// had taken the file's place.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, "it is no longer a regular file"
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, "it no longer exists"
		}
		return nil, nil, err.Error()
	}
	fi, err := f.Stat()
	if err != nil {
		return f, nil, err.Error()
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(refs[a].off, refs[b].off) })
	var jobs []*spanJob
	why := ""
	for i := 0; i < len(idx); {
		start, end := refs[idx[i]].off, refs[idx[i]].off+parsed[idx[i]].span
		j := i + 1
		for j < len(idx) && refs[idx[j]].off <= end {
			end = max(end, refs[idx[j]].off+parsed[idx[j]].span)
			j++
		}
		if start < 0 || end > fi.Size() {
			why = changedFile
		} else {
			jobs = append(jobs, &spanJob{f: f, path: path, start: start, end: end, group: idx[i:j]})
		}
		i = j
	}
	return f, jobs, why
}

// run reads the span into buf (grown if needed, and returned for the next
// span) and fills the texts of its chunks.
func (j *spanJob) run(buf []byte, refs []textRef, parsed []ref, texts []string, ok []bool, redact bool) []byte {
	if n := int(j.end - j.start); cap(buf) < n {
		buf = make([]byte, n, max(n, 64<<10))
	} else {
		buf = buf[:n]
	}
	switch n, err := j.f.ReadAt(buf, j.start); {
	case err != nil && err != io.EOF:
		j.why = err.Error()
		return buf
	case n < len(buf): // cut since the plan
		j.why = changedFile
		return buf
	}
	sp := newSpan(buf, j.start, redact)
	for _, k := range j.group {
		if t, good := sp.text(refs[k], parsed[k]); good {
			texts[k], ok[k] = t, true
		} else {
			j.why = changedFile
		}
	}
	return buf
}

// span is a run of a file's lines, each extracted once when first needed.
type span struct {
	buf    []byte
	start  int64
	lines  [][]byte
	at     map[int64]int       // line start offset → index in lines
	units  map[[2]int][]string // by line index and tool output cap
	redact bool
}

func newSpan(buf []byte, start int64, redact bool) *span {
	sp := &span{buf: buf, start: start, at: map[int64]int{}, units: map[[2]int][]string{}, redact: redact}
	for off := 0; off < len(buf); {
		n := bytes.IndexByte(buf[off:], '\n')
		if n < 0 {
			break // not a complete line: no chunk cites it
		}
		sp.at[start+int64(off)] = len(sp.lines)
		sp.lines = append(sp.lines, buf[off:off+n+1])
		off += n + 1
	}
	return sp
}

// text is the text of the chunk t (ref r) from this span's lines, false
// when the lines do not give the text that was indexed.
func (sp *span) text(t textRef, r ref) (string, bool) {
	first, found := sp.at[t.off]
	if !found {
		return "", false
	}
	var b strings.Builder
	b.Grow(r.size)
	for i, s := range r.segs {
		k := first + s.line
		if k >= len(sp.lines) {
			return "", false
		}
		units := sp.lineUnits(k, t.line+s.line, r.maxChars)
		if s.ord >= len(units) {
			return "", false
		}
		u := units[s.ord]
		end := len(u) - s.tail
		if s.at > end || end > len(u) || b.Len()+end-s.at+1 > r.size+1 {
			return "", false
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(u[s.at:end])
	}
	text := b.String()
	if len(text) != r.size || textCRC(text) != r.crc {
		return "", false
	}
	return text, true
}

// lineUnits is the text of the units of line k (number no), extracted as
// scanLines does.
func (sp *span) lineUnits(k, no, maxChars int) []string {
	key := [2]int{k, maxChars}
	if u, ok := sp.units[key]; ok {
		return u
	}
	l := sp.lines[k]
	var texts []string
	if len(l) <= transcript.MaxLineBytes {
		if no == 1 {
			l = transcript.TrimFileStart(l)
		}
		x := extractor{maxChars: maxChars, redact: sp.redact}
		units, _ := extractSourceLine(&x, nil, no, l)
		texts = make([]string, len(units))
		for i, u := range units {
			texts[i] = u.text
		}
	}
	sp.units[key] = texts
	return texts
}

// staleNote describes the files whose chunks could not be read again
// (nil: none).
func staleNote(stale map[string]string) []string {
	var out []string
	for p, why := range stale {
		out = append(out, fmt.Sprintf("%s (%s)", p, why))
	}
	slices.Sort(out)
	return out
}
