package formats

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
)

// The converters' time goes into decoding lines, which needs no state:
// convertLines reads the source in chunks of whole lines, decodes the lines
// of each chunk on every core, and applies the decoded lines in file order
// on one goroutine — the pi reader's scheme (pkg/transcript's load). Memory
// is the chunks in flight.

// convChunk is how much of the source one batch holds (more for a longer
// line).
const convChunk = 1 << 20

type convBatch struct {
	data      []byte // whole lines; the last may lack its newline
	firstLine int
	recs      []any // per line; nil for a blank one
	done      chan struct{}
}

// convertLines feeds every line of r to c, numbered from 1.
func convertLines(c lineConv, r io.Reader) error {
	workers := min(runtime.GOMAXPROCS(0), 8)
	order := make(chan *convBatch, 2*workers)
	jobs := make(chan *convBatch, 2*workers)
	quit := make(chan struct{})
	var readErr error
	go func() {
		defer close(order)
		defer close(jobs)
		readErr = chunkLines(r, func(b *convBatch) bool {
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
	for b := range order {
		<-b.done
		no := b.firstLine
		for _, rec := range b.recs {
			if rec != nil {
				if err := c.apply(no, rec); err != nil {
					close(quit)
					return err
				}
			}
			no++
		}
	}
	if readErr != nil {
		return fmt.Errorf("read: %v", readErr)
	}
	return nil
}

func decodeBatch(c lineConv, b *convBatch) {
	data := b.data
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		var rec any
		if len(bytes.TrimSpace(line)) > 0 {
			rec = c.decode(line)
		}
		b.recs = append(b.recs, rec)
	}
}

// chunkLines cuts r into batches of whole lines. Every batch has a buffer
// of its own (decoded lines point into it); a line longer than a chunk
// grows its buffer by doubling, so reading it stays linear.
func chunkLines(r io.Reader, send func(*convBatch) bool) error {
	var carry []byte
	line := 1
	for {
		buf := make([]byte, len(carry), max(convChunk, 2*len(carry)))
		copy(buf, carry)
		n, err := io.ReadFull(r, buf[len(carry):cap(buf)])
		buf = buf[:len(carry)+n]
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		cut := bytes.LastIndexByte(buf, '\n') + 1
		if eof {
			cut = len(buf)
		}
		if cut == 0 {
			carry = buf
			continue
		}
		b := &convBatch{data: buf[:cut], firstLine: line, done: make(chan struct{})}
		line += bytes.Count(b.data, []byte{'\n'})
		carry = buf[cut:]
		if len(b.data) > 0 && !send(b) {
			return nil
		}
		if eof {
			return nil
		}
	}
}
