package formats

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
	"github.com/klauspost/compress/zstd"
)

// LineConverter translates the lines of a Claude Code or Codex transcript
// one at a time into the pi lines each one holds, without merging lines or
// building the tree: what recall indexes, so that every chunk cites the
// source line its text came from. Tool names carry over from earlier lines.
type LineConverter struct {
	v *conv.Emitter
	c conv.LineConv
}

// NewLineConverter returns a converter for a JSONL format, nil for pi JSONL
// (which needs none) and for formats that are not line-based.
func NewLineConverter(f Format) *LineConverter {
	cv, ok := conv.Lookup(f)
	if !ok {
		return nil
	}
	v := &conv.Emitter{Out: &conv.Spool{}, HeaderDone: true}
	return &LineConverter{v: v, c: cv.Lines(v)}
}

// Convert returns the pi lines (without newlines) that source line no
// holds; none for lines that hold no message. ok is false when the line is
// not JSON.
func (lc *LineConverter) Convert(no int, raw []byte) (lines [][]byte, ok bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	if err := lc.c.Line(no, raw); err != nil {
		return nil, false
	}
	if err := lc.c.Flush(); err != nil {
		return nil, false
	}
	ok = len(lc.v.Malformed) == 0
	lc.v.Malformed = nil
	if err := lc.v.FlushOut(); err != nil {
		return nil, false
	}
	sp := lc.v.Out
	if sp.Size == 0 {
		return nil, ok
	}
	_ = sp.Finish()
	data := make([]byte, sp.Size)
	_, _ = sp.ReadAt(data, 0)
	sp.Close()
	lc.v.Out = &conv.Spool{}
	lc.v.Rows = lc.v.Rows[:0]
	return bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}), ok
}

// Materialize writes the pi lines of a zstd file or of one session of an
// OpenClaw store to a temporary file whose line N is source line N (blank
// lines fill gaps) — for a store, line N is the row with seq N-1. It returns
// nil for formats that need no copy. The file is unlinked already.
func Materialize(path string) (*os.File, Format, error) {
	f := Pi
	if _, _, ok := SplitStorePath(path); ok {
		f = OpenClawSQLite
	} else {
		sn, err := SniffFile(path)
		if err != nil {
			return nil, "", err
		}
		f = sn.Format
	}
	if f != Zstd && f != OpenClawSQLite {
		return nil, f, nil
	}
	if f == Zstd {
		tmp, inner, err := decompressCopy(path)
		if err != nil || inner != "" {
			return tmp, inner, err
		}
		// An OpenClaw cold archive: its event records, by seq.
	}
	v, err := Open(path, nil)
	if err != nil {
		return nil, f, err
	}
	defer v.Close()
	f = OpenClawSQLite
	tmp, err := os.CreateTemp("", "ctxtool-recall-*.jsonl")
	if err != nil {
		return nil, f, fmt.Errorf("temporary copy of %s: %w (set TMPDIR to a writable directory)", path, err)
	}
	os.Remove(tmp.Name())
	offset := 0
	if v.Unit == "seq" {
		offset = 1
	}
	line := 0 // lines written
	r := io.NewSectionReader(v.ReaderAt(), 0, v.Size())
	lr := conv.NewLineReader(r)
	w := &bytes.Buffer{}
	for i := 1; ; i++ {
		l, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tmp.Close()
			return nil, f, err
		}
		want := v.SourceRow(i) + offset
		if want <= line {
			continue // a synthetic header shares its row with the first event
		}
		for line < want-1 {
			w.WriteByte('\n')
			line++
		}
		w.Write(l)
		w.WriteByte('\n')
		line++
		if w.Len() > 1<<20 {
			if _, err := tmp.Write(w.Bytes()); err != nil {
				tmp.Close()
				return nil, f, err
			}
			w.Reset()
		}
	}
	if _, err := tmp.Write(w.Bytes()); err != nil {
		tmp.Close()
		return nil, f, err
	}
	return tmp, f, nil
}

// decompressCopy writes the decompressed bytes of a zstd file to an
// unlinked temporary file and sniffs them. inner is "" for an OpenClaw cold
// archive (whose lines are records, not transcript lines).
func decompressCopy(path string) (*os.File, Format, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, "", fmt.Errorf("%s: zstd: %w", path, err)
	}
	defer dec.Close()
	tmp, err := os.CreateTemp("", "ctxtool-recall-*.jsonl")
	if err != nil {
		return nil, "", fmt.Errorf("temporary copy of %s: %w (set TMPDIR to a writable directory)", path, err)
	}
	os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, dec); err != nil {
		tmp.Close()
		return nil, "", fmt.Errorf("%s: zstd: %w (is the file complete?)", path, err)
	}
	sn, err := Sniff(io.NewSectionReader(tmp, 0, sniffLimit))
	if err != nil {
		tmp.Close()
		return nil, "", err
	}
	if sn.Format == Unknown && sn.Looks == "an OpenClaw cold-archive record" {
		tmp.Close()
		return nil, "", nil
	}
	if sn.Format == Unknown {
		tmp.Close()
		return nil, "", &UnknownFormatError{File: path + " (decompressed)", Line: sn.Line, Looks: sn.Looks}
	}
	return tmp, sn.Format, nil
}
