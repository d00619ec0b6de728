package recall

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
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
	Malformed      int     `json:"malformed"`
	MalformedLines []int   `json:"malformedLines,omitempty"`
	Embedded       int     `json:"embedded,omitempty"`
	Seconds        float64 `json:"seconds"`
}

type fileRow struct {
	id                          int64
	size, mtimeNs               int64
	headLen                     int64
	headHash, sampleHash        string
	lastLineStart, bytesIndexed int64
	lastLineHash                string
	lines, malformed            int
}

func absPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("recall: %s: %v", p, err)
	}
	return filepath.Clean(a), nil
}

// rowQuerier is a *sql.DB or a *sql.Tx.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func loadRow(ctx context.Context, db rowQuerier, path string) (*fileRow, error) {
	r := &fileRow{}
	err := db.QueryRowContext(ctx, `SELECT id, size, mtime_ns, head_len, head_hash, sample_hash, last_line_start,
		last_line_hash, bytes_indexed, lines_indexed, malformed FROM files WHERE path=?`, path).
		Scan(&r.id, &r.size, &r.mtimeNs, &r.headLen, &r.headHash, &r.sampleHash, &r.lastLineStart, &r.lastLineHash,
			&r.bytesIndexed, &r.lines, &r.malformed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recall: read index state of %s: %v", path, err)
	}
	return r, nil
}

func hashRange(f *os.File, off, n int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, off, n)); err != nil {
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
	for k := int64(1); k <= blocks; k++ {
		off := k * n / (blocks + 1)
		l := min(int64(size), n-off)
		if l <= 0 {
			continue
		}
		if _, err := io.Copy(h, io.NewSectionReader(f, off, l)); err != nil {
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
		return false, fmt.Errorf("recall: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("recall: %v", err)
	}
	row, err := loadRow(context.Background(), ix.db, abs)
	if err != nil || row == nil {
		return false, err
	}
	mode, err := plan(f, fi.Size(), row)
	if err != nil {
		return false, fmt.Errorf("recall: read %s: %v", abs, err)
	}
	return mode == ModeUnchanged, nil
}

// readResult is what reading a file's new lines produced.
type readResult struct {
	end           int64 // offset after the last complete line
	lastLineStart int64
	lines         int // physical line number of the last complete line
	read          int // lines read this run
	malformed     []int
	nMalformed    int
}

// scanLines reads complete lines from off (line numbers continue after
// line), extracts and chunks them, and hands finished chunks to emit.
// Malformed lines are counted after line newFrom only (earlier ones were
// counted when first indexed).
func (ix *Index) scanLines(ctx context.Context, f *os.File, conv *formats.LineConverter, off int64, line, newFrom int, emit func([]chunk) error) (readResult, error) {
	res := readResult{end: off, lastLineStart: off, lines: line}
	x := extractor{maxChars: ix.maxChars}
	ch := newChunker()
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, 1<<62), 1<<20)
	var long []byte
	isLong := false
	for {
		part, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, part...)
			isLong = true
			continue
		}
		if err == io.EOF {
			break // a trailing line without newline is not complete yet
		}
		if err != nil {
			return res, fmt.Errorf("recall: read %s: %v", f.Name(), err)
		}
		l := part
		if isLong {
			long = append(long, part...)
			l = long
		}
		res.lines++
		res.read++
		res.lastLineStart = res.end
		res.end += int64(len(l))
		units, ok := extractSourceLine(&x, conv, res.lines, l)
		if !ok && res.lines > newFrom {
			res.nMalformed++
			if len(res.malformed) < maxReportedMalformed {
				res.malformed = append(res.malformed, res.lines)
			}
		}
		for _, u := range units {
			if u.id == "" {
				// v1 entries have no ids; pkg/transcript names them by line.
				u.id = "v1:L" + strconv.Itoa(res.lines)
			}
			ch.add(contentLine{line: res.lines, off: res.lastLineStart, unit: u})
		}
		if isLong {
			long, isLong = long[:0], false
		}
		if res.read%256 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if out := ch.take(); len(out) > 0 {
				if err := emit(out); err != nil {
					return res, err
				}
			}
		}
	}
	if out := ch.finish(); len(out) > 0 {
		if err := emit(out); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Index brings the index of one session file up to date: nothing when it is
// unchanged, only the new lines when it grew, everything when the indexed
// part changed. It is safe while the session is being appended to.
func (ix *Index) Index(ctx context.Context, path string) (Stats, error) {
	start := time.Now()
	abs, err := absPath(path)
	if err != nil {
		return Stats{File: path}, err
	}
	st := Stats{File: abs}
	f, conv, err := openSource(abs)
	if err != nil {
		return st, fmt.Errorf("recall: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return st, fmt.Errorf("recall: %v", err)
	}
	if fi.IsDir() {
		return st, fmt.Errorf("recall: %s is a directory (index walks directories, Index takes files)", abs)
	}

	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	unchanged := func(row *fileRow) (Stats, error) {
		st.Mode, st.Skipped, st.Lines = ModeUnchanged, "unchanged", row.lines
		st.Embedded, err = ix.embedMissing(ctx, row.id)
		st.Seconds = time.Since(start).Seconds()
		return st, err
	}
	// Plan without the write lock first (the common case, unchanged, then
	// costs no lock), and again under it: another process may have indexed
	// the file in between.
	row, err := loadRow(ctx, ix.db, abs)
	if err != nil {
		return st, err
	}
	mode, err := plan(f, fi.Size(), row)
	if err != nil {
		return st, fmt.Errorf("recall: read %s: %v", abs, err)
	}
	if mode == ModeUnchanged {
		return unchanged(row)
	}
	tx, err := ix.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		return st, fmt.Errorf("recall: begin: %v", err)
	}
	defer tx.Rollback()
	if fi, err = f.Stat(); err != nil {
		return st, fmt.Errorf("recall: %v", err)
	}
	if row, err = loadRow(ctx, tx, abs); err != nil {
		return st, err
	}
	if mode, err = plan(f, fi.Size(), row); err != nil {
		return st, fmt.Errorf("recall: read %s: %v", abs, err)
	}
	if mode == ModeUnchanged {
		tx.Rollback()
		return unchanged(row)
	}
	st.Mode = mode
	var off int64
	line, malformedBefore := 0, 0
	if mode == ModeAppend {
		off, line, malformedBefore = row.bytesIndexed, row.lines, row.malformed
		// A small last chunk is chunked again together with the new lines,
		// so a session indexed after every turn does not end up as a row
		// of tiny chunks. Its lines are re-read, not counted as new.
		var id, startOff int64
		var startLine, endLine int
		var text string
		err := tx.QueryRowContext(ctx, `SELECT id, start_line, end_line, start_offset, text FROM chunks
			WHERE file_id=? ORDER BY start_line DESC, id DESC LIMIT 1`, row.id).Scan(&id, &startLine, &endLine, &startOff, &text)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return st, fmt.Errorf("recall: %v", err)
		}
		if err == nil && endLine == row.lines && weightedLen(text) < chunkMaxChars/2 {
			if err := deleteChunk(ctx, tx, id); err != nil {
				return st, err
			}
			st.LinesReread = row.lines - startLine + 1
			off, line = startOff, startLine-1
		}
	}
	newFrom := line + st.LinesReread // lines up to here were indexed before
	var fileID int64
	if row != nil {
		fileID = row.id
		if mode == ModeReindex {
			if err := deleteChunks(ctx, tx, fileID); err != nil {
				return st, err
			}
		}
	} else {
		r, err := tx.ExecContext(ctx, `INSERT INTO files(path, size, mtime_ns, head_len, head_hash, sample_hash,
			last_line_start, last_line_hash, bytes_indexed, lines_indexed, malformed, indexed_at)
			VALUES(?, 0, 0, 0, '', '', 0, '', 0, 0, 0, 0)`, abs)
		if err != nil {
			return st, fmt.Errorf("recall: add %s: %v", abs, err)
		}
		if fileID, err = r.LastInsertId(); err != nil {
			return st, err
		}
	}
	ins, err := newInserter(ctx, tx)
	if err != nil {
		return st, err
	}
	defer ins.close()
	// Reading and extracting (JSON decoding) runs beside the inserts
	// (SQLite tokenizing): two cores, two stages.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []chunk, 8)
	var res readResult
	var readErr error
	go func() {
		defer close(batches)
		res, readErr = ix.scanLines(pctx, f, conv, off, line, newFrom, func(cs []chunk) error {
			select {
			case batches <- cs:
				return nil
			case <-pctx.Done():
				return pctx.Err()
			}
		})
	}()
	var insErr error
	for cs := range batches {
		if insErr != nil {
			continue // drain so the reader can finish
		}
		for i := range cs {
			if insErr = ins.add(ctx, fileID, &cs[i]); insErr != nil {
				cancel()
				break
			}
		}
		st.Chunks += len(cs)
	}
	if insErr != nil {
		return st, insErr
	}
	if readErr != nil {
		return st, readErr
	}
	hl := min(int64(headLen), res.end)
	headHash, err := hashRange(f, 0, hl)
	if err != nil {
		return st, fmt.Errorf("recall: read %s: %v", abs, err)
	}
	lastHash, err := hashRange(f, res.lastLineStart, res.end-res.lastLineStart)
	if err != nil {
		return st, fmt.Errorf("recall: read %s: %v", abs, err)
	}
	sampHash, err := sampleHash(f, res.end)
	if err != nil {
		return st, fmt.Errorf("recall: read %s: %v", abs, err)
	}
	if fi2, err := f.Stat(); err == nil {
		fi = fi2
	}
	if _, err := tx.ExecContext(ctx, `UPDATE files SET size=?, mtime_ns=?, head_len=?, head_hash=?, sample_hash=?,
		last_line_start=?, last_line_hash=?, bytes_indexed=?, lines_indexed=?, malformed=?, indexed_at=?
		WHERE id=?`, fi.Size(), fi.ModTime().UnixNano(), hl, headHash, sampHash, res.lastLineStart, lastHash,
		res.end, res.lines, malformedBefore+res.nMalformed, time.Now().UnixMilli(), fileID); err != nil {
		return st, fmt.Errorf("recall: update %s: %v", abs, err)
	}
	ins.close()
	if err := tx.Commit(); err != nil {
		return st, fmt.Errorf("recall: commit %s: %v", abs, err)
	}
	st.Indexed = true
	st.LinesIndexed = res.lines - newFrom
	st.Lines = res.lines
	st.Bytes = res.end - max(off, rowBytes(row, mode))
	st.Malformed = res.nMalformed
	st.MalformedLines = res.malformed
	st.Embedded, err = ix.embedMissing(ctx, fileID)
	st.Seconds = time.Since(start).Seconds()
	return st, err
}

// inserter holds the prepared statements of one indexing transaction.
type inserter struct {
	chunk, fts, tri *sql.Stmt
}

func newInserter(ctx context.Context, tx *sql.Tx) (*inserter, error) {
	var ins inserter
	var err error
	if ins.chunk, err = tx.PrepareContext(ctx, `INSERT INTO chunks(file_id, start_line, end_line, start_offset,
		entry_ids, ts, has_cjk, text) VALUES(?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return nil, fmt.Errorf("recall: prepare: %v", err)
	}
	if ins.fts, err = tx.PrepareContext(ctx, `INSERT INTO chunks_fts(rowid, text) VALUES(?, ?)`); err != nil {
		ins.close()
		return nil, fmt.Errorf("recall: prepare: %v", err)
	}
	if ins.tri, err = tx.PrepareContext(ctx, `INSERT INTO chunks_tri(rowid, text) VALUES(?, ?)`); err != nil {
		ins.close()
		return nil, fmt.Errorf("recall: prepare: %v", err)
	}
	return &ins, nil
}

func (ins *inserter) close() {
	for _, s := range []*sql.Stmt{ins.chunk, ins.fts, ins.tri} {
		if s != nil {
			s.Close()
		}
	}
}

// add stores one chunk. Only chunks with CJK text go into the trigram
// table: a query that needs the trigram table contains CJK, so it can only
// match chunks that do.
func (ins *inserter) add(ctx context.Context, fileID int64, c *chunk) error {
	r, err := ins.chunk.ExecContext(ctx, fileID, c.StartLine, c.EndLine, c.StartOffset, strings.Join(c.EntryIDs, " "),
		c.Timestamp, c.HasCJK, c.Text)
	if err != nil {
		return fmt.Errorf("recall: insert chunk: %v", err)
	}
	id, err := r.LastInsertId()
	if err != nil {
		return err
	}
	if _, err := ins.fts.ExecContext(ctx, id, c.Text); err != nil {
		return fmt.Errorf("recall: insert chunk text: %v", err)
	}
	if c.HasCJK {
		if _, err := ins.tri.ExecContext(ctx, id, c.Text); err != nil {
			return fmt.Errorf("recall: insert chunk text: %v", err)
		}
	}
	return nil
}

// rowBytes is where new bytes start: the end of the indexed part when
// appending, 0 otherwise.
func rowBytes(row *fileRow, mode string) int64 {
	if mode == ModeAppend && row != nil {
		return row.bytesIndexed
	}
	return 0
}

// deleteChunk removes one chunk from the chunk table and both indexes.
func deleteChunk(ctx context.Context, tx *sql.Tx, id int64) error {
	return deleteChunksWhere(ctx, tx, "id=?", id)
}

// deleteChunks removes a file's chunks.
func deleteChunks(ctx context.Context, tx *sql.Tx, fileID int64) error {
	return deleteChunksWhere(ctx, tx, "file_id=?", fileID)
}

// deleteChunksWhere removes chunks from the chunk table and both full-text
// indexes (external-content FTS5 tables need the old text to delete).
func deleteChunksWhere(ctx context.Context, tx *sql.Tx, cond string, arg int64) error {
	for _, q := range []string{
		`INSERT INTO chunks_fts(chunks_fts, rowid, text) SELECT 'delete', id, text FROM chunks WHERE ` + cond,
		`INSERT INTO chunks_tri(chunks_tri, rowid, text) SELECT 'delete', id, text FROM chunks WHERE has_cjk=1 AND ` + cond,
		`DELETE FROM chunks WHERE ` + cond,
	} {
		if _, err := tx.ExecContext(ctx, q, arg); err != nil {
			return fmt.Errorf("recall: delete chunks: %v", err)
		}
	}
	return nil
}

// Remove drops a file from the index.
func (ix *Index) Remove(ctx context.Context, path string) error {
	abs, err := absPath(path)
	if err != nil {
		return err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.removeLocked(ctx, abs)
}

func (ix *Index) removeLocked(ctx context.Context, abs string) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recall: begin: %v", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `SELECT id FROM files WHERE path=?`, abs).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := deleteChunks(ctx, tx, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM files WHERE id=?`, id); err != nil {
		return err
	}
	return tx.Commit()
}

// Prune drops every indexed file that no longer exists and returns their
// paths. Files under one of roots only, when roots are given.
func (ix *Index) Prune(ctx context.Context, roots ...string) ([]string, error) {
	paths, err := ix.Files(ctx)
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
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	var removed []string
	for _, p := range paths {
		if len(absRoots) > 0 && !underAny(p, absRoots) {
			continue
		}
		if _, err := os.Stat(sourceFile(p)); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := ix.removeLocked(ctx, p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Files lists the indexed file paths.
func (ix *Index) Files(ctx context.Context) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path FROM files ORDER BY path`)
	if err != nil {
		return nil, fmt.Errorf("recall: list files: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
