package recall

import (
	"context"
	"os"
	"time"
)

// Reading ahead: extraction (JSON decoding, chunking) and the inserts
// (index tokenizing) each take about half of a cold index's CPU. Within a
// file they run on the two cores as two stages (scan); across files the
// next files are opened, planned and read while the writer inserts the
// current one. Without it each file filled and drained the pipeline, and
// every commit stopped extraction: a directory of small sessions indexed
// at two thirds of one big file's speed.

// aheadFiles bounds how many files are opened (and read, each up to its
// scan's buffer) ahead of the one being written.
const aheadFiles = 2

// opened is a file of an IndexFiles run taken through the steps that need
// no lock: its absolute path, open, plan.
type opened struct {
	path string // as given
	st   Stats  // File: the absolute path once known
	source
	// err is the file's own error, or the store's (a *StoreError).
	err  error
	row  *fileRow
	mode string
	fi   os.FileInfo   // the file when planned
	took time.Duration // opening and planning
	// ahead reads the file from its first line (nil: not started).
	ahead *scan
}

// open opens and plans one file without the lock.
func (ix *Index) open(ctx context.Context, path string) *opened {
	start := time.Now()
	o := &opened{path: path, st: Stats{File: path}}
	defer func() { o.took = time.Since(start) }()
	abs, err := absPath(path)
	if err != nil {
		o.err = err
		return o
	}
	o.st.File = abs
	if o.source, o.err = openIndexable(abs); o.err != nil {
		return o
	}
	// Plan without the lock: unchanged, the common case, then costs no
	// lock (and no waiting for another indexer's batch).
	o.row, o.mode, o.fi, o.err = ix.planFile(ctx, o.f, abs)
	return o
}

// stillUnchanged tells whether an unchanged verdict still holds: the file
// has the size and modification time it was planned at. A read-ahead plans files before the
// ones ahead of them are written, so a file can grow between its plan and
// its turn (a file listed twice, grown after its first listing was
// written; an agent appending meanwhile); such a file goes through the
// plan under the lock like any other. A stat error does too, which
// reports it.
func (o *opened) stillUnchanged() bool {
	fi, err := o.f.Stat()
	return err == nil && fi.Size() == o.fi.Size() && fi.ModTime().Equal(o.fi.ModTime())
}

// close stops the read-ahead, if any, and closes the file.
func (o *opened) close() {
	if o.ahead != nil {
		o.ahead.stop()
		o.ahead = nil
	}
	if o.f != nil {
		o.f.Close()
	}
}

// readAhead opens and plans paths in order on one goroutine, which also
// reads every file that the plan says is read from its first line (new or
// rewritten: the common case of a cold index), one file after the other.
// One reader beside the writer: more would take the writer's core (Go
// schedules goroutines round robin, and the writer is the slower stage).
// The channel closes after the last file or once ctx is done.
func (ix *Index) readAhead(ctx context.Context, paths []string) <-chan *opened {
	out := make(chan *opened, aheadFiles-1)
	go func() {
		defer close(out)
		for _, p := range paths {
			o := ix.open(ctx, p)
			var s *scan
			if o.err == nil && (o.mode == ModeFull || o.mode == ModeReindex) {
				s = newScan(ctx)
				o.ahead = s
			}
			select {
			case out <- o:
			case <-ctx.Done():
				o.ahead = nil // never run: nothing to stop
				o.close()
				return
			}
			if s != nil {
				ix.runScan(s, o.source, 0, 0, 0)
			}
		}
	}()
	return out
}

// scanner returns the scan of o's lines from off (line numbers continue
// after line, malformed lines counted after newFrom): the read-ahead when
// it started there, else a new scan (the read-ahead is then stopped: the
// file was indexed meanwhile, by another process).
func (ix *Index) scanner(ctx context.Context, o *opened, off int64, line, newFrom int) *scan {
	if s := o.ahead; s != nil {
		o.ahead = nil
		if off == 0 && line == 0 && newFrom == 0 {
			return s
		}
		s.stop()
	}
	return ix.startScan(ctx, o.source, off, line, newFrom)
}

// scan reads, extracts and chunks a file's lines on a goroutine (its own,
// or the read-ahead's): batches of chunks on c; once c is closed, res and
// err say how the read ended.
type scan struct {
	ctx    context.Context
	c      chan []chunk
	cancel context.CancelFunc
	res    readResult
	err    error
}

func newScan(ctx context.Context) *scan {
	ctx, cancel := context.WithCancel(ctx)
	return &scan{ctx: ctx, c: make(chan []chunk, 8), cancel: cancel}
}

// startScan starts reading src from off (see scanLines) on a goroutine.
func (ix *Index) startScan(ctx context.Context, src source, off int64, line, newFrom int) *scan {
	s := newScan(ctx)
	go ix.runScan(s, src, off, line, newFrom)
	return s
}

// runScan reads src from off into s (see scanLines).
func (ix *Index) runScan(s *scan, src source, off int64, line, newFrom int) {
	defer close(s.c)
	s.res, s.err = ix.scanLines(s.ctx, src, off, line, newFrom, func(cs []chunk) error {
		select {
		case s.c <- cs:
			return nil
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	})
}

// stop ends a scan whose chunks are not wanted and waits until it has
// ended (it reads the file: it must be done before the file is closed).
func (s *scan) stop() {
	s.cancel()
	for range s.c {
	}
}
