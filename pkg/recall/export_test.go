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
	const q = `SELECT f.path, f.bytes_indexed, f.lines_indexed, c.start_line, c.end_line, c.entry_ids, c.start_offset, c.text
		FROM %s f JOIN %s c ON c.file_id = f.id ORDER BY f.path, c.start_line, c.id`
	out := map[string][]string{}
	type row struct {
		path, ids         string
		text              []byte
		bytes, off        int64
		lines, start, end int
	}
	var rows rowIter
	var err error
	redact := false
	switch st := ix.st.(type) {
	case *sqliteStore:
		rows, err = sqlRows(st.db.QueryContext(ctx, fmt.Sprintf(q, "files", "chunks")))
		redact = st.redact
	case *pgStore:
		rows, err = st.pool.Query(ctx, fmt.Sprintf(q, "ctxtool_recall_files", "ctxtool_recall_chunks"))
	default:
		return nil, fmt.Errorf("unknown backend %T", ix.st)
	}
	all, err := allRows(rows, err, func(r *row) []any {
		return []any{&r.path, &r.bytes, &r.lines, &r.start, &r.end, &r.ids, &r.off, &r.text}
	})
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(all))
	if _, ok := ix.st.(*sqliteStore); ok {
		refs := make([]textRef, len(all))
		for i, r := range all {
			refs[i] = textRef{path: r.path, line: r.start, off: r.off, value: r.text}
		}
		rr := rereader{redact: redact}
		var read []bool
		if texts, read, err = rr.chunkTexts(refs); err != nil {
			return nil, err
		}
		for i := range read {
			if !read[i] {
				texts[i] = "(stale)"
			}
		}
	} else {
		for i, r := range all {
			texts[i] = string(r.text)
		}
	}
	for i, r := range all {
		h := sha256.Sum256([]byte(texts[i]))
		out[r.path] = append(out[r.path], fmt.Sprintf("%d/%d L%d-%d [%s] %s", r.bytes, r.lines, r.start, r.end, r.ids, hex.EncodeToString(h[:8])))
	}
	return out, nil
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

// ChunkTexts is every indexed chunk's text, by path (as search reads it:
// "(stale)" for a chunk whose file changed).
func ChunkTexts(ix *Index) (map[string][]string, error) {
	st, ok := ix.st.(*sqliteStore)
	if !ok {
		return nil, fmt.Errorf("ChunkTexts reads SQLite indexes only")
	}
	rows, err := sqlRows(st.db.Query(`SELECT c.id, f.path, c.start_line, c.start_offset, c.text FROM files f JOIN chunks c ON c.file_id = f.id ORDER BY c.id`))
	all, err := allRows(rows, err, func(r *idRef) []any { return []any{&r.id, &r.path, &r.line, &r.off, &r.value} })
	if err != nil {
		return nil, err
	}
	refs := make([]textRef, len(all))
	for i, r := range all {
		refs[i] = r.textRef
	}
	rr := rereader{redact: st.redact}
	texts, read, err := rr.chunkTexts(refs)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for i, r := range all {
		if !read[i] {
			texts[i] = "(stale)"
		}
		out[r.path] = append(out[r.path], texts[i])
	}
	return out, nil
}

// RefShare is the share of a SQLite index's chunks whose text is read
// again from their session file rather than stored.
func RefShare(ix *Index) (float64, error) {
	st, ok := ix.st.(*sqliteStore)
	if !ok {
		return 0, fmt.Errorf("RefShare reads SQLite indexes only")
	}
	var refs, all float64
	err := st.db.QueryRow(`SELECT coalesce(sum(substr(text, 1, 1) = x'02'), 0), count(*) FROM chunks`).Scan(&refs, &all)
	if all == 0 {
		return 0, err
	}
	return refs / all, err
}

// ScannedTexts is the text of every chunk indexing path makes, as the
// indexer's scan produces it (before anything is stored).
func ScannedTexts(ix *Index, path string) ([]string, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer src.f.Close()
	var out []string
	_, err = ix.scanLines(context.Background(), src, 0, 0, 0, func(cs []chunk) error {
		for _, c := range cs {
			out = append(out, c.Text)
		}
		return nil
	})
	return out, err
}
