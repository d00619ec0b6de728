package recall

import (
	"context"
	"database/sql"
	"errors"
)

// backend is where an index keeps its rows. Both stores hold the same rows:
// a files table (one row per session file with the bookkeeping of what is
// indexed, see fileRow) and a chunks table (see chunk); they differ in how
// text is searched and how concurrent writers are kept apart. The logic that
// decides what to write (plan, scan, chunk) and how to score what is found
// lives once, in index.go and search.go.
type backend interface {
	// location names the index in messages: a file path or a URL without
	// its password.
	location() string
	close() error
	// droppedSchema is the schema version of the tables the open found
	// and dropped, made by an earlier ctxtool ("": none were dropped).
	droppedSchema() string

	// fileRow reads a file's bookkeeping without taking any lock (nil when
	// the file is not indexed).
	fileRow(ctx context.Context, path string) (*fileRow, error)
	// fileID finds an indexed file (ok=false when it is not).
	fileID(ctx context.Context, path string) (id int64, ok bool, err error)
	// files lists the indexed paths, sorted.
	files(ctx context.Context) ([]string, error)
	// sizes is the index's size on disk and the bytes of the sessions it
	// covers.
	sizes(ctx context.Context) (Sizes, error)

	// batch starts a group of per-file writes.
	batch(ctx context.Context) (batch, error)

	// match finds the chunks in scope f containing every token (lower-cased
	// query tokens), at most limit, best first by the backend's own rank
	// (FTS5's weighted bm25, or BM25 computed here for PostgreSQL; a query
	// matching more than rankWindow chunks takes the newest), which only
	// chooses the candidates: score.go scores them.
	match(ctx context.Context, tokens []string, f filter, limit int) ([]int64, error)
	// corpus is the statistics scoring needs for terms: chunk count,
	// average chunk length and each term's document frequency (counted up
	// to a bound, estimated past it).
	corpus(ctx context.Context, terms []term) (corpus, error)
	// chunks loads stored chunks by id (ids that vanished are left out,
	// and so are chunks whose text could not be read again from their
	// session file: stale says which files and why, see reread.go).
	chunks(ctx context.Context, ids []int64) (cs []storedChunk, stale []string, err error)

	// vectors calls fn for every chunk in scope f embedded with model.
	vectors(ctx context.Context, model string, f filter, fn func(id int64, vec []byte)) error
	// unembedded lists a file's chunks without a vector of model.
	unembedded(ctx context.Context, fileID int64, model string) (ids []int64, texts []string, err error)
	// storeVectors saves vectors (encoded by encodeVec) in one transaction.
	storeVectors(ctx context.Context, model string, ids []int64, vecs [][]byte) error
}

// batch groups per-file writes. Each file is all-or-nothing: on SQLite
// many files share the batch's one transaction (FTS5 writes a new segment
// per commit), and a file that fails half way rolls the whole batch back
// (errBatchLost: the engine redoes the others); on PostgreSQL every file is
// its own transaction under the file's advisory lock, committed when file
// returns. A kill before commit leaves the index as it was before the
// batch, which is before each of its files.
type batch interface {
	file(ctx context.Context, path string, fn func(w writer) error) error
	commit() error
	rollback()
}

// errBatchLost says a batch was rolled back: none of its files are written.
var errBatchLost = errors.New("recall: batch rolled back")

// writer writes one file's rows inside a batch; every read sees the
// batch's own writes and the file's lock is held.
type writer interface {
	fileRow(ctx context.Context, path string) (*fileRow, error)
	// lastChunk is the file's last chunk (ok=false when it has none).
	lastChunk(ctx context.Context, fileID int64) (c storedChunk, startOffset int64, ok bool, err error)
	deleteChunk(ctx context.Context, id int64) error
	deleteFileChunks(ctx context.Context, fileID int64) error
	addFile(ctx context.Context, path string) (int64, error)
	addChunks(ctx context.Context, fileID int64, cs []chunk) error
	updateFile(ctx context.Context, fileID int64, r *fileRow) error
	// removeFile drops a file and its chunks (false: it was not indexed).
	removeFile(ctx context.Context, path string) (bool, error)
}

// match is one chunk found by a keyword query, with the backend's rank.
type match struct {
	id    int64
	score float64
}

// dfCap bounds the count of a term's document frequency: a term in more
// chunks than this is common either way, and counting walks its postings.
const dfCap = 20000

// storedChunk is a chunk as read back for a search hit.
type storedChunk struct {
	id             int64
	path           string
	start, end     int
	off            int64 // where line start begins in the file
	entryIDs       string
	ts             int64
	text           string
	kinds          string
	agent, project string
}

const fileCols = `id, size, mtime_ns, head_len, head_hash, sample_hash, last_line_start,
	last_line_hash, bytes_indexed, lines_indexed, malformed, agent, project`

// chunkCols are what chunks reads, from chunks c joined with files f.
const chunkCols = `c.id, f.path, c.start_line, c.end_line, c.start_offset, c.entry_ids, c.ts, c.text, c.kinds, f.agent, f.project`

// rowScanner is a *sql.Row or a pgx.Row.
type rowScanner interface{ Scan(dest ...any) error }

// scanRow scans the one row r may hold: ok=false, without error, when the
// query found none (pgx's ErrNoRows wraps database/sql's).
func scanRow(r rowScanner, dest ...any) (ok bool, err error) {
	err = r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// scanFileRow reads a row of fileCols (nil when there is none).
func scanFileRow(r rowScanner) (*fileRow, error) {
	f := &fileRow{}
	ok, err := scanRow(r, &f.id, &f.size, &f.mtimeNs, &f.headLen, &f.headHash, &f.sampleHash, &f.lastLineStart,
		&f.lastLineHash, &f.bytesIndexed, &f.lines, &f.malformed, &f.agent, &f.project)
	if !ok {
		return nil, err
	}
	return f, nil
}

// scanLastChunk reads a row of (id, start, end, start offset, text), the
// shape of writer.lastChunk's result, and then the columns more.
func scanLastChunk(r rowScanner, more ...any) (c storedChunk, startOffset int64, ok bool, err error) {
	ok, err = scanRow(r, append([]any{&c.id, &c.start, &c.end, &startOffset, &c.text}, more...)...)
	return c, startOffset, ok, err
}

// rowIter is an open query result, a pgx.Rows or a *sql.Rows (through
// sqlRows): eachRow reads it for both stores and closes it.
type rowIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// sqlRows is what QueryContext returned as a rowIter.
func sqlRows(rows *sql.Rows, err error) (rowIter, error) {
	if err != nil {
		return nil, err
	}
	return sqlRowIter{rows}, nil
}

// sqlRowIter gives a *sql.Rows pgx's Close. Its error is not read (it was
// not before: a deferred Close): what the reading met, Err reports.
type sqlRowIter struct{ *sql.Rows }

func (r sqlRowIter) Close() { _ = r.Rows.Close() }

// eachRow reads a query's result, given as the query returned it (rows,
// err): each row's columns into a T, at the places cols gives, handed to
// fn; the rows are closed after. Every multi-row read of both stores is
// this loop.
func eachRow[T any](rows rowIter, err error, cols func(*T) []any, fn func(T)) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v T
		if err := rows.Scan(cols(&v)...); err != nil {
			return err
		}
		fn(v)
	}
	return rows.Err()
}

// allRows is eachRow keeping every row.
func allRows[T any](rows rowIter, err error, cols func(*T) []any) ([]T, error) {
	var out []T
	if err := eachRow(rows, err, cols, func(v T) { out = append(out, v) }); err != nil {
		return nil, err
	}
	return out, nil
}

// collectChunks reads rows of chunkCols.
func collectChunks(rows rowIter, err error) ([]storedChunk, error) {
	return allRows(rows, err, func(c *storedChunk) []any {
		return []any{&c.id, &c.path, &c.start, &c.end, &c.off, &c.entryIDs, &c.ts, &c.text, &c.kinds, &c.agent, &c.project}
	})
}

// idText is a row of (id, text).
type idText struct {
	id   int64
	text string
}

func idTextCols(r *idText) []any { return []any{&r.id, &r.text} }

// collectPaths reads rows of (path).
func collectPaths(rows rowIter, err error) ([]string, error) {
	return allRows(rows, err, func(p *string) []any { return []any{p} })
}

// collectIDTexts reads rows of (id, text) into two lists.
func collectIDTexts(rows rowIter, err error) (ids []int64, texts []string, _ error) {
	err = eachRow(rows, err, idTextCols, func(r idText) {
		ids = append(ids, r.id)
		texts = append(texts, r.text)
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, texts, nil
}

// eachVector reads rows of (id, embedding).
func eachVector(rows rowIter, err error, fn func(id int64, vec []byte)) error {
	type idVec struct {
		id  int64
		vec []byte
	}
	return eachRow(rows, err, func(r *idVec) []any { return []any{&r.id, &r.vec} }, func(r idVec) { fn(r.id, r.vec) })
}

// Sizes is an index's size against the sessions it covers.
type Sizes struct {
	// Index is the bytes the index takes: the SQLite files' pages, or the
	// PostgreSQL tables with their indexes.
	Index int64 `json:"indexBytes"`
	// Corpus is the bytes of session files it covers.
	Corpus int64 `json:"corpusBytes"`
}

// Share is Index / Corpus (0 for an empty corpus).
func (s Sizes) Share() float64 {
	if s.Corpus <= 0 {
		return 0
	}
	return float64(s.Index) / float64(s.Corpus)
}
