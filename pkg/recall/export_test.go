package recall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
)

// WithBatchBytes bounds a SQLite batch (tests make several batches out of a
// small corpus).
func WithBatchBytes(n int64) Option { return func(ix *Index) { ix.batchBytes = n } }

// Dump describes every indexed file and its chunks, by path: what a clean
// index and a crashed-then-completed one must agree on (ids aside).
func Dump(ix *Index) (map[string][]string, error) {
	ctx := context.Background()
	const q = `SELECT f.path, f.bytes_indexed, f.lines_indexed, c.start_line, c.end_line, c.entry_ids, %s
		FROM %s f JOIN %s c ON c.file_id = f.id ORDER BY f.path, c.start_line, c.id`
	out := map[string][]string{}
	type row struct {
		path, ids, text   string
		bytes             int64
		lines, start, end int
	}
	var rows rowIter
	var err error
	switch st := ix.st.(type) {
	case *sqliteStore:
		rows, err = sqlRows(st.db.QueryContext(ctx, fmt.Sprintf(q, recallTextFunc+"(c.text)", "files", "chunks")))
	case *pgStore:
		rows, err = st.pool.Query(ctx, fmt.Sprintf(q, "c.text", "ctxtool_recall_files", "ctxtool_recall_chunks"))
	default:
		return nil, fmt.Errorf("unknown backend %T", ix.st)
	}
	err = eachRow(rows, err, func(r *row) []any {
		return []any{&r.path, &r.bytes, &r.lines, &r.start, &r.end, &r.ids, &r.text}
	}, func(r row) {
		h := sha256.Sum256([]byte(r.text))
		out[r.path] = append(out[r.path], fmt.Sprintf("%d/%d L%d-%d [%s] %s", r.bytes, r.lines, r.start, r.end, r.ids, hex.EncodeToString(h[:8])))
	})
	return out, err
}

// sortedKeys is for messages.
func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// SortedKeys lists a dump's paths.
func SortedKeys(m map[string][]string) []string { return sortedKeys(m) }

// LimitPages makes the SQLite file unable to grow (as on a full disk): one
// connection, whose page limit is the file's current size.
func LimitPages(t interface{ Fatal(...any) }, ix *Index) {
	st := ix.st.(*sqliteStore)
	st.db.SetMaxOpenConns(1)
	if _, err := st.db.Exec(`PRAGMA max_page_count = 1`); err != nil { // clamps to the current page count
		t.Fatal(err)
	}
}

// FTSSegments counts the segments of a SQLite index's word index. FTS5
// stores a segment's pages in its %_data table under rowids that carry the
// segment id above bit 37 (fts5Int.h, FTS5_SEGMENT_ROWID: 31 page bits, 5
// height bits, 1 doclist-index bit); rowids 1 and 10 are the averages and
// the structure record.
func FTSSegments(ix *Index) (int, error) {
	st, ok := ix.st.(*sqliteStore)
	if !ok {
		return 0, fmt.Errorf("not a SQLite index")
	}
	var n int
	err := st.fts.QueryRow(`SELECT count(DISTINCT id >> 37) FROM chunks_fts_data WHERE id > 10`).Scan(&n)
	return n, err
}

// ChunkTexts is every indexed chunk's text, by path.
func ChunkTexts(ix *Index) (map[string][]string, error) {
	st, ok := ix.st.(*sqliteStore)
	if !ok {
		return nil, fmt.Errorf("ChunkTexts reads SQLite indexes only")
	}
	out := map[string][]string{}
	rows, err := sqlRows(st.db.Query(`SELECT f.path, ` + recallTextFunc + `(c.text) FROM files f JOIN chunks c ON c.file_id = f.id`))
	err = eachRow(rows, err, func(r *[2]string) []any { return []any{&r[0], &r[1]} }, func(r [2]string) {
		out[r[0]] = append(out[r[0]], r[1])
	})
	return out, err
}
