package recall

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// sqliteSchema is the main file's: the files and their chunks (the
// full-text indexes are in the FTS file, see ftsSchema). Chunk ids are
// never reused (AUTOINCREMENT): the FTS file's repair relies on it.
const sqliteSchema = `
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
	indexed_at INTEGER NOT NULL,
	agent TEXT NOT NULL DEFAULT '',
	project TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS chunks(
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	file_id INTEGER NOT NULL,
	start_line INTEGER NOT NULL,
	end_line INTEGER NOT NULL,
	start_offset INTEGER NOT NULL,
	entry_ids TEXT NOT NULL,
	ts INTEGER NOT NULL,
	has_cjk INTEGER NOT NULL,
	text BLOB NOT NULL, -- compressed, see textz.go
	kinds TEXT NOT NULL DEFAULT '',
	model TEXT,
	embedding BLOB
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id, start_line);
CREATE TABLE IF NOT EXISTS text_dicts(id INTEGER PRIMARY KEY, dict BLOB NOT NULL);
`

// sqliteStore is the embedded default backend, on modernc.org/sqlite
// (SQLite translated to Go: no cgo). A cold index's writer is mostly
// FTS5's term hash (a pointer chase per token: a third of the writer's
// time even in native C), so another driver barely helps. Replaying the
// 275k chunks of a directory of 500 sessions, the writer took 0.95-1.04x
// modernc's CPU on ncruces/go-sqlite3 v0.37 (also pure Go, through
// wasm2go; its bm25 ranks differ from modernc's in the last bit) and
// 0.73-0.85x on mattn/go-sqlite3 (cgo, and FTS5 only with a build tag).
type sqliteStore struct {
	db     *sql.DB // the main file: writes, bookkeeping, chunks
	fts    *sql.DB // the FTS file's writers
	search *sql.DB // the main file with the FTS file attached
	path   string
	// oldSchema is the schema of the tables the open dropped ("": none).
	oldSchema string
	schema    string   // schemaFor(redact): the version the tables must have
	dict      textDict // the chunk text's compression (textz.go)
	// redact: the index is redacted; text read again from the session
	// files is redacted the same way (reread.go).
	redact bool
}

func openSQLite(dbPath, schema string) (*sqliteStore, error) {
	// 0700: the index holds transcript text (tool output may carry secrets).
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return nil, fmt.Errorf("recall: create %s: %w (check the state directory's permissions)", filepath.Dir(dbPath), err)
	}
	// 0600: SQLite creates a new file with the umask's mode (0644 as a
	// rule) and gives its -wal and -shm files the main file's mode.
	for _, p := range []string{dbPath, ftsPath(dbPath)} {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("recall: create %s: %w (check the state directory's permissions)", p, err)
		}
		f.Close()
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	// 16 KiB pages for a new file (an existing one keeps its size): a cold
	// index of a 1 GB session writes a quarter of the pages, each read,
	// written to the WAL and checkpointed. The driver runs _journal_mode
	// after the _pragma list: page_size must come first, WAL fixes it.
	q.Add("_pragma", "page_size(16384)")
	q.Set("_journal_mode", "WAL")
	// synchronous OFF: a kill -9 of ctxtool loses nothing committed (the
	// OS has the pages); a power cut may lose the last commits, which the
	// next run indexes again. WAL keeps the file consistent either way.
	q.Add("_pragma", "synchronous(OFF)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	for attempt := 1; ; attempt++ {
		s, err := openSQLiteFiles(dbPath, schema, q.Encode())
		if err == nil {
			return s, nil
		}
		if !creationRace(err) || attempt == openAttempts {
			return nil, s.err("open", err)
		}
		time.Sleep(time.Duration(attempt) * 20 * time.Millisecond)
	}
}

// openSQLiteFiles opens the main file and the FTS file with the settings
// of query, migrating both and repairing the FTS file if a process died
// between a batch's two commits.
func openSQLiteFiles(dbPath, schema, query string) (*sqliteStore, error) {
	ctx := context.Background()
	// Page caches: the FTS file's 16 MB (its allocations take about twice
	// that: a 16 KiB page and its header round up; a larger cache did not
	// index faster). The main file's rows are appended, 2 MB is enough:
	// with 16 MB a cold index of 100 MB peaked 84 MB higher, at the same
	// CPU.
	dsn := "file:" + dbPath + "?" + query + "&_pragma=cache_size%28-2000%29"
	ftsDSN := "file:" + ftsPath(dbPath) + "?" + query + "&_pragma=cache_size%28-16000%29"
	s := &sqliteStore{path: dbPath, schema: schema, redact: schema == schemaFor(true)}
	// The pools connect when first used. A search that finds both files
	// current (s.current) uses only the search pool's connection: opening a
	// connection reads the file's schema and applies the pragmas, about
	// 2.5 ms of CPU each, and a writer's also took the write lock to check
	// the schema; a cold process searched through three connections.
	var err error
	if s.db, err = sql.Open("sqlite", dsn); err != nil {
		return s, err
	}
	if s.fts, err = sql.Open("sqlite", ftsDSN); err != nil {
		s.close()
		return s, err
	}
	if err = s.openSearch(dsn, ftsPath(dbPath)); err != nil {
		s.close()
		return s, err
	}
	if !s.current(ctx) {
		err = s.migrate(ctx)
		if err == nil {
			err = s.openFTS(ctx)
		}
	}
	if err == nil {
		err = s.loadDicts(ctx, s.search)
	}
	if err == nil {
		zDicts.Lock()
		zDicts.loaders[s] = func() error { return s.loadDicts(context.Background(), s.search) }
		zDicts.Unlock()
		err = s.repairAtOpen(ctx)
	}
	if err != nil {
		s.close()
		return s, err
	}
	return s, nil
}

// current reports whether the main file has this build's schema and the
// FTS file is its pair of this layout, read through the search pool
// without a lock. Anything else (a new, old or damaged index, or an error)
// is false: migrate and openFTS then check again under the write locks.
func (s *sqliteStore) current(ctx context.Context) bool {
	var schema, owner, ftsOwner string
	err := s.search.QueryRowContext(ctx, `SELECT
		(SELECT value FROM main.meta WHERE key = 'schema'),
		(SELECT value FROM main.meta WHERE key = 'fts_owner'),
		(SELECT value FROM fts.fts_meta WHERE key = 'owner')`).Scan(&schema, &owner, &ftsOwner)
	return err == nil && schema == s.schema && ftsOwner == ftsPairing(owner)
}

// openAttempts bounds the retries of creationRace errors (about 2 s).
const openAttempts = 12

// creationRace reports the errors of opening an index that another
// process is creating at the same moment (cron jobs started together on a
// fresh machine): switching a new file to WAL takes an exclusive lock that
// SQLite's busy handler does not wait for, and the loser can find the
// rollback journal deleted under it. Both pass once the file is in WAL
// mode, so the open is tried again.
func creationRace(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	const ioerrDeleteNoent = 10 | 23<<8 // SQLITE_IOERR_DELETE_NOENT
	switch se.Code() {
	case 5, 6, ioerrDeleteNoent: // SQLITE_BUSY, SQLITE_LOCKED
		return true
	}
	return se.Code()&0xff == 5 // SQLITE_BUSY_*
}

func (s *sqliteStore) location() string { return s.path }

func (s *sqliteStore) droppedSchema() string { return s.oldSchema }

func (s *sqliteStore) close() error {
	zDicts.Lock()
	delete(zDicts.loaders, s)
	zDicts.Unlock()
	var errs []error
	for _, db := range []*sql.DB{s.search, s.fts, s.db} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// err turns a database error into one that names the index and says what
// to do when the storage itself failed.
func (s *sqliteStore) err(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		// Primary result codes (the low byte of extended codes).
		switch se.Code() & 0xff {
		case 13: // SQLITE_FULL
			return &StoreError{Index: s.path, Err: fmt.Errorf("%s: the disk is full (%w)", op, err), Remedy: remedyFull}
		case 11, 26: // SQLITE_CORRUPT, SQLITE_NOTADB
			return &StoreError{Index: s.path, Err: fmt.Errorf("%s: %w", op, err), Remedy: remedyCorrupt}
		case 10: // SQLITE_IOERR: a full disk often shows as one (e.g. growing the -shm file)
			return &StoreError{Index: s.path, Err: fmt.Errorf("%s: %w", op, err), Remedy: "free space on its device if it is full; " + remedyIO}
		case 3, 8, 14: // SQLITE_PERM, SQLITE_READONLY, SQLITE_CANTOPEN
			return &StoreError{Index: s.path, Err: fmt.Errorf("%s: %w", op, err), Remedy: remedyIO}
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("recall: %s %s: %w", op, s.path, err)
}

// beginMeta begins a write transaction on db and reads key from its
// key-value table (created if missing; "" when key is not set).
func beginMeta(ctx context.Context, db *sql.DB, table, key string) (*sql.Tx, string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", err
	}
	var v string
	_, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+`(key TEXT PRIMARY KEY, value TEXT NOT NULL)`)
	if err == nil {
		_, err = scanRow(tx.QueryRowContext(ctx, `SELECT value FROM `+table+` WHERE key=?`, key), &v)
	}
	if err != nil {
		tx.Rollback()
		return nil, "", err
	}
	return tx, v, nil
}

func (s *sqliteStore) migrate(ctx context.Context) error {
	tx, v, err := beginMeta(ctx, s.db, "meta", "schema")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if v == s.schema {
		return nil
	}
	if err := newerIndex(v); err != nil {
		return err
	}
	if v != "" {
		s.oldSchema = v
		// Zero what is dropped: an index of another version may hold
		// secrets in clear (recall.redact), which free pages would keep.
		if _, err := tx.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
			return err
		}
	}
	if err := dropSQLite(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqliteSchema); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?), ('fts_owner', ?)`,
		s.schema, newOwner()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key = 'fts_seq'`); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if v != "" {
		shrink(ctx, s.db)
	}
	return nil
}

// shrink gives the pages of the tables an open dropped back to the file
// system: without it the file keeps the old index's size (its pages are
// free, and reused as the index fills again), and the share index reports
// stays the old one. Best effort: a VACUUM that finds the file busy
// (another process searching) leaves the pages for later use, which loses
// nothing.
// (In WAL mode the file is cut at the checkpoint that follows.)
func shrink(ctx context.Context, db *sql.DB) {
	if _, err := db.ExecContext(ctx, `VACUUM`); err == nil {
		_, _ = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	}
}

// dropSQLite drops the main file's tables (and the full-text tables that
// earlier builds kept in it).
func dropSQLite(ctx context.Context, tx *sql.Tx) error {
	for _, t := range []string{"chunks_fts", "chunks_tri", "chunks_cjk", "chunks", "files", "text_dicts"} {
		if _, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return err
		}
	}
	return nil
}

// sqlQuerier is a *sql.DB or a *sql.Tx.
type sqlQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *sqliteStore) loadFileRow(ctx context.Context, q sqlQuerier, path string) (*fileRow, error) {
	r, err := scanFileRow(q.QueryRowContext(ctx, `SELECT `+fileCols+` FROM files WHERE path=?`, path))
	return r, s.err("read the state of "+path, err)
}

func (s *sqliteStore) fileRow(ctx context.Context, path string) (*fileRow, error) {
	return s.loadFileRow(ctx, s.db, path)
}

func (s *sqliteStore) fileID(ctx context.Context, path string) (int64, bool, error) {
	var id int64
	ok, err := scanRow(s.search.QueryRowContext(ctx, `SELECT id FROM files WHERE path=?`, path), &id)
	return id, ok, s.err("search", err)
}

// sizes counts the pages of both files (what a checkpoint leaves on disk;
// the write-ahead logs come and go).
func (s *sqliteStore) sizes(ctx context.Context) (Sizes, error) {
	var z Sizes
	if err := s.search.QueryRowContext(ctx, `SELECT coalesce(sum(bytes_indexed), 0) FROM files`).Scan(&z.Corpus); err != nil {
		return z, s.err("size", err)
	}
	for _, schema := range []string{"main", "fts"} {
		var pages, size int64
		if err := s.search.QueryRowContext(ctx, `SELECT p.page_count, s.page_size FROM pragma_page_count('`+schema+`') p, pragma_page_size('`+schema+`') s`).Scan(&pages, &size); err != nil {
			return z, s.err("size", err)
		}
		z.Index += pages * size
	}
	return z, nil
}

// files reads through the search pool, as the other reads do: a search
// that finds no hit lists them (Result.Empty), and through the writers'
// pool that opened a second connection, its pragmas, WAL files and schema
// (4% of such a search's CPU at 1 GB; see openSQLiteFiles).
func (s *sqliteStore) files(ctx context.Context) ([]string, error) {
	paths, err := collectPaths(sqlRows(s.search.QueryContext(ctx, `SELECT path FROM files ORDER BY path`)))
	return paths, s.err("list files", err)
}

// sqliteBatch is one write transaction (BEGIN IMMEDIATE: SQLite's write
// lock, so the files' rows cannot change under it). Files are not wrapped
// in savepoints: FTS5 flushes its pending terms to a new segment at every
// savepoint, which costs more than the indexing. A file that fails half
// way rolls the whole batch back instead (errBatchLost), and the engine
// indexes the batch's other files again.
type sqliteBatch struct {
	s    *sqliteStore
	conn *sql.Conn // the transaction's connection, for the inserts
	tx   *sql.Tx
	// txCtx is the transaction's context: once it is done, database/sql
	// rolls the transaction back (on the connection, between two Raw calls).
	txCtx    context.Context
	ins      *chunkInserts
	fts      *ftsWriter
	finished bool
	enc      textEnc // the dictionary this batch made (textz.go)
}

func (s *sqliteStore) batch(ctx context.Context) (batch, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.err("begin", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, s.err("begin", err)
	}
	fts, err := s.beginFTS(ctx, tx)
	if err != nil {
		tx.Rollback()
		conn.Close()
		return nil, s.err("begin", err)
	}
	return &sqliteBatch{s: s, conn: conn, tx: tx, txCtx: ctx, fts: fts}, nil
}

func (b *sqliteBatch) file(ctx context.Context, path string, fn func(w writer) error) error {
	if b.finished {
		return errBatchLost
	}
	if err := fn(b); err != nil {
		b.rollback()
		return fmt.Errorf("%w: %w", errBatchLost, err)
	}
	return nil
}

// closeStmts closes the inserts' statements (before the transaction ends:
// SQLite finishes a write transaction only once its statements are reset).
func (b *sqliteBatch) closeStmts() {
	if b.ins != nil {
		b.conn.Raw(func(any) error { return b.ins.close() })
		b.ins = nil
	}
}

// commit commits the main file, then the FTS file, each with the batch's
// sync mark (see ftsSchema for a crash in between).
func (b *sqliteBatch) commit() error {
	b.closeStmts()
	b.finished = true
	err := b.fts.finish()
	if err == nil {
		_, err = b.tx.ExecContext(b.txCtx, `INSERT OR REPLACE INTO meta(key, value) VALUES('fts_seq', ?)`,
			strconv.FormatInt(b.fts.mark, 10))
	}
	if err == nil {
		err = b.tx.Commit()
	}
	if err != nil {
		b.tx.Rollback()
		b.conn.Close()
		b.fts.rollback()
		b.dictDone(false)
		return b.s.err("commit", err)
	}
	b.dictDone(true)
	b.conn.Close()
	safefile.CrashPoint("recall-between-commits")
	return b.s.err("commit", b.fts.commit())
}

func (b *sqliteBatch) rollback() {
	if !b.finished {
		b.closeStmts()
		b.tx.Rollback()
		b.conn.Close()
		b.fts.rollback()
		b.dictDone(false)
		b.finished = true
	}
}

func (b *sqliteBatch) fileRow(ctx context.Context, path string) (*fileRow, error) {
	return b.s.loadFileRow(ctx, b.tx, path)
}

// lastChunk's text is read again from the file when it is a ref; a file
// whose indexed lines do not give it any more (the plan re-indexes such a
// file: this is a race) gives a text that is not small, so nothing is
// merged with it.
func (b *sqliteBatch) lastChunk(ctx context.Context, fileID int64) (storedChunk, int64, bool, error) {
	var path string
	c, off, ok, err := scanLastChunk(b.tx.QueryRowContext(ctx, `SELECT c.id, c.start_line, c.end_line, c.start_offset, c.text, f.path
		FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.file_id=? ORDER BY c.start_line DESC, c.id DESC LIMIT 1`, fileID), &path)
	if ok && err == nil {
		r := rereader{redact: b.s.redact}
		texts, read, terr := r.chunkTexts([]textRef{{path: path, line: c.start, off: off, value: []byte(c.text)}})
		switch {
		case terr != nil:
			err = terr
		case read[0]:
			c.text = texts[0]
		default:
			c.text = strings.Repeat(" ", chunkMaxChars)
		}
	}
	return c, off, ok, b.s.err("read last chunk", err)
}

func (b *sqliteBatch) deleteChunk(ctx context.Context, id int64) error {
	return b.deleteWhere(ctx, "id=?", id)
}

func (b *sqliteBatch) deleteFileChunks(ctx context.Context, fileID int64) error {
	return b.deleteWhere(ctx, "file_id=?", fileID)
}

// deleteWhere removes chunks from the chunk table and, through the FTS
// writer, from both full-text indexes.
func (b *sqliteBatch) deleteWhere(ctx context.Context, cond string, arg int64) error {
	rows, err := b.tx.QueryContext(ctx, `SELECT id, has_cjk FROM chunks WHERE `+cond, arg)
	if err != nil {
		return b.s.err("delete chunks", err)
	}
	var del []ftsRow
	for rows.Next() {
		var r ftsRow
		if err := rows.Scan(&r.id, &r.cjk); err != nil {
			rows.Close()
			return b.s.err("delete chunks", err)
		}
		del = append(del, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return b.s.err("delete chunks", err)
	}
	if len(del) > 0 {
		b.fts.send(ftsOp{del: true, rows: del})
	}
	_, err = b.tx.ExecContext(ctx, `DELETE FROM chunks WHERE `+cond, arg)
	return b.s.err("delete chunks", err)
}

func (b *sqliteBatch) addFile(ctx context.Context, path string) (int64, error) {
	r, err := b.tx.ExecContext(ctx, `INSERT INTO files(path, size, mtime_ns, head_len, head_hash, sample_hash,
		last_line_start, last_line_hash, bytes_indexed, lines_indexed, malformed, indexed_at)
		VALUES(?, 0, 0, 0, '', '', 0, '', 0, 0, 0, 0)`, path)
	if err != nil {
		return 0, b.s.err("add "+path, err)
	}
	id, err := r.LastInsertId()
	return id, b.s.err("add "+path, err)
}

// addChunks stores chunks and hands their text to the FTS writer.
func (b *sqliteBatch) addChunks(ctx context.Context, fileID int64, cs []chunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The driver watches a cancellable context in a goroutine per
	// statement (5% of a cold index's CPU); one row's insert is short, and
	// the caller checks ctx between batches of rows.
	ctx = context.WithoutCancel(ctx)
	if err := b.trainDict(ctx); err != nil {
		return b.s.err("store the text dictionary", err)
	}
	return b.conn.Raw(func(dc any) error {
		// Checked under the connection's lock, which the rollback of a
		// cancelled transaction also takes: the statements below are the
		// driver's, and after that rollback they would write outside any
		// transaction.
		if err := b.txCtx.Err(); err != nil {
			return err
		}
		if b.ins == nil {
			ins, err := prepareInserts(ctx, dc)
			if err != nil {
				return b.s.err("prepare", err)
			}
			b.ins = ins
		}
		rows := make([]ftsRow, len(cs))
		for i := range cs {
			value := cs[i].Ref
			if value == nil {
				value = packText(b.encoder(cs[i].Text), cs[i].Text)
			}
			id, err := b.ins.add(ctx, fileID, &cs[i], value)
			if err != nil {
				return b.s.err("insert chunk", err)
			}
			rows[i] = newFTSRow(id, cs[i].Text, cs[i].HasCJK)
		}
		b.fts.send(ftsOp{rows: rows})
		return nil
	})
}

// chunkInserts is a batch's chunk insert statement at the driver level,
// without database/sql's argument conversion, locks and result per row:
// the writer's CPU for a 100 MB session's chunks 0.90-0.95x. They are used
// only inside sql.Conn.Raw on the batch's connection, which database/sql
// and the transaction leave alone meanwhile.
type chunkInserts struct {
	chunk driver.StmtExecContext
	stmts []driver.Stmt // to close
	args  [9]driver.NamedValue
}

func prepareInserts(ctx context.Context, dc any) (*chunkInserts, error) {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("driver %T cannot prepare statements", dc)
	}
	ins := &chunkInserts{}
	for i := range ins.args {
		ins.args[i].Ordinal = i + 1
	}
	var err error
	if ins.chunk, err = ins.prepare(ctx, pc, `INSERT INTO chunks(file_id, start_line, end_line, start_offset,
		entry_ids, ts, has_cjk, text, kinds) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		ins.close()
		return nil, err
	}
	return ins, nil
}

func (ins *chunkInserts) prepare(ctx context.Context, pc driver.ConnPrepareContext, q string) (driver.StmtExecContext, error) {
	st, err := pc.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	ins.stmts = append(ins.stmts, st)
	se, ok := st.(driver.StmtExecContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T cannot execute with a context", st)
	}
	return se, nil
}

func (ins *chunkInserts) close() error {
	for _, st := range ins.stmts {
		st.Close()
	}
	return nil
}

// add inserts one chunk's row, with value (its compressed text or its
// ref, see textz.go), and returns its id.
func (ins *chunkInserts) add(ctx context.Context, fileID int64, c *chunk, value []byte) (int64, error) {
	a := ins.args[:]
	for i, v := range [...]driver.Value{fileID, int64(c.StartLine), int64(c.EndLine), c.StartOffset,
		strings.Join(c.EntryIDs, " "), c.Timestamp, c.HasCJK, value, c.Kinds} {
		a[i].Value = v
	}
	r, err := ins.chunk.ExecContext(ctx, a)
	if err != nil {
		return 0, err
	}
	return r.LastInsertId()
}

func (b *sqliteBatch) updateFile(ctx context.Context, fileID int64, r *fileRow) error {
	_, err := b.tx.ExecContext(ctx, `UPDATE files SET size=?, mtime_ns=?, head_len=?, head_hash=?, sample_hash=?,
		last_line_start=?, last_line_hash=?, bytes_indexed=?, lines_indexed=?, malformed=?, indexed_at=?,
		agent=?, project=? WHERE id=?`, r.size, r.mtimeNs, r.headLen, r.headHash, r.sampleHash, r.lastLineStart, r.lastLineHash,
		r.bytesIndexed, r.lines, r.malformed, r.indexedAt, r.agent, r.project, fileID)
	return b.s.err("update file state", err)
}

func (b *sqliteBatch) removeFile(ctx context.Context, path string) (bool, error) {
	var id int64
	ok, err := scanRow(b.tx.QueryRowContext(ctx, `SELECT id FROM files WHERE path=?`, path), &id)
	if !ok {
		return false, b.s.err("remove "+path, err)
	}
	if err := b.deleteFileChunks(ctx, id); err != nil {
		return false, err
	}
	if _, err := b.tx.ExecContext(ctx, `DELETE FROM files WHERE id=?`, id); err != nil {
		return false, b.s.err("remove "+path, err)
	}
	return true, nil
}

func quoteFTS(t string) string { return `"` + strings.ReplaceAll(t, `"`, "") + `"` }

func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// match runs one FTS5 query. CJK text has no spaces, so a tokenizer sees
// a whole run as one token; a query with CJK therefore goes to the bigram
// table (substring match, see cjkBigrams; a one-character term as a
// prefix, see appendLastChar). The word index ranks with bm25() (one
// column: see newFTSRow).
func (s *sqliteStore) match(ctx context.Context, tokens []string, f filter, limit int) ([]int64, error) {
	mq := matchQueryOf(tokens, f)
	if f.fileID >= 0 || f.agent != "" || f.project != "" {
		lo, hi, ok, err := s.scopeSpan(ctx, f)
		if err != nil {
			return nil, err
		}
		if ok { // (idCol is the full-text table's rowid, or the chunk's id for LIKE alone)
			mq.where = append(mq.where, mq.idCol+" BETWEEN ? AND ?")
			mq.args = append(mq.args, lo, hi)
		}
	}
	from := mq.fromWhere()
	var n int64
	var err error
	if m := sampledOf(ctx); m != nil && !anyCJK(tokens) && len(tokens) == 1 && f.empty() {
		// The one word (or phrase) of an unscoped query: its sample is
		// the one corpus takes for its document frequency (see
		// sampled), kept for it.
		q := mq.args[0].(string)
		terms := queryTermsOf(tokens)
		smp, err := s.sampleMatches(ctx, "chunks_fts", q, len(terms) == 1 && len(terms[0].seq) > 1)
		if err != nil {
			return nil, err
		}
		m[q] = smp
		n = smp.n
	} else if n, err = s.countMatches(ctx, mq.idCol, from, mq.args); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil // (the ranked query would walk every match again to find none)
	}
	many := n >= rankWindow
	var q string
	if many || mq.rank == "" {
		// Not selective (or LIKE only): the newest matches, unranked.
		q = `SELECT ` + mq.idCol + `, 0.0 ` + from + ` ORDER BY ` + mq.idCol + ` DESC LIMIT ?`
	} else {
		q = `SELECT ` + mq.idCol + `, ` + mq.rank + ` AS r ` + from + ` ORDER BY r, ` + mq.idCol + ` DESC LIMIT ?`
	}
	return s.matchIDs(ctx, q, append(mq.args, limit))
}

// sqliteMatchQuery selects the matching chunks as column idCol: from and
// the where conditions ANDed to it, with args; rank is the expression that
// ranks them ("" = no ranking: LIKE only). Conditions on the chunk use the
// alias c.
type sqliteMatchQuery struct {
	from, rank, idCol string
	where             []string
	args              []any
}

// matchQueryOf is the query of the chunks in scope f that hold every
// token.
func matchQueryOf(tokens []string, f filter) sqliteMatchQuery {
	var mq sqliteMatchQuery
	if anyCJK(tokens) {
		mq = cjkMatchQuery(tokens)
	} else {
		mq = ftsMatchQuery(tokens, !f.empty())
	}
	mq.where = append(mq.where, f.conds("files", func(v any) string { mq.args = append(mq.args, v); return "?" })...)
	return mq
}

// fromWhere is the query's FROM clause with its conditions.
func (mq sqliteMatchQuery) fromWhere() string {
	from := mq.from
	for _, w := range mq.where {
		from += " AND " + w
	}
	return from
}

// ftsMatchQuery matches every token in the word index (ftsQuery), joined to
// the chunks when a scope needs their columns.
func ftsMatchQuery(tokens []string, join bool) sqliteMatchQuery {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		parts[i] = ftsQuery(t)
	}
	mq := sqliteMatchQuery{
		rank: "bm25(chunks_fts)", idCol: "chunks_fts.rowid",
		from: `FROM chunks_fts WHERE chunks_fts MATCH ?`,
		args: []any{strings.Join(parts, " AND ")},
	}
	if join {
		mq.from = `FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid WHERE chunks_fts MATCH ?`
	}
	return mq
}

// cjkMatchQuery matches CJK tokens of two or more characters in the
// bigram table, one-character ones as prefixes there (cjkPrefix), and the
// query's other words in the word index (the bigram table holds only the
// words with CJK).
func cjkMatchQuery(tokens []string) sqliteMatchQuery {
	var mq sqliteMatchQuery
	var long, words []string
	for _, t := range tokens {
		switch {
		case !hasCJK(t):
			words = append(words, ftsQuery(t))
		case utf8.RuneCountInString(t) >= 2:
			long = append(long, cjkPhrase(t))
		default:
			long = append(long, cjkPrefix(t))
		}
	}
	mq.rank, mq.idCol = "bm25(chunks_cjk)", "t.rowid"
	mq.from = `FROM chunks_cjk t JOIN chunks c ON c.id = t.rowid WHERE chunks_cjk MATCH ?`
	mq.args = append(mq.args, strings.Join(long, " AND "))
	if len(words) > 0 {
		mq.where = append(mq.where, `c.id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)`)
		mq.args = append(mq.args, strings.Join(words, " AND "))
	}
	return mq
}

// matchIDs runs q, whose rows are a chunk id and its rank, for the ids.
func (s *sqliteStore) matchIDs(ctx context.Context, q string, args []any) ([]int64, error) {
	rows, err := sqlRows(s.search.QueryContext(ctx, q, args...))
	var out []int64
	err = eachRow(rows, err, func(m *match) []any { return []any{&m.id, &m.score} }, func(m match) {
		out = append(out, m.id)
	})
	if err != nil {
		return nil, s.err("search", err)
	}
	return out, nil
}

// scopeSpan is the span of chunk ids of the sessions in f's scope (its
// session, agent and project; not its times), when they are a small part
// of the index (ok; an empty scope spans 1 to 0). match gives it to FTS5
// as a rowid range, which FTS5 seeks to: a scoped query walked the term's
// matches in the whole index, newest first, joining each to its chunk
// until rankWindow were in scope. A common word in a small session of a
// 1 GB index took 100-160 ms of CPU. The range only narrows what FTS5
// walks; the scope's own conditions still decide.
//
// The span is read from the scope's chunks, so only for a scope of at most
// scopeSpanBytes of sessions and an eighth of the index (the files' sizes
// say, at no cost); a larger scope's matches are found without it.
func (s *sqliteStore) scopeSpan(ctx context.Context, f filter) (lo, hi int64, ok bool, err error) {
	var args []any
	conds := strings.Join(filter{fileID: f.fileID, agent: f.agent, project: f.project}.conds("files",
		func(v any) string { args = append(args, v); return "?" }), " AND ")
	var scope, total int64
	// (conds name c.file_id: here the files themselves, as c)
	if err := s.search.QueryRowContext(ctx, `SELECT coalesce(sum(c.bytes_indexed), 0), (SELECT coalesce(sum(bytes_indexed), 0) FROM files)
		FROM (SELECT id AS file_id, bytes_indexed FROM files) c WHERE `+conds, args...).Scan(&scope, &total); err != nil {
		return 0, 0, false, s.err("search", err)
	}
	if scope > scopeSpanBytes || scope > total/8 {
		return 0, 0, false, nil
	}
	err = s.search.QueryRowContext(ctx, `SELECT coalesce(min(id), 1), coalesce(max(id), 0) FROM chunks c WHERE `+conds, args...).Scan(&lo, &hi)
	return lo, hi, err == nil, s.err("search", err)
}

// scopeSpanBytes bounds the sessions whose chunks scopeSpan reads (about
// 3 ms of CPU for 32 MB of Claude Code sessions).
const scopeSpanBytes = 32 << 20

// countMatches counts the query's matches up to rankWindow without
// ranking (cheap: at rankWindow, the query is not selective). It steps
// through them oldest first: the count is the same either way, and FTS5
// finds a term's newest match in each segment by reading on to the end of
// its list (or its doclist index), pages a ranked query, which reads them
// oldest first too, does not need (0.3 ms of a cold search at 1 GB).
func (s *sqliteStore) countMatches(ctx context.Context, idCol, from string, args []any) (int64, error) {
	q := `SELECT count(*) FROM (SELECT ` + idCol + ` ` + from + ` ORDER BY ` + idCol + ` LIMIT ?)`
	var n int64
	err := s.search.QueryRowContext(ctx, q, append(append([]any{}, args...), rankWindow)...).Scan(&n)
	return n, s.err("search", err)
}

// sample is a term's newest matches in a full-text table, up to dfSample:
// how many (n), and the oldest one's chunk id (last).
type sample struct{ n, last int64 }

// sampleMatches takes the sample of FTS5 query q in table. A phrase
// (phrase: q is one of two or more words) is first counted oldest first:
// under dfSample matches that walks them all, so the count and the oldest
// are the sample's, and FTS5 walks a phrase of common words newest first
// at a fraction of the speed ("tool_use_id" with no match at 1 GB: 15
// against 23 ms; "tool_result", 2,000 matches of many more: 1 against 18
// ms). A phrase with more matches, and a word, are sampled newest first.
func (s *sqliteStore) sampleMatches(ctx context.Context, table, q string, phrase bool) (sample, error) {
	var smp sample
	for _, dir := range []string{"", " DESC"} {
		if dir == "" && !phrase {
			continue
		}
		err := s.search.QueryRowContext(ctx, `SELECT count(*), coalesce(min(rowid), 0) FROM (SELECT rowid FROM `+table+
			` WHERE `+table+` MATCH ? ORDER BY rowid`+dir+` LIMIT `+strconv.Itoa(dfSample)+`)`, q).Scan(&smp.n, &smp.last)
		if err != nil || smp.n < dfSample {
			return smp, s.err("search", err)
		}
	}
	return smp, nil
}

// sampled holds the word index's samples that a search's match took, by
// FTS5 query, for its corpus statistics. A phrase of common words
// ("tool_use_id": tool, use and id are each in a tenth of the chunks of a
// Claude Code index) is checked position by position in every chunk that
// holds all its words, and found in few or none: each walk cost 20-25 ms
// at 1 GB, and match (its count, then its ranked query) and corpus walked
// it three times. Now match's count is the sample, a query with no match
// is not ranked, and corpus reuses the sample: one walk. The figures are
// those the walks gave: the same statement over the same index.
type sampled map[string]sample

type sampledKey struct{}

// withSampled gives a search's ctx the map that match fills and corpus
// reads.
func withSampled(ctx context.Context) context.Context {
	return context.WithValue(ctx, sampledKey{}, sampled{})
}

// sampledOf is ctx's map (nil: none, the search takes no samples early).
func sampledOf(ctx context.Context) sampled {
	m, _ := ctx.Value(sampledKey{}).(sampled)
	return m
}

// corpus reads the chunk count and the average length from the word
// index's totals (FTS5's averages record) and each term's document
// frequency from the index that matches it: exact up to dfSample chunks,
// estimated past it (dfEstimate).
func (s *sqliteStore) corpus(ctx context.Context, terms []term) (corpus, error) {
	var c corpus
	var block []byte
	if _, err := scanRow(s.search.QueryRowContext(ctx, `SELECT block FROM fts.chunks_fts_data WHERE id = 1`), &block); err != nil {
		return c, s.err("search", err)
	}
	var toks int64
	c.n, toks = ftsAverages(block)
	if c.n > 0 {
		c.avgdl = float64(toks) / float64(c.n)
	}
	var lo, hi int64
	if err := s.search.QueryRowContext(ctx, `SELECT coalesce((SELECT min(id) FROM chunks), 0), coalesce((SELECT max(id) FROM chunks), 0)`).Scan(&lo, &hi); err != nil {
		return c, s.err("search", err)
	}
	c.df = make([]int64, len(terms))
	for i, t := range terms {
		table, arg := "chunks_fts", ftsQuery(t.tok)
		switch {
		case t.cjk && utf8.RuneCountInString(t.tok) >= 2:
			table, arg = "chunks_cjk", cjkPhrase(t.tok)
		case t.cjk:
			table, arg = "chunks_cjk", cjkPrefix(t.tok)
		}
		smp, ok := sampledOf(ctx)[arg]
		if !ok || table != "chunks_fts" {
			var err error
			if smp, err = s.sampleMatches(ctx, table, arg, !t.cjk && len(t.seq) > 1); err != nil {
				return c, err
			}
		}
		c.df[i] = dfEstimate(smp.n, smp.last, lo, hi, c.n)
	}
	return c, nil
}

// dfSample is how many of a term's newest matches corpus counts. Counting
// all of a common term's chunks walked its whole posting list, or for a
// phrase ("tool_use") every match's positions: at 1 GB, 43% of a search's
// CPU and 60-75 ms for one such query.
const dfSample = 2000

// dfEstimate is a term's document frequency from its newest matches: n of
// them, the oldest of which is chunk id last, in an index whose chunk ids
// run from lo to hi and that holds total chunks. Under dfSample matches n
// is the count; past it the density of matches among the newest chunk ids
// is taken for the whole index (ids are given in order, so the newest
// chunks are as good a sample as any: 2,000 matches put it within a few
// percent, which moves a common term's idf, already small, by less).
func dfEstimate(n, last, lo, hi, total int64) int64 {
	if n < dfSample || last <= lo || hi < last {
		return n
	}
	est := n * (hi - lo + 1) / (hi - last + 1)
	return min(max(est, n), max(total, n))
}

// ftsAverages decodes FTS5's averages record (the %_data row 1): the
// number of rows, then each column's token total, as SQLite varints. It
// returns the rows and the tokens of all columns (0, 0 when it is empty
// or not that record).
func ftsAverages(b []byte) (rows, tokens int64) {
	var vals []int64
	for len(b) > 0 {
		v, n := sqliteVarint(b)
		if n == 0 {
			return 0, 0
		}
		vals = append(vals, int64(v))
		b = b[n:]
	}
	if len(vals) == 0 {
		return 0, 0
	}
	for _, v := range vals[1:] {
		tokens += v
	}
	return vals[0], tokens
}

// sqliteVarint decodes SQLite's big-endian varint (1-9 bytes, the ninth
// contributing 8 bits); n is 0 when b ends before it does.
func sqliteVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

func (s *sqliteStore) chunks(ctx context.Context, ids []int64) ([]storedChunk, []string, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	cs, err := collectChunks(sqlRows(s.search.QueryContext(ctx, `SELECT `+chunkCols+`
		FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.id IN (`+idList(ids)+`)`)))
	if err != nil {
		return nil, nil, s.err("search", err)
	}
	refs := make([]textRef, len(cs))
	for i, c := range cs {
		refs[i] = textRef{path: c.path, line: c.start, off: c.off, value: []byte(c.text)}
	}
	r := rereader{redact: s.redact}
	texts, ok, err := r.chunkTexts(refs)
	if err != nil {
		return nil, nil, s.err("search", err)
	}
	out := cs[:0]
	for i, c := range cs {
		if ok[i] {
			c.text = texts[i]
			out = append(out, c)
		}
	}
	return out, staleNote(r.stale), nil
}

func (s *sqliteStore) vectors(ctx context.Context, model string, f filter, fn func(id int64, vec []byte)) error {
	q := `SELECT c.id, c.embedding FROM chunks c WHERE c.model = ?`
	args := []any{model}
	for _, w := range f.conds("files", func(v any) string { args = append(args, v); return "?" }) {
		q += " AND " + w
	}
	rows, err := sqlRows(s.search.QueryContext(ctx, q, args...))
	return s.err("vector search", eachVector(rows, err, fn))
}

func (s *sqliteStore) unembedded(ctx context.Context, fileID int64, model string) ([]int64, []string, error) {
	ids, texts, ok, err := chunkTextsWhere(ctx, s.db, s.redact, `c.file_id=? AND (c.model IS NULL OR c.model != ?)`, fileID, model)
	if err != nil {
		return nil, nil, s.err("read chunks to embed", err)
	}
	// A chunk whose file changed since (it is indexed again by the next
	// run) is left for then.
	var outIDs []int64
	var out []string
	for i := range ids {
		if ok[i] {
			outIDs, out = append(outIDs, ids[i]), append(out, texts[i])
		}
	}
	return outIDs, out, nil
}

// chunkTextsWhere reads the chunks that the condition where (over chunks
// c, with args) selects, in id order, and their texts; ok[i] is false for
// a chunk whose session file changed since it was indexed (see
// rereader.chunkTexts).
func chunkTextsWhere(ctx context.Context, q sqlQuerier, redact bool, where string, args ...any) (ids []int64, texts []string, ok []bool, err error) {
	var refs []textRef
	rows, err := sqlRows(q.QueryContext(ctx, `SELECT c.id, f.path, c.start_line, c.start_offset, c.text
		FROM chunks c JOIN files f ON f.id = c.file_id WHERE `+where+` ORDER BY c.id`, args...))
	err = eachRow(rows, err,
		func(r *idRef) []any { return []any{&r.id, &r.path, &r.line, &r.off, &r.value} },
		func(r idRef) { ids, refs = append(ids, r.id), append(refs, r.textRef) })
	if err != nil {
		return nil, nil, nil, err
	}
	rr := rereader{redact: redact}
	texts, ok, err = rr.chunkTexts(refs)
	return ids, texts, ok, err
}

// idRef is a row of (id, path, start line, start offset, stored value).
type idRef struct {
	id int64
	textRef
}

func (s *sqliteStore) storeVectors(ctx context.Context, model string, ids []int64, vecs [][]byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.err("store embeddings", err)
	}
	defer tx.Rollback()
	for i, v := range vecs {
		if _, err := tx.ExecContext(ctx, `UPDATE chunks SET model=?, embedding=? WHERE id=?`, model, v, ids[i]); err != nil {
			return s.err("store embeddings", err)
		}
	}
	return s.err("store embeddings", tx.Commit())
}
