package formats

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
	"github.com/ctxtool/ctxtool/pkg/formats/openclawsqlite"
	"github.com/klauspost/compress/zstd"
)

// isPiHeader reports whether line is a pi session header: what an
// OpenClaw store's first event is unless the session was imported without
// one.
func isPiHeader(line []byte) bool {
	f, _, ok := classifyLine(line)
	return ok && f == Pi && bytes.Contains(line, []byte(`"session"`))
}

// Open translates the transcript at path to a pi view. It returns (nil,
// nil) for pi JSONL, which pkg/transcript reads itself, and an
// *UnknownFormatError for files that are no transcript ctxtool knows.
// path may name one session of an OpenClaw store: "store.sqlite#<key>".
// A Claude Code or Codex converter hands sink (when not nil) every line it
// writes, with its values; the other formats do not call it.
func Open(path string, sink func(*Produced)) (*View, error) { return open(path, sink, false) }

// OpenLazy is Open for a caller that needs the sink's values and seldom
// the view's bytes: a Claude Code or Codex file's view is then not written
// while it is converted but on its first read, by converting again the
// bytes the first pass read (writing a 1 GB file's view was a fifth of
// reading it). Other formats open as Open opens them.
func OpenLazy(path string, sink func(*Produced)) (*View, error) { return open(path, sink, true) }

func open(path string, sink func(*Produced), lazy bool) (*View, error) {
	if db, key, ok := SplitStorePath(path); ok {
		return openclawsqlite.Open(db, key, path, isPiHeader)
	}
	f, err := conv.OpenRegular(path)
	if err != nil || f == nil {
		return nil, err // directories, FIFOs (nil, nil): the pi reader reports them
	}
	defer f.Close()
	sn, err := Sniff(io.LimitReader(f, sniffLimit))
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", path, err)
	}
	if done, err := unconverted(path, sn); done {
		return nil, err
	}
	if sn.Format == OpenClawSQLite {
		return openclawsqlite.Open(path, "", path, isPiHeader)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if !lazy || sink == nil {
		return OpenReader(path, f, sink)
	}
	v, err := openReader(path, f, sink, true)
	if v != nil && !conv.ViewWritten(v) {
		// What the conversion read is where it left the file.
		read, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			v.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		conv.FillLater(v, func() (*View, error) { return refill(path, read) })
	}
	return v, err
}

// refill converts the first n bytes of path again, writing the view this
// time: the same bytes make the same view (a live transcript only grows).
func refill(path string, n int64) (*View, error) {
	f, err := conv.OpenRegular(path)
	if err == nil && f == nil {
		err = fmt.Errorf("no longer a regular file")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read again: %w", path, err)
	}
	defer f.Close()
	v, err := OpenReader(path, io.LimitReader(f, n), nil)
	if err == nil && v == nil {
		err = fmt.Errorf("%s: read again: no longer the transcript it was", path)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// OpenReader translates a transcript read from r (a JSONL format or zstd;
// not a database), handing sink what Open does. Pi JSONL gives (nil, nil).
func OpenReader(name string, r io.Reader, sink func(*Produced)) (*View, error) {
	return openReader(name, r, sink, false)
}

// openReader is OpenReader; lazy: the view of a converted format is only
// measured, not written (see OpenLazy).
func openReader(name string, r io.Reader, sink func(*Produced), lazy bool) (*View, error) {
	lr := conv.TakeLineReader(r)
	head, err := lr.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	if bytes.HasPrefix(head, conv.ZstdMagic) {
		return openZstd(name, lr.Br, sink, lazy) // the decoder keeps lr.br: not released
	}
	f, replay, err := sniffLines(lr)
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	if done, err := unconverted(name, f); done {
		lr.Release()
		return nil, err
	}
	v, err := convert(name, f.Format, lr, replay, sink, lazy)
	if err == nil {
		// Read to the end; after an error a reader goroutine may still
		// be in lr, which is then left to the collector.
		lr.Release()
	}
	return v, err
}

// unconverted is Open's answer for the formats it gives no view of: pi
// JSONL (nil, nil: pkg/transcript reads it) and a file it does not know
// (an *UnknownFormatError); done is false for every other format.
func unconverted(name string, sn Sniffed) (done bool, err error) {
	switch sn.Format {
	case Pi:
		return true, nil
	case Unknown:
		return true, &UnknownFormatError{File: name, Line: sn.Line, Looks: sn.Looks}
	}
	return false, nil
}

// sniffLines reads lines until one classifies, returning them for replay.
func sniffLines(lr *conv.LineReader) (Sniffed, [][]byte, error) {
	var replay [][]byte
	var read int64
	for no := 1; ; no++ {
		line, err := lr.Next()
		if err == io.EOF {
			return Sniffed{Format: Pi}, replay, nil
		}
		if err != nil {
			return Sniffed{}, nil, err
		}
		replay = append(replay, append([]byte(nil), line...))
		read += int64(len(line))
		if f, looks, ok := classifyLine(line); ok {
			return Sniffed{Format: f, Line: no, Looks: looks}, replay, nil
		}
		if read > sniffLimit {
			return Sniffed{Format: Pi}, replay, nil
		}
	}
}

// convert runs a format's converter over replayed lines and the rest of lr.
func convert(name string, f Format, lr *conv.LineReader, replay [][]byte, sink func(*Produced), lazy bool) (*View, error) {
	measure := lazy && sink != nil
	v := &conv.Emitter{Out: &conv.Spool{Discard: measure}, Sink: sink, Measure: measure}
	v.W.Skip = measure
	r := io.MultiReader(bytes.NewReader(bytes.Join(append(replay, nil), []byte{'\n'})), lr.Rest())
	cv, _ := conv.Lookup(f)
	c := cv.New(v)
	err := cv.Convert(c, name, r)
	if err == nil {
		err = c.Finish()
	}
	var view *View
	if err == nil {
		view, err = v.Finish(f, name, "line")
	}
	if err != nil {
		v.StopOut()
		v.Out.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return view, nil
}

// openZstd decompresses a *.jsonl.zst stream and translates what is
// inside: pi JSONL line for line (same line numbers), the other JSONL
// formats through their converters, or an OpenClaw cold archive (its event
// records, cited by seq).
func openZstd(name string, r io.Reader, sink func(*Produced), lazy bool) (*View, error) {
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("%s: zstd: %w", name, err)
	}
	defer dec.Close()
	lr := conv.NewLineReader(dec)
	sn, replay, err := sniffLines(lr)
	if err != nil {
		return nil, fmt.Errorf("%s: zstd: %w (is the file complete?)", name, err)
	}
	var v *View
	switch {
	case sn.Format == Unknown && sn.Looks == "an OpenClaw cold-archive record":
		v, err = coldArchive(name, lr, replay)
	case sn.Format == Pi:
		v, err = copyLines(name, lr, replay)
	case sn.Format == Unknown:
		return nil, &UnknownFormatError{File: name + " (decompressed)", Line: sn.Line, Looks: sn.Looks}
	default:
		v, err = convert(name, sn.Format, lr, replay, sink, lazy)
	}
	if err != nil {
		return nil, err
	}
	v.Inner, v.Format = v.Format, Zstd
	return v, nil
}

// copyLines spools pi JSONL unchanged (malformed and blank lines too, so
// the pi reader reports them at their own line numbers).
func copyLines(name string, lr *conv.LineReader, replay [][]byte) (*View, error) {
	v, err := spoolLines(name, lr, replay, func(v *conv.Emitter, no int, l []byte) error {
		v.W.B = append(v.W.B, l...)
		return v.Put(no)
	})
	if err != nil {
		return nil, err
	}
	return conv.NewView(Pi, name, "line", nil, v), nil
}

// coldArchive reads the event records of an OpenClaw cold archive: one
// header record, then records {kind, row} where the rows of kind "event"
// are transcript_events rows {seq, event_json, created_at} (event_json the
// original line) and the other kinds (identity, active, index, fts) are the
// store's derived tables.
func coldArchive(name string, lr *conv.LineReader, replay [][]byte) (*View, error) {
	v, err := spoolLines(name, lr, replay, func(v *conv.Emitter, no int, l []byte) error {
		seq, ev, ok, err := openclawsqlite.ColdRecord(l)
		if err != nil {
			v.Malformed = append(v.Malformed, Malformed{Line: no, Bytes: len(l), Err: conv.ShortJSONErr(err)})
			return nil
		}
		if !ok {
			return nil
		}
		v.W.B = append(v.W.B, ev...)
		return v.Put(seq)
	})
	if err != nil {
		return nil, err
	}
	return conv.NewView(Pi, name, "seq", v.Malformed, v), nil
}

// spoolLines builds a view from the lines of a decompressed stream (the
// replayed ones, then the rest of lr) by calling put with each line and
// its 1-based number; the view's Spool is finished, or closed on error.
func spoolLines(name string, lr *conv.LineReader, replay [][]byte, put func(v *conv.Emitter, no int, l []byte) error) (*conv.Emitter, error) {
	v := &conv.Emitter{Out: &conv.Spool{}}
	err := func() error {
		no := 0
		for _, l := range replay {
			no++
			if err := put(v, no, l); err != nil {
				return err
			}
		}
		for {
			l, err := lr.Next()
			if err == io.EOF {
				return v.FinishOut()
			}
			if err != nil {
				return fmt.Errorf("%s: zstd: %w (is the file complete?)", name, err)
			}
			no++
			if err := put(v, no, l); err != nil {
				return err
			}
		}
	}()
	if err != nil {
		v.Out.Close()
		return nil, err
	}
	return v, nil
}
