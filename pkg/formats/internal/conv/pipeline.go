package conv

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// The converters' time goes into decoding lines, which needs no state:
// ConvertLines reads the source in chunks of whole lines, decodes the lines
// of each chunk on every core, and applies the decoded lines in file order
// on one goroutine — the pi reader's scheme (pkg/transcript's load). Memory
// is the chunks in flight.
//
// A batch (its chunk and its decoded records, which point into the chunk)
// is used again once the converter holds nothing of it: a converter reads a
// gigabyte a megabyte at a time, and allocating every chunk and record anew
// made the collector, not the decoding, the larger part of the work.

// ConvChunk is how much of the source one batch holds (more for a longer
// line); tests lower it. Up to a dozen batches are in flight, each with
// its decoded records, on top of the session being built: at 1 MB they
// were 25 MB of a 1 GB Codex file's peak heap.
var ConvChunk = 256 << 10

// BatchConv is a converter whose lines are decoded (Decode: no state, any
// core) into records of type R, then applied in line order.
type BatchConv[R any] interface {
	LineConv
	// Decode fills rec from one non-blank line. rec holds what an earlier
	// line left in it: decode clears it, keeping only the arrays it
	// reuses (a line's blocks, allocated anew for every line, were a
	// tenth of what a converter allocated).
	Decode(raw []byte, rec *R)
	Apply(no int, rec *R) error
	// Holds reports whether the converter still points into lines it
	// applied (a message waiting for its next lines): their batches are
	// not used again until it no longer does.
	Holds() bool
}

type convBatch[R any] struct {
	data      []byte // whole lines; the last may lack its newline
	firstLine int
	recs      []convRec[R] // per line
	done      chan struct{}
}

type convRec[R any] struct {
	r     R
	blank bool
}

// ConvertLines feeds every line of r to c, numbered from 1.
func ConvertLines[R any](c BatchConv[R], r io.Reader) error {
	workers := min(runtime.GOMAXPROCS(0), 8)
	order := make(chan *convBatch[R], 2*workers)
	jobs := make(chan *convBatch[R], 2*workers)
	free := make(chan *convBatch[R], 2*workers+2)
	quit := make(chan struct{})
	var readErr error
	go func() {
		defer close(order)
		defer close(jobs)
		readErr = chunkLines(r, free, func(b *convBatch[R]) bool {
			select {
			case order <- b:
			case <-quit:
				return false
			}
			jobs <- b // workers drain jobs until it closes
			return true
		})
	}()
	for range workers {
		go func() {
			for b := range jobs {
				decodeBatch(c, b)
				close(b.done)
			}
		}()
	}
	if err := applyBatches(c, order, free); err != nil {
		close(quit)
		return err
	}
	if readErr != nil {
		return fmt.Errorf("read: %w", readErr)
	}
	// The reader is done and c holds nothing of the batches handed back:
	// their buffers serve the next file.
	for {
		select {
		case b := <-free:
			putChunk(b.data)
		default:
			return nil
		}
	}
}

// chunks keeps chunk buffers (ConvChunk bytes) across files: reading a
// directory of small sessions allocated and cleared several per file.
var chunks sync.Pool

// takeChunk is an empty buffer of capacity need at least.
func takeChunk(need int) []byte {
	if need == ConvChunk {
		if p, ok := chunks.Get().(*[]byte); ok && cap(*p) >= need {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, need)
}

// putChunk keeps b for takeChunk when it is a chunk's size.
func putChunk(b []byte) {
	if cap(b) == ConvChunk {
		b = b[:0]
		chunks.Put(&b)
	}
}

// applyBatches applies the decoded batches in order and hands each back
// to free once c holds nothing of it.
func applyBatches[R any](c BatchConv[R], order <-chan *convBatch[R], free chan<- *convBatch[R]) error {
	var kept []*convBatch[R] // applied batches c may still point into
	release := func(b *convBatch[R]) {
		if cap(b.data) > ConvChunk {
			return // a long line's buffer: not worth keeping
		}
		select {
		case free <- b:
		default:
		}
	}
	for b := range order {
		<-b.done
		no := b.firstLine
		for i := range b.recs {
			if rec := &b.recs[i]; !rec.blank {
				if err := c.Apply(no, &rec.r); err != nil {
					return err
				}
			}
			no++
			if len(kept) > 0 && !c.Holds() {
				for _, k := range kept {
					release(k)
				}
				kept = kept[:0]
			}
		}
		if c.Holds() {
			kept = append(kept, b)
		} else {
			release(b)
		}
	}
	return nil
}

func decodeBatch[R any](c BatchConv[R], b *convBatch[R]) {
	data := b.data
	b.recs = b.recs[:0]
	// One record a line: sized once rather than grown by doubling (5% of
	// reading a directory of small sessions, whose batches are new).
	if n := bytes.Count(data, []byte{'\n'}) + 1; cap(b.recs) < n {
		b.recs = make([]convRec[R], 0, n)
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		n := len(b.recs)
		if n < cap(b.recs) {
			b.recs = b.recs[:n+1] // a record of an earlier batch: decode clears it
		} else {
			b.recs = append(b.recs, convRec[R]{})
		}
		rec := &b.recs[n]
		rec.blank = len(bytes.TrimSpace(line)) == 0
		if !rec.blank {
			c.Decode(line, &rec.r)
		}
	}
}

// chunkLines cuts r into batches of whole lines, taking batches from free
// when there are any. A line longer than a chunk grows its buffer by
// doubling, so reading it stays linear.
func chunkLines[R any](r io.Reader, free <-chan *convBatch[R], send func(*convBatch[R]) bool) error {
	var carry []byte
	line := 1
	for {
		b := &convBatch[R]{}
		select {
		case b = <-free:
		default:
		}
		buf := b.data[:0]
		if need := max(ConvChunk, 2*len(carry)); cap(buf) < need {
			buf = takeChunk(need)
		}
		buf = append(buf, carry...)
		n, err := io.ReadFull(r, buf[len(carry):cap(buf)])
		buf = buf[:len(carry)+n]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		if eof && len(buf) == 0 {
			return nil // the source ended with the last chunk
		}
		cut := bytes.LastIndexByte(buf, '\n') + 1
		if eof {
			cut = len(buf)
		}
		if cut == 0 {
			carry = buf // part of a long line: this buffer is nobody else's
			continue
		}
		// The rest of the chunk is copied out: the batch is used again
		// once applied, which may be before the next chunk is read.
		carry = append(carry[:0], buf[cut:]...)
		b.data, b.firstLine, b.done = buf[:cut], line, make(chan struct{})
		line += bytes.Count(b.data, []byte{'\n'})
		if !send(b) || eof {
			return nil
		}
	}
}
