package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The PostgreSQL schema: the same two tables as SQLite's, plus each chunk's
// tsvector (built by tsvectorLiteral) under a GIN index, its token count
// and per-file totals for BM25, and a pg_trgm index over the text of CJK
// chunks. The GIN indexes keep a small fast-update pending list (256 kB):
// every search scans that list of recent inserts, which at the 4 MB default
// cost hundreds of ms per query after a bulk index, while no pending list
// at all makes inserts ~8× slower.
// Tables are created in the connection's search_path (add
// ?search_path=name to the URL to give a team its own namespace).
const pgSchema = `
CREATE TABLE IF NOT EXISTS ctxtool_recall_files(
	id BIGSERIAL PRIMARY KEY,
	path TEXT NOT NULL UNIQUE,
	size BIGINT NOT NULL,
	mtime_ns BIGINT NOT NULL,
	head_len BIGINT NOT NULL,
	head_hash TEXT NOT NULL,
	sample_hash TEXT NOT NULL,
	last_line_start BIGINT NOT NULL,
	last_line_hash TEXT NOT NULL,
	bytes_indexed BIGINT NOT NULL,
	lines_indexed INTEGER NOT NULL,
	malformed INTEGER NOT NULL,
	indexed_at BIGINT NOT NULL,
	n_chunks BIGINT NOT NULL DEFAULT 0,
	n_tokens BIGINT NOT NULL DEFAULT 0,
	agent TEXT NOT NULL DEFAULT '',
	project TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS ctxtool_recall_chunks(
	id BIGSERIAL PRIMARY KEY,
	file_id BIGINT NOT NULL REFERENCES ctxtool_recall_files(id) ON DELETE CASCADE,
	start_line INTEGER NOT NULL,
	end_line INTEGER NOT NULL,
	start_offset BIGINT NOT NULL,
	entry_ids TEXT NOT NULL,
	ts BIGINT NOT NULL,
	has_cjk BOOLEAN NOT NULL,
	n_tokens INTEGER NOT NULL,
	text TEXT NOT NULL,
	kinds TEXT NOT NULL DEFAULT '',
	tsv TSVECTOR NOT NULL,
	model TEXT,
	embedding BYTEA
);
CREATE INDEX IF NOT EXISTS ctxtool_recall_chunks_file ON ctxtool_recall_chunks(file_id, start_line);
CREATE INDEX IF NOT EXISTS ctxtool_recall_chunks_tsv ON ctxtool_recall_chunks USING GIN(tsv) WITH (gin_pending_list_limit = 256);
CREATE INDEX IF NOT EXISTS ctxtool_recall_chunks_trgm ON ctxtool_recall_chunks USING GIN(text gin_trgm_ops) WITH (gin_pending_list_limit = 256) WHERE has_cjk;
`

// migrateLock is the advisory lock key that serialises schema changes
// (several indexers may start at once on an empty database).
const migrateLock = 0x63747874_6f6f6c00 // "ctxtool\0"

// pgStore is the PostgreSQL backend.
type pgStore struct {
	pool *pgxpool.Pool
	loc  string

	// schema is schemaFor(redact): the version the tables must have.
	schema string

	// totals caches the corpus size BM25 needs (rows, average length)
	// for a few seconds: exact enough for ranking, and one query less.
	// oldSchema is the schema of the tables the open dropped ("": none).
	oldSchema string

	mu       sync.Mutex
	totalsAt time.Time
	nRows    int64
	avgdl    float64
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "postgres://…"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func openPostgres(ctx context.Context, raw, schema string) (*pgStore, error) {
	s := &pgStore{loc: redactURL(raw), schema: schema}
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("recall: %s: %w (give a URL like postgres://user:password@host:5432/db)", s.loc, err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.err("connect", err)
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, s.err("open", err)
	}
	return s, nil
}

func (s *pgStore) location() string { return s.loc }

func (s *pgStore) droppedSchema() string { return s.oldSchema }
func (s *pgStore) close() error          { s.pool.Close(); return nil }

// err names the database in every error; storage failures (the server is
// unreachable, out of disk, data corrupted) become StoreErrors.
func (s *pgStore) err(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return &StoreError{Index: s.loc, Err: fmt.Errorf("%s: %w", op, err), Remedy: "free space on the database server, then run 'ctxtool index' again"}
		case strings.HasPrefix(pe.Code, "XX"), pe.Code == "58030": // internal error, data corrupted, io_error
			return &StoreError{Index: s.loc, Err: fmt.Errorf("%s: %w", op, err), Remedy: "check the database server's log; 'ctxtool index --rebuild PATH...' recreates the recall tables"}
		case pe.Code == "42501": // insufficient_privilege
			return &StoreError{Index: s.loc, Err: fmt.Errorf("%s: %w", op, err), Remedy: "the user needs CREATE on the database (for the tables and the pg_trgm extension) and write access to the ctxtool_recall_* tables"}
		}
		return fmt.Errorf("recall: %s %s: %w", op, s.loc, err)
	}
	// Unreachable or dropped, told by type: a failed connection attempt
	// (ConnectError wraps refused dials, TLS and startup failures), a
	// refused, reset or aborted connection, or one already closed.
	var ce *pgconn.ConnectError
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.As(err, &ce) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, net.ErrClosed) {
		return &StoreError{Index: s.loc, Err: fmt.Errorf("%s: %w", op, err), Remedy: "check that the server is running and reachable and the URL (recall.url / --index) is right"}
	}
	return fmt.Errorf("recall: %s %s: %w", op, s.loc, err)
}

func (s *pgStore) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS ctxtool_recall_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return err
	}
	var v string
	if _, err := scanRow(tx.QueryRow(ctx, `SELECT value FROM ctxtool_recall_meta WHERE key='schema'`), &v); err != nil {
		return err
	}
	if v == s.schema {
		return tx.Commit(ctx)
	}
	if err := newerIndex(v); err != nil {
		return err
	}
	if err := s.create(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.oldSchema = v
	return nil
}

// create drops and creates the recall tables inside tx.
func (s *pgStore) create(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_trgm`); err != nil {
		return fmt.Errorf("create extension pg_trgm (CJK search; install postgresql-contrib or ask an administrator to run CREATE EXTENSION pg_trgm): %w", err)
	}
	if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS ctxtool_recall_chunks, ctxtool_recall_files`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, pgSchema); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO ctxtool_recall_meta(key, value) VALUES('schema', $1)
		ON CONFLICT(key) DO UPDATE SET value = EXCLUDED.value`, s.schema)
	return err
}

// rebuild drops every recall table and creates them again: --rebuild on a
// shared database (a SQLite index is rebuilt by deleting its file).
func (s *pgStore) rebuild(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.err("rebuild", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return s.err("rebuild", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS ctxtool_recall_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return s.err("rebuild", err)
	}
	if err := s.create(ctx, tx); err != nil {
		return s.err("rebuild", err)
	}
	return s.err("rebuild", tx.Commit(ctx))
}

// pgQuerier is a pool or a transaction.
type pgQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *pgStore) loadFileRow(ctx context.Context, q pgQuerier, path string) (*fileRow, error) {
	r, err := scanFileRow(q.QueryRow(ctx, `SELECT `+fileCols+` FROM ctxtool_recall_files WHERE path=$1`, path))
	return r, s.err("read the state of "+path, err)
}

func (s *pgStore) fileRow(ctx context.Context, path string) (*fileRow, error) {
	return s.loadFileRow(ctx, s.pool, path)
}

func (s *pgStore) fileID(ctx context.Context, path string) (int64, bool, error) {
	var id int64
	ok, err := scanRow(s.pool.QueryRow(ctx, `SELECT id FROM ctxtool_recall_files WHERE path=$1`, path), &id)
	return id, ok, s.err("search", err)
}

func (s *pgStore) sizes(ctx context.Context) (Sizes, error) {
	var z Sizes
	err := s.pool.QueryRow(ctx, `SELECT (SELECT coalesce(sum(bytes_indexed), 0) FROM ctxtool_recall_files)::bigint,
		(pg_total_relation_size('ctxtool_recall_chunks') + pg_total_relation_size('ctxtool_recall_files'))::bigint`).Scan(&z.Corpus, &z.Index)
	return z, s.err("size", err)
}

func (s *pgStore) files(ctx context.Context) ([]string, error) {
	paths, err := collectPaths(s.pool.Query(ctx, `SELECT path FROM ctxtool_recall_files ORDER BY path`))
	return paths, s.err("list files", err)
}

// pgBatch runs every file in its own transaction: holding several files'
// advisory locks in one transaction could deadlock two indexers that walk
// overlapping directories in different orders.
type pgBatch struct {
	s  *pgStore
	tx pgx.Tx
}

func (s *pgStore) batch(ctx context.Context) (batch, error) { return &pgBatch{s: s}, nil }

func (b *pgBatch) file(ctx context.Context, path string, fn func(w writer) error) error {
	tx, err := b.s.pool.Begin(ctx)
	if err != nil {
		return b.s.err("begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The index is a cache of the transcripts: a server crash that loses
	// the last commits loses nothing the next run does not redo, so
	// commits need not wait for the WAL flush.
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return b.s.err("begin", err)
	}
	// One writer per file across all machines; readers never wait.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, path); err != nil {
		return b.s.err("lock "+path, err)
	}
	b.tx = tx
	defer func() { b.tx = nil }()
	if err := fn(b); err != nil {
		return err
	}
	return b.s.err("commit "+path, tx.Commit(ctx))
}

func (b *pgBatch) commit() error { return nil }
func (b *pgBatch) rollback()     {}

func (b *pgBatch) fileRow(ctx context.Context, path string) (*fileRow, error) {
	return b.s.loadFileRow(ctx, b.tx, path)
}

func (b *pgBatch) lastChunk(ctx context.Context, fileID int64) (storedChunk, int64, bool, error) {
	c, off, ok, err := scanLastChunk(b.tx.QueryRow(ctx, `SELECT id, start_line, end_line, start_offset, text
		FROM ctxtool_recall_chunks WHERE file_id=$1 ORDER BY start_line DESC, id DESC LIMIT 1`, fileID))
	return c, off, ok, b.s.err("read last chunk", err)
}

func (b *pgBatch) deleteChunk(ctx context.Context, id int64) error {
	_, err := b.tx.Exec(ctx, `DELETE FROM ctxtool_recall_chunks WHERE id=$1`, id)
	return b.s.err("delete chunk", err)
}

func (b *pgBatch) deleteFileChunks(ctx context.Context, fileID int64) error {
	_, err := b.tx.Exec(ctx, `DELETE FROM ctxtool_recall_chunks WHERE file_id=$1`, fileID)
	return b.s.err("delete chunks", err)
}

func (b *pgBatch) addFile(ctx context.Context, path string) (int64, error) {
	var id int64
	err := b.tx.QueryRow(ctx, `INSERT INTO ctxtool_recall_files(path, size, mtime_ns, head_len, head_hash, sample_hash,
		last_line_start, last_line_hash, bytes_indexed, lines_indexed, malformed, indexed_at)
		VALUES($1, 0, 0, 0, '', '', 0, '', 0, 0, 0, 0) RETURNING id`, path).Scan(&id)
	return id, b.s.err("add "+path, err)
}

// pgText makes text storable: PostgreSQL's text cannot hold NUL bytes.
func pgText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", " ")
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// addChunks inserts a batch of chunks in one statement (arrays unnested
// server-side: one round trip per batch).
func (b *pgBatch) addChunks(ctx context.Context, fileID int64, cs []chunk) error {
	n := len(cs)
	start, end, ntok := make([]int32, n), make([]int32, n), make([]int32, n)
	off, ts := make([]int64, n), make([]int64, n)
	ids, text, tsv, kinds := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	cjk := make([]bool, n)
	for i := range cs {
		c := &cs[i]
		start[i], end[i], off[i], ts[i], cjk[i] = int32(c.StartLine), int32(c.EndLine), c.StartOffset, c.Timestamp, c.HasCJK
		ids[i] = pgText(strings.Join(c.EntryIDs, " "))
		text[i] = pgText(c.Text)
		kinds[i] = c.Kinds
		var nt int
		tsv[i], nt = tsvectorLiteral(text[i])
		ntok[i] = int32(nt)
	}
	_, err := b.tx.Exec(ctx, `INSERT INTO ctxtool_recall_chunks(file_id, start_line, end_line, start_offset, entry_ids,
		ts, has_cjk, n_tokens, text, kinds, tsv)
		SELECT $1, u.s, u.e, u.o, u.i, u.t, u.c, u.n, u.x, u.k, u.v::tsvector
		FROM unnest($2::int[], $3::int[], $4::bigint[], $5::text[], $6::bigint[], $7::bool[], $8::int[], $9::text[], $10::text[], $11::text[])
			AS u(s, e, o, i, t, c, n, x, k, v)`, fileID, start, end, off, ids, ts, cjk, ntok, text, kinds, tsv)
	return b.s.err("insert chunks", err)
}

func (b *pgBatch) updateFile(ctx context.Context, fileID int64, r *fileRow) error {
	_, err := b.tx.Exec(ctx, `UPDATE ctxtool_recall_files SET size=$1, mtime_ns=$2, head_len=$3, head_hash=$4,
		sample_hash=$5, last_line_start=$6, last_line_hash=$7, bytes_indexed=$8, lines_indexed=$9, malformed=$10,
		indexed_at=$11, agent=$13, project=$14,
		n_chunks=(SELECT count(*) FROM ctxtool_recall_chunks WHERE file_id=$12),
		n_tokens=(SELECT coalesce(sum(n_tokens), 0) FROM ctxtool_recall_chunks WHERE file_id=$12)
		WHERE id=$12`, r.size, r.mtimeNs, r.headLen, r.headHash, r.sampleHash, r.lastLineStart, r.lastLineHash,
		r.bytesIndexed, r.lines, r.malformed, r.indexedAt, fileID, r.agent, r.project)
	return b.s.err("update file state", err)
}

func (b *pgBatch) removeFile(ctx context.Context, path string) (bool, error) {
	tag, err := b.tx.Exec(ctx, `DELETE FROM ctxtool_recall_files WHERE path=$1`, path) // chunks cascade
	if err != nil {
		return false, b.s.err("remove "+path, err)
	}
	return tag.RowsAffected() > 0, nil
}

// totals returns the number of chunks and their average token count.
func (s *pgStore) totals(ctx context.Context) (int64, float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.totalsAt) < 10*time.Second {
		return s.nRows, s.avgdl, nil
	}
	var rows, toks int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(n_chunks), 0)::bigint, coalesce(sum(n_tokens), 0)::bigint
		FROM ctxtool_recall_files`).Scan(&rows, &toks); err != nil {
		return 0, 0, s.err("search", err)
	}
	s.nRows, s.avgdl, s.totalsAt = rows, 0, time.Now()
	if rows > 0 {
		s.avgdl = float64(toks) / float64(rows)
	}
	return s.nRows, s.avgdl, nil
}

// match finds the chunks with every token. Without CJK: a tsquery over the
// tsvector GIN index, ranked with FTS5's BM25 formula (so that scores, and
// minScore, mean what they mean on SQLite). With CJK: substring matches
// (ILIKE) over the CJK chunks, served by the pg_trgm index, unranked.
func (s *pgStore) match(ctx context.Context, tokens []string, f filter, limit int) ([]int64, error) {
	ms, err := s.matches(ctx, tokens, f, limit)
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	return ids, err
}

func (s *pgStore) matches(ctx context.Context, tokens []string, f filter, limit int) ([]match, error) {
	cjk := anyCJK(tokens)
	cond, args, terms := pgMatchCond(tokens, f, cjk)
	if cond == "" {
		return nil, nil
	}
	if cjk {
		return s.newestMatches(ctx, cond, args, limit, false)
	}
	nRows, avgdl, err := s.totals(ctx)
	if err != nil {
		return nil, err
	}
	est, err := s.estimatedFrequencies(ctx, terms, nRows)
	if err != nil {
		return nil, err
	}
	if f.empty() && surelyMany(est, nRows) {
		ms, err := s.newestMatches(ctx, cond, args, limit, false)
		if err != nil || len(ms) == limit {
			return ms, err
		}
		// fewer than limit matches: the estimate was wrong, count them
	}
	ids, err := s.matchIDs(ctx, cond, args)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	if len(ids) >= rankWindow {
		return s.newestMatches(ctx, cond, args, limit, slices.Contains(est, 0))
	}
	df, err := s.termFrequencies(ctx, terms, est)
	if err != nil {
		return nil, err
	}
	for _, d := range df {
		nRows = max(nRows, d) // the totals are a few seconds old
	}
	return s.rankedMatches(ctx, ids, terms, df, nRows, avgdl, limit)
}

// surelyMany reports whether the estimated document frequencies est (of
// every term, 0 = unknown) put the chunks with all terms far above
// rankWindow: then counting them is skipped. That count walks the whole
// posting list of every term in the GIN index, tens of ms per common word
// at 1 GB, and decides nothing here: the estimate (terms independent) of
// such queries is within 20% of the count, where the margin is 10×.
func surelyMany(est []int64, nRows int64) bool {
	if nRows <= 0 {
		return false
	}
	and := float64(nRows)
	for _, e := range est {
		and *= float64(e) / float64(nRows)
	}
	return and >= 10*rankWindow
}

// matchIDs is the chunks meeting cond, at most rankWindow of them.
func (s *pgStore) matchIDs(ctx context.Context, cond string, args []any) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM ctxtool_recall_chunks c WHERE `+cond+
		` LIMIT `+fmt.Sprint(rankWindow), args...)
	if err != nil {
		return nil, s.err("search", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, s.err("search", err)
}

// pgMatchCond is the WHERE condition (with its $n arguments) selecting the
// chunks with every token, and the tsquery terms ranking them (nil with
// CJK); cond is "" when the tokens give no term to match.
func pgMatchCond(tokens []string, f filter, cjk bool) (cond string, args []any, terms [][]string) {
	var where []string
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if cjk {
		where = append(where, "has_cjk")
		for _, t := range tokens {
			where = append(where, "text ILIKE "+arg("%"+likeEscape(t)+"%"))
		}
	} else {
		terms = queryTerms(tokens)
		if len(terms) == 0 {
			return "", nil, nil
		}
		where = append(where, "tsv @@ "+arg(tsqueryLiteral(terms))+"::tsquery")
	}
	where = append(where, f.conds("ctxtool_recall_files", arg)...)
	return strings.Join(where, " AND "), args, terms
}

// newestMatches is the newest limit chunks meeting cond, unranked. With
// sortAll the matches are found through cond's index and sorted, rather
// than the primary key walked backwards until limit of them turn up (an
// expression, id + 0, is what no index gives in order): the planner takes
// the walk when it expects many matches, which for a term outside the
// statistics is a default 0.5% of the chunks, and a word in a few
// thousand old chunks then costs a walk through the newer ones, each
// tsvector read to test it.
func (s *pgStore) newestMatches(ctx context.Context, cond string, args []any, limit int, sortAll bool) ([]match, error) {
	order := "id"
	if sortAll {
		order = "id + 0"
	}
	rows, err := s.pool.Query(ctx, `SELECT id, 0.0::float8 FROM ctxtool_recall_chunks c WHERE `+cond+
		` ORDER BY `+order+` DESC LIMIT `+fmt.Sprint(limit), args...)
	if err != nil {
		return nil, s.err("search", err)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (match, error) {
		var m match
		return m, r.Scan(&m.id, &m.score)
	})
	return ms, s.err("search", err)
}

// rankedMatches scores the chunks ids (fewer than rankWindow) as search
// scores them (textScore: the BM25 part weighs tool output toolWeight, as
// the SQLite backend's bm25() does; ts_rank and ts_rank_cd have no IDF and
// would pick a different top) and keeps the best limit.
func (s *pgStore) rankedMatches(ctx context.Context, ids []int64, terms [][]string, df []int64, nRows int64, avgdl float64, limit int) ([]match, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, text, kinds FROM ctxtool_recall_chunks WHERE id = ANY($1)`, ids)
	ts := make([]term, len(terms))
	for i, seq := range terms {
		ts[i] = term{seq: seq}
	}
	c := corpus{n: nRows, avgdl: avgdl, df: df}
	var ms []match
	type row struct {
		id          int64
		text, kinds string
	}
	err = eachRow(rows, err, func(r *row) []any { return []any{&r.id, &r.text, &r.kinds} }, func(r row) {
		ms = append(ms, match{id: r.id, score: textScore(r.text, r.kinds, ts, c)})
	})
	if err != nil {
		return nil, s.err("search", err)
	}
	sortMatches(ms)
	return ms[:min(limit, len(ms))], nil
}

// corpus is the chunk count and average length (the per-file totals) and
// each term's document frequency: for words as match counts them, for CJK
// substrings counted up to dfCap.
func (s *pgStore) corpus(ctx context.Context, terms []term) (corpus, error) {
	var c corpus
	var err error
	if c.n, c.avgdl, err = s.totals(ctx); err != nil {
		return c, err
	}
	c.df = make([]int64, len(terms))
	var words [][]string
	var at []int
	for i, t := range terms {
		if !t.cjk {
			words, at = append(words, t.seq), append(at, i)
			continue
		}
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM ctxtool_recall_chunks WHERE has_cjk AND text ILIKE $1 LIMIT `+
			fmt.Sprint(dfCap)+`) m`, "%"+likeEscape(t.tok)+"%").Scan(&c.df[i]); err != nil {
			return c, s.err("search", err)
		}
	}
	if len(words) > 0 {
		est, err := s.estimatedFrequencies(ctx, words, c.n)
		if err != nil {
			return c, err
		}
		df, err := s.termFrequencies(ctx, words, est)
		if err != nil {
			return c, err
		}
		for k, i := range at {
			c.df[i] = df[k]
		}
	}
	for _, d := range c.df {
		c.n = max(c.n, d) // the totals are a few seconds old
	}
	return c, nil
}

// estimatedFrequencies is the number of chunks matching each term as
// ANALYZE's most-common-element statistics of tsv give it (frequency ×
// nRows, as the planner estimates it), 0 for a term that is not among
// them, a phrase, or before the first ANALYZE. Unlike the planner's
// estimate for any term, a listed term's is close to its count; an unlisted
// one has a default the planner makes up.
func (s *pgStore) estimatedFrequencies(ctx context.Context, terms [][]string, nRows int64) ([]int64, error) {
	lexemes := make([]string, len(terms))
	for i, seq := range terms {
		if len(seq) == 1 {
			lexemes[i] = seq[0]
		}
	}
	var freqs []float64
	if err := s.pool.QueryRow(ctx, `SELECT array(SELECT coalesce(m.freq, 0)::float8
		FROM unnest($1::text[]) WITH ORDINALITY q(lexeme, i) LEFT JOIN (
			SELECT u.elem, u.freq FROM pg_stats s,
				unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) u(elem, freq)
			WHERE s.schemaname = (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE c.oid = 'ctxtool_recall_chunks'::regclass)
			AND s.tablename = 'ctxtool_recall_chunks' AND s.attname = 'tsv' AND NOT s.inherited
		) m ON m.elem = q.lexeme ORDER BY q.i)`, lexemes).Scan(&freqs); err != nil {
		return nil, s.err("search", err)
	}
	est := make([]int64, len(terms))
	for i := range est {
		if i < len(freqs) && lexemes[i] != "" {
			est[i] = int64(freqs[i] * float64(nRows))
		}
	}
	return est, nil
}

// termFrequencies is the number of chunks matching each term (BM25's
// document frequency). A term whose statistics estimate est is at least
// 10 × dfExact takes it; any other is counted exactly up to dfExact
// matches, and a commoner one takes the planner's estimate: an exact count
// visits every matching row, ~1 s for one common word at 1 GB, where the
// rest of a search takes milliseconds.
func (s *pgStore) termFrequencies(ctx context.Context, terms [][]string, est []int64) ([]int64, error) {
	df := make([]int64, len(terms))
	for i, seq := range terms {
		if est[i] >= 10*dfExact {
			df[i] = est[i]
			continue
		}
		lit := tsqueryLiteral([][]string{seq})
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM ctxtool_recall_chunks WHERE tsv @@ $1::tsquery LIMIT `+
			fmt.Sprint(dfExact)+`) m`, lit).Scan(&df[i]); err != nil {
			return nil, s.err("search", err)
		}
		if df[i] < dfExact {
			continue
		}
		e, err := s.estimatedMatches(ctx, lit)
		if err != nil {
			return nil, err
		}
		df[i] = max(df[i], e)
	}
	return df, nil
}

// dfExact bounds the exact document-frequency count of a term.
const dfExact = 300

// estimatedMatches is the planner's estimate of the chunks matching the
// tsquery literal lit.
func (s *pgStore) estimatedMatches(ctx context.Context, lit string) (int64, error) {
	var plan []byte
	q := `EXPLAIN (FORMAT JSON) SELECT 1 FROM ctxtool_recall_chunks WHERE tsv @@ '` + strings.ReplaceAll(lit, "'", "''") + `'::tsquery`
	if err := s.pool.QueryRow(ctx, q).Scan(&plan); err != nil {
		return 0, s.err("search", err)
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) == 0 {
		return 0, s.err("search", fmt.Errorf("reading the planner's estimate: %w", err))
	}
	return int64(out[0].Plan.Rows), nil
}

func (s *pgStore) chunks(ctx context.Context, ids []int64) ([]storedChunk, []string, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	out, err := collectChunks(s.pool.Query(ctx, `SELECT `+chunkCols+`
		FROM ctxtool_recall_chunks c JOIN ctxtool_recall_files f ON f.id = c.file_id WHERE c.id = ANY($1)`, ids))
	return out, nil, s.err("search", err)
}

func (s *pgStore) vectors(ctx context.Context, model string, f filter, fn func(id int64, vec []byte)) error {
	q := `SELECT c.id, c.embedding FROM ctxtool_recall_chunks c WHERE c.model = $1`
	args := []any{model}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	for _, w := range f.conds("ctxtool_recall_files", arg) {
		q += " AND " + w
	}
	rows, err := s.pool.Query(ctx, q, args...)
	return s.err("vector search", eachVector(rows, err, fn))
}

func (s *pgStore) unembedded(ctx context.Context, fileID int64, model string) ([]int64, []string, error) {
	ids, texts, err := collectIDTexts(s.pool.Query(ctx, `SELECT id, text FROM ctxtool_recall_chunks WHERE file_id=$1
		AND (model IS NULL OR model != $2) ORDER BY id`, fileID, model))
	return ids, texts, s.err("read chunks to embed", err)
}

func (s *pgStore) storeVectors(ctx context.Context, model string, ids []int64, vecs [][]byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE ctxtool_recall_chunks c SET model=$1, embedding=u.v
		FROM unnest($2::bigint[], $3::bytea[]) AS u(id, v) WHERE c.id = u.id`, model, ids, vecs)
	return s.err("store embeddings", err)
}
