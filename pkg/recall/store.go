// Package recall is ctxtool's memory search over session transcripts: an
// on-disk SQLite index (FTS5) of every message of every session file —
// including what compactions and rolls removed from the active context —
// searched with BM25 scored like OpenClaw's memory_search, optionally mixed
// with embedding similarity.
//
// Rolling mode drops messages from the context and trusts recall to bring
// them back; `roll` therefore asks Covered before evicting and calls Index
// when the index is behind.
//
// The index is one file, <stateDir>/recall/index.sqlite (WAL mode), safe to
// share between processes: writes take SQLite's write lock up front
// (BEGIN IMMEDIATE) and wait up to 30 s for it.
//
// Use:
//
//	ix, err := recall.Open(stateDir)            // recall.WithEmbedder(e) for hybrid search
//	defer ix.Close()
//	ok, err := ix.Covered(path)                  // every complete line indexed?
//	st, err := ix.Index(ctx, path)               // bring one file up to date
//	res, err := ix.Search(ctx, "query", recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
//
// Known limits: an in-place edit of a file's middle that keeps its size is
// caught only when it touches a sampled block;
// vector search is a brute-force scan of every stored embedding (fine for
// tens of thousands of chunks, slow beyond).
package recall

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // pure-Go SQLite with FTS5
)

// schemaVersion changes whenever the tables or the extraction/chunking
// rules change; an index of another version is rebuilt from scratch (it is a
// cache of the transcripts, nothing in it is original).
const schemaVersion = "7"

// DefaultMaxChars caps tool results, tool-call arguments, thinking and bash
// output per message (head and tail kept).
const DefaultMaxChars = 4000

const schema = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
	id INTEGER PRIMARY KEY,
	path TEXT NOT NULL UNIQUE,
	size INTEGER NOT NULL,
	mtime_ns INTEGER NOT NULL,
	head_len INTEGER NOT NULL,
	head_hash TEXT NOT NULL,
	sample_hash TEXT NOT NULL,
	last_line_start INTEGER NOT NULL,
	last_line_hash TEXT NOT NULL,
	bytes_indexed INTEGER NOT NULL,
	lines_indexed INTEGER NOT NULL,
	malformed INTEGER NOT NULL,
	indexed_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
	id INTEGER PRIMARY KEY,
	file_id INTEGER NOT NULL,
	start_line INTEGER NOT NULL,
	end_line INTEGER NOT NULL,
	start_offset INTEGER NOT NULL,
	entry_ids TEXT NOT NULL,
	ts INTEGER NOT NULL,
	has_cjk INTEGER NOT NULL,
	text TEXT NOT NULL,
	model TEXT,
	embedding BLOB
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id, start_line);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
	text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_tri USING fts5(
	text, content='chunks', content_rowid='id', tokenize='trigram case_sensitive 0');
`

// Index is an open recall index. It is safe for concurrent use; writes are
// serialised.
type Index struct {
	db       *sql.DB
	path     string
	embedder Embedder
	maxChars int

	wmu sync.Mutex // one writer per process (SQLite allows one anyway)
}

// Option configures Open.
type Option func(*Index)

// WithEmbedder turns on semantic search: new chunks are embedded at index
// time and queries are scored 0.7 × vector + 0.3 × keyword.
func WithEmbedder(e Embedder) Option { return func(ix *Index) { ix.embedder = e } }

// WithMaxChars sets the per-message cap for tool output (DefaultMaxChars).
func WithMaxChars(n int) Option {
	return func(ix *Index) {
		if n > 0 {
			ix.maxChars = n
		}
	}
}

// DBPath is where the index of a state directory lives.
func DBPath(stateDir string) string { return filepath.Join(stateDir, "recall", "index.sqlite") }

// Open opens (creating if needed) the index in <stateDir>/recall/index.sqlite.
func Open(stateDir string, opts ...Option) (*Index, error) {
	if stateDir == "" {
		return nil, errors.New("recall: empty state directory (set --state-dir or CTXTOOL_STATE_DIR)")
	}
	return OpenFile(DBPath(stateDir), opts...)
}

// OpenFile opens the index at an explicit database path.
func OpenFile(dbPath string, opts ...Option) (*Index, error) {
	// 0700: the index holds transcript text (tool output may carry secrets).
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return nil, fmt.Errorf("recall: create %s: %v (check the state directory's permissions)", filepath.Dir(dbPath), err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(OFF)")
	q.Add("_pragma", "cache_size(-32000)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+dbPath+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("recall: open %s: %v", dbPath, err)
	}
	ix := &Index{db: db, path: dbPath, maxChars: DefaultMaxChars}
	for _, o := range opts {
		o(ix)
	}
	if err := ix.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("recall: %s: %v (delete the file to rebuild the index)", dbPath, err)
	}
	return ix, nil
}

// Path is the database file.
func (ix *Index) Path() string { return ix.path }

// Close closes the database.
func (ix *Index) Close() error { return ix.db.Close() }

func (ix *Index) migrate(ctx context.Context) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return err
	}
	var v string
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='schema'`).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if v != schemaVersion {
		for _, t := range []string{"chunks_fts", "chunks_tri", "chunks", "files"} {
			if _, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?)`, schemaVersion); err != nil {
		return err
	}
	return tx.Commit()
}
