package recall

import (
	"context"
	"slices"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
)

// manyRowsStore is a PostgreSQL index of n one-line chunks, written and
// analysed server-side (indexing enough transcripts for the statistics
// shortcuts would take minutes): every chunk has "common", even ones
// "even", odd ones "odd", chunks 100, 20000 and 40000 both, every
// thousandth "rare".
func manyRowsStore(t *testing.T, n int) *pgStore {
	t.Helper()
	ctx := context.Background()
	s, err := openPostgres(ctx, pgtest.DB(t), schemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close() })
	var fileID int64
	if err := s.pool.QueryRow(ctx, `INSERT INTO ctxtool_recall_files(path, size, mtime_ns, head_len, head_hash, sample_hash,
		last_line_start, last_line_hash, bytes_indexed, lines_indexed, malformed, indexed_at)
		VALUES('/s.jsonl', 0, 0, 0, '', '', 0, '', 0, 0, 0, 0) RETURNING id`).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := s.pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO ctxtool_recall_chunks(file_id, start_line, end_line, start_offset, entry_ids, ts, has_cjk, n_tokens, text, tsv)
		SELECT $1, i, i, i, 'e' || i, 0, false, array_length(string_to_array(t, ' '), 1), t, to_tsvector('simple', t)
		FROM (SELECT i, 'common ' || CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END
			|| CASE WHEN i IN (100, 20000, 40000) THEN ' odd' ELSE '' END
			|| CASE WHEN i % 1000 = 7 THEN ' rare' ELSE '' END AS t
			FROM generate_series(1, $2::int) i) g ORDER BY i`, fileID, n)
	exec(`UPDATE ctxtool_recall_files SET n_chunks = (SELECT count(*) FROM ctxtool_recall_chunks),
		n_tokens = (SELECT sum(n_tokens) FROM ctxtool_recall_chunks) WHERE id = $1`, fileID)
	exec(`ANALYZE ctxtool_recall_chunks`)
	return s
}

// TestPostgresStatisticsShortcuts checks that the searches the statistics
// let skip a count find what counting finds: the newest matches of a query
// surely matching more than rankWindow chunks (the same whether the
// primary key is walked or the matches sorted), and — where the estimate
// is wrong (two words in half the chunks each, together in three) — the
// exact ranked matches.
func TestPostgresStatisticsShortcuts(t *testing.T) {
	const n, limit = 48000, 24
	s := manyRowsStore(t, n)
	ctx := context.Background()
	nRows, _, err := s.totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	est, err := s.estimatedFrequencies(ctx, queryTerms([]string{"common", "even", "odd", "rare", "no_such"}), nRows)
	if err != nil {
		t.Fatal(err)
	}
	if est[0] < n*95/100 || est[1] < n*45/100 || est[2] < n*45/100 || est[4] != 0 {
		t.Fatalf("estimated frequencies of common, even, odd, rare, a phrase: %v (of %d chunks)", est, nRows)
	}
	if !surelyMany(est[1:3], nRows) {
		t.Fatalf("even & odd (estimates %v) does not take the shortcut: the test checks nothing", est[1:3])
	}

	got, err := s.matches(ctx, []string{"common"}, noFilter, limit)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := s.pool.Query(ctx, `SELECT id FROM ctxtool_recall_chunks ORDER BY id DESC LIMIT $1`, limit)
	newest, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != limit {
		t.Fatalf("common: %d matches, want %d", len(got), limit)
	}
	for i, m := range got {
		if m.id != newest[i] || m.score != 0 {
			t.Fatalf("common: match %d is %+v, want the newest chunks unranked %v", i, m, newest)
		}
	}

	cond, args, _ := pgMatchCond([]string{"common"}, noFilter, false)
	sorted, err := s.newestMatches(ctx, cond, args, limit, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sorted, got) {
		t.Fatalf("common, the matches sorted: %v, walking the primary key: %v", sorted, got)
	}

	got, err = s.matches(ctx, []string{"even", "odd"}, noFilter, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("even odd: %v, want the 3 chunks with both", got)
	}
	for _, m := range got {
		if m.score <= 0 {
			t.Errorf("even odd: %+v not ranked (the estimate's miss was not counted)", m)
		}
	}

	got, err = s.matches(ctx, []string{"rare"}, noFilter, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != limit || got[0].score <= 0 {
		t.Errorf("rare: %v, want %d ranked matches", got, limit)
	}
}

// A PostgreSQL index of the previous release's layout (schema 10: chunks
// without kinds, files without agent and project) is recreated when opened,
// and the open says so.
func TestPostgresSchema10IsRecreated(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	s, err := openPostgres(ctx, url, schemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE ctxtool_recall_chunks DROP COLUMN kinds`,
		`ALTER TABLE ctxtool_recall_files DROP COLUMN agent, DROP COLUMN project`,
		`INSERT INTO ctxtool_recall_files(path, size, mtime_ns, head_len, head_hash, sample_hash, last_line_start, last_line_hash,
			bytes_indexed, lines_indexed, malformed, indexed_at) VALUES('/old.jsonl', 1, 1, 1, '', '', 0, '', 1, 1, 0, 0)`,
		`UPDATE ctxtool_recall_meta SET value = '10' WHERE key = 'schema'`} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	s, err = openPostgres(ctx, url, schemaVersion)
	if err != nil {
		t.Fatalf("open of a schema 10 index: %v", err)
	}
	defer s.close()
	if s.droppedSchema() != "10" {
		t.Errorf("dropped schema %q, want 10", s.droppedSchema())
	}
	if files, err := s.files(ctx); err != nil || len(files) != 0 {
		t.Errorf("files after the open: %v %v, want none", files, err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'ctxtool_recall_chunks' AND column_name = 'kinds'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("kinds column after the open: %d %v", n, err)
	}
}
