package recall

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"modernc.org/sqlite"

	"github.com/ctxtool/ctxtool/pkg/internal/swar"
)

// The full-text indexes live in a file of their own beside the index,
// <index>.fts, written by a second connection in a transaction of its own:
// a cold index's one writer was busy all the time, and FTS5's tokenizing
// and term hash were most of it; two files commit in parallel on two
// cores. The tables are contentless (the text is in the chunks table, or
// in the session file it cites: reread.go) and keyed by chunk id; there
// is one word index and one table of CJK character pairs over all chunks,
// so bm25's statistics are those of one table.
//
// The two commits are not atomic. The main file commits first, then the
// FTS file; both store the same sync mark (meta fts_seq, fts_meta seq),
// one more per batch. A crash in between leaves the marks different: the
// next open or batch repairs the FTS file under both write locks (ftsRepair).
// Chunk ids are never reused (AUTOINCREMENT), so an FTS row whose chunk is
// gone can only be stale, never mistaken for a newer chunk.
//
// FTS5 merges a full-text index's segments once 16 of them are on a level
// (automerge; its default 4 merges the same data about twice as often: 8%
// of a cold 1 GB index's CPU); a search then looks terms up in a few more
// segments. The word index's pending terms are flushed as a segment at 32
// MiB (hashsize) rather than 16: half the segments to merge, a directory
// of 500 small sessions indexed 1.26x faster for 30 MB more memory.
const ftsSchema = `
CREATE VIRTUAL TABLE chunks_fts USING fts5(
	text, content='', contentless_delete=1, tokenize='ascii');
CREATE VIRTUAL TABLE chunks_cjk USING fts5(
	text, content='', contentless_delete=1, tokenize="ascii tokenchars '_'");
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
INSERT INTO chunks_fts(chunks_fts, rank) VALUES('hashsize', 33554432);
INSERT INTO chunks_fts(chunks_fts, rank) VALUES('automerge', 16);
INSERT INTO chunks_cjk(chunks_cjk, rank) VALUES('hashsize', 16777216);
`

// ftsLayout names ftsSchema's tables beside schemaVersion in the FTS
// file's pairing (fts_meta owner): an FTS file of another layout is emptied
// and rebuilt from the chunks at open, while the main file, whose rows did
// not change, is kept. "cjk2": the CJK pairs table replaced the trigram
// one; "ascii3": the word index is tokenized by ascii (see ftsWords);
// "ascii3last": the pairs table holds each word's last character too
// (appendLastChar).
const ftsLayout = "ascii3last"

// ftsPath is the FTS file of the index at dbPath.
func ftsPath(dbPath string) string { return dbPath + ".fts" }

// openFTS makes the FTS file's tables those of the main file's pairing
// token (meta fts_owner; see ftsPairing): a missing FTS file, one of another
// schema or layout, or one that belonged to an earlier main file (rebuilt,
// or copied without it) is emptied, and its rows are then rebuilt from the
// chunks by the repair (its sync mark is gone).
func (s *sqliteStore) openFTS(ctx context.Context) error {
	var owner string
	if _, err := scanRow(s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='fts_owner'`), &owner); err != nil {
		return err
	}
	tx, have, err := beginMeta(ctx, s.fts, "fts_meta", "owner")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	want := ftsPairing(owner)
	if have == want {
		return nil
	}
	if have != "" {
		// Zero the dropped text: it may be an unredacted index's.
		if _, err := tx.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
			return err
		}
	}
	for _, q := range []string{`DROP TABLE IF EXISTS chunks_vocab`, `DROP TABLE IF EXISTS chunks_fts`, `DROP TABLE IF EXISTS chunks_tri`, `DROP TABLE IF EXISTS chunks_cjk`, `DELETE FROM fts_meta`, ftsSchema} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO fts_meta(key, value) VALUES('owner', ?)`, want); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if have != "" {
		shrink(ctx, s.fts)
	}
	return nil
}

// ftsPairing is the fts_meta owner value of the FTS file that pairs with
// the main file whose token is owner, in this schema and layout.
func ftsPairing(owner string) string { return owner + "/" + schemaVersion + "/" + ftsLayout }

// newOwner is a new main file's pairing token for its FTS file.
func newOwner() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openSearch opens the pool that searches: the main file with the FTS
// file attached as "fts" (unqualified names find chunks_fts there). It is
// apart from the writers' pool because BEGIN IMMEDIATE on a connection
// takes the write lock of every attached file too.
func (s *sqliteStore) openSearch(dsn, fts string) error {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return err
	}
	s.search = sql.OpenDB(attachConnector{Connector: c, fts: fts})
	return nil
}

// attachConnector attaches the FTS file to every connection it opens.
type attachConnector struct {
	driver.Connector
	fts string
}

func (c attachConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("driver connection %T cannot execute", conn)
	}
	if _, err := ex.ExecContext(ctx, `ATTACH DATABASE ? AS fts`, []driver.NamedValue{{Ordinal: 1, Value: c.fts}}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// syncMarks reads the main file's and the FTS file's sync marks through
// main and fts (-1: none).
func syncMarks(ctx context.Context, main, fts sqlQuerier) (m, f int64, err error) {
	m, f = -1, -1
	var v string
	ok, err := scanRow(main.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='fts_seq'`), &v)
	if err != nil {
		return m, f, err
	}
	if ok {
		m, _ = strconv.ParseInt(v, 10, 64)
	}
	ok, err = scanRow(fts.QueryRowContext(ctx, `SELECT value FROM fts_meta WHERE key='seq'`), &v)
	if err != nil {
		return m, f, err
	}
	if ok {
		f, _ = strconv.ParseInt(v, 10, 64)
	}
	return m, f, nil
}

// repairAtOpen repairs the FTS file when its sync mark is not the main
// file's (a process died between the two commits). The marks are read
// without locks first: they differ also for a moment while another
// process commits, which the locked check in beginFTS then sees through.
func (s *sqliteStore) repairAtOpen(ctx context.Context) error {
	m, f, err := syncMarks(ctx, s.search, s.search) // (fts_meta is in the attached file)
	if err != nil || m == f {
		return err
	}
	b, err := s.batch(ctx)
	if err != nil {
		return err
	}
	return b.commit()
}

// ftsWriter is a batch's FTS transaction: its inserts and deletes run in a
// goroutine of their own, in the order the batch sends them.
type ftsWriter struct {
	conn *sql.Conn
	tx   *sql.Tx
	ctx  context.Context // the transaction's: done = rolled back
	mark int64           // the sync mark this batch commits
	ops  chan ftsOp
	done chan error
	sent bool // ops closed
}

// ftsOp inserts rows, or deletes them (del).
type ftsOp struct {
	del  bool
	rows []ftsRow
}

// ftsRow is a chunk as the FTS file knows it: its text for the word index
// (words) and for the CJK bigram table (text).
type ftsRow struct {
	id    int64
	text  string
	words string
	cjk   bool // also in the bigram table
}

// newFTSRow is the FTS row of a chunk: for the bigram table, the pairs of
// characters of its words that hold CJK (see cjkBigrams); for the word
// index, the rest.
//
// The word index has one column. With two (conversation, tool output),
// for bm25's column weights, FTS5 wrote every chunk's tokens as two
// column lists: 27% more index and about a fifth more of the writer's
// CPU. Tool output weighs less in the Go scoring (score.go), which orders
// the candidates; the quality bar (TestRecallQuality) holds without the
// weight in the candidates' bm25.
func newFTSRow(id int64, text string, cjk bool) ftsRow {
	r := ftsRow{id: id, words: text, cjk: cjk}
	if cjk {
		r.text = cjkBigrams(text)
		r.words = withoutCJK(text)
	}
	r.words = ftsWords(r.words)
	return r
}

// ftsWords is the word index's text of a chunk. The index is tokenized by
// FTS5's ascii tokenizer, which on ASCII text makes exactly unicode61's
// tokens and costs a fraction of its CPU (unicode61 looked every character
// up in its tables: 7% of a cold index of Claude Code sessions). Text with
// other characters is tokenized here as unicode61 with remove_diacritics 2
// does (ftsTokenBytes, which the PostgreSQL backend and the scoring use
// too), one space between the tokens: ascii then keeps each token whole.
// Queries go through the same function (ftsQuery).
func ftsWords(text string) string {
	if isASCII(text) {
		return text
	}
	b := make([]byte, 0, len(text))
	ftsTokenBytes(text, nil, func(t []byte) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, t...)
	})
	return string(b)
}

// ftsQuery is the word index's query for one query token: the phrase of
// its tokens ("foo_bar" is foo bar, "Café" is cafe).
func ftsQuery(t string) string {
	if isASCII(t) {
		return quoteFTS(t)
	}
	return quoteFTS(ftsWords(t))
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if swar.LoadString(s, i)&swar.High != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// withoutCJK is s with each CJK character replaced by a space, for the
// word index. unicode61 would read a CJK run as one token, which no query
// looks up there: a query word with CJK goes to the bigram table (or a
// LIKE scan), so these tokens were dead weight, most of the word index of
// a CJK-heavy corpus. A Latin word glued to CJK ("assembly的") becomes a
// word of its own and is found by an ASCII query.
func withoutCJK(s string) string {
	if !hasCJK(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] < 0xE2 {
			b = append(b, s[i])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isCJK(r) {
			b = append(b, ' ')
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// cjkWords is the words of text ([\p{L}\p{N}_]+ runs, as queries are cut)
// that hold a CJK character, one space between them.
func cjkWords(text string) string {
	var b strings.Builder
	eachCJKWord(text, func(w string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	})
	return b.String()
}

// eachCJKWord calls fn with each word of text that holds CJK. Only a query
// word with CJK is looked up in the bigram table, and such a word is a
// substring of one of these; the rest of a CJK chunk (code, tool output,
// English) is in the word index already.
func eachCJKWord(text string, fn func(w string)) {
	start, cjk := -1, false
	flush := func(end int) {
		if start >= 0 && cjk {
			fn(text[start:end])
		}
		start, cjk = -1, false
	}
	for i, r := range text {
		if r == '_' || r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
			r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsNumber(r)) {
			if start < 0 {
				start = i
			}
			if r >= 0x2E80 && isCJK(r) {
				cjk = true
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
}

// cjkBigrams is the bigram table's text of a chunk: each of its words
// with CJK, lower-cased and cut into its overlapping pairs of characters
// ("生产环境" is "生产 产环 环境"; a word of one character stays whole),
// spaces between them. The table's tokenizer (ascii, '_' a token
// character) takes each pair as one token, and a query word with CJK of
// two or more characters is the phrase of its own pairs (cjkPhrase): the
// pairs at consecutive positions, which is the word as a substring.
//
// This replaced FTS5's trigram tokenizer over the same words. Trigrams
// made as many tokens, but of a vocabulary several times larger, and their
// term hash writes were a fifth of a CJK-heavy cold index's CPU; pairs
// also find a two-character word without the LIKE scan.
func cjkBigrams(text string) string {
	var b []byte
	eachCJKWord(text, func(w string) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = appendBigrams(b, w)
		b = appendLastChar(b, w)
	})
	return string(b)
}

// appendLastChar appends " c" for a word w of two or more characters whose
// last is c (lower-cased): with it, every occurrence of a character X in
// the table's words starts a token, the pair "X?" or the lone "X", and the
// one-character query X is the prefix query X* (cjkPrefix), not a LIKE
// scan of every chunk's text (which the index no longer holds, reread.go).
// It adds one token per word with CJK.
func appendLastChar(b []byte, w string) []byte {
	r, size := utf8.DecodeLastRuneInString(w)
	if size == len(w) {
		return b // one character: appendBigrams wrote it whole
	}
	b = append(b, ' ')
	return utf8.AppendRune(b, unicode.ToLower(r))
}

// cjkPrefix is the pairs table's query for a one-character word with CJK:
// the tokens that start with it (see appendLastChar).
func cjkPrefix(w string) string {
	return `"` + strings.ToLower(w) + `"*`
}

// appendBigrams appends w's overlapping pairs of lower-cased characters,
// separated by spaces (w itself when it has one character).
func appendBigrams(b []byte, w string) []byte {
	prev, n := rune(-1), 0
	for _, r := range w {
		r = unicode.ToLower(r)
		if prev >= 0 {
			if n > 0 {
				b = append(b, ' ')
			}
			b = utf8.AppendRune(b, prev)
			b = utf8.AppendRune(b, r)
			n++
		}
		prev = r
	}
	if n == 0 && prev >= 0 {
		b = utf8.AppendRune(b, prev)
	}
	return b
}

// cjkPhrase is the bigram table's query for a word with CJK of two or more
// characters: the phrase of its pairs.
func cjkPhrase(w string) string {
	return `"` + string(appendBigrams(nil, w)) + `"`
}

// beginFTS starts the FTS file's transaction of a batch whose main
// transaction is mainTx (begun first: both writers lock in that order),
// repairing the FTS file first when the sync marks differ.
func (s *sqliteStore) beginFTS(ctx context.Context, mainTx *sql.Tx) (*ftsWriter, error) {
	conn, err := s.fts.Conn(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	w := &ftsWriter{conn: conn, tx: tx, ctx: ctx, ops: make(chan ftsOp, 8), done: make(chan error, 1)}
	m, f, err := syncMarks(ctx, mainTx, tx)
	if err == nil && m != f {
		err = ftsRepair(ctx, mainTx, tx, s.redact)
	}
	if err != nil {
		tx.Rollback()
		conn.Close()
		return nil, err
	}
	w.mark = max(m, f) + 1
	go func() { w.done <- w.run() }()
	return w, nil
}

func (w *ftsWriter) send(op ftsOp) { w.ops <- op }

// run applies the batch's operations; after a failure it only drains them
// (the batch then fails at commit).
func (w *ftsWriter) run() error {
	var st ftsStmts
	var err error
	for op := range w.ops {
		if err == nil {
			err = w.conn.Raw(func(dc any) error {
				// Under the connection's lock, which the rollback of a
				// cancelled transaction takes too: after it, the
				// statements would write outside any transaction.
				if err := w.ctx.Err(); err != nil {
					return err
				}
				return st.apply(dc, op)
			})
		}
	}
	w.conn.Raw(func(any) error { st.close(); return nil })
	return err
}

// finish waits until every operation sent is applied.
func (w *ftsWriter) finish() error {
	if w.sent {
		return nil
	}
	w.sent = true
	close(w.ops)
	return <-w.done
}

// commit stores the sync mark and commits (after the main file did).
func (w *ftsWriter) commit() error {
	defer w.conn.Close()
	if _, err := w.tx.ExecContext(w.ctx, `INSERT OR REPLACE INTO fts_meta(key, value) VALUES('seq', ?)`, strconv.FormatInt(w.mark, 10)); err != nil {
		w.tx.Rollback()
		return err
	}
	return w.tx.Commit()
}

func (w *ftsWriter) rollback() {
	w.finish()
	w.tx.Rollback()
	w.conn.Close()
}

// ftsStmts are the FTS writer's statements at the driver level (as
// chunkInserts'), prepared on first use.
type ftsStmts struct {
	ins, insTri, del, delTri driver.StmtExecContext
	stmts                    []driver.Stmt
	args                     [2]driver.NamedValue
}

func (st *ftsStmts) prepare(dc any) error {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return fmt.Errorf("driver %T cannot prepare statements", dc)
	}
	st.args[0].Ordinal, st.args[1].Ordinal = 1, 2
	for _, p := range []struct {
		dst *driver.StmtExecContext
		q   string
	}{
		{&st.ins, `INSERT INTO chunks_fts(rowid, text) VALUES(?, ?)`},
		{&st.insTri, `INSERT INTO chunks_cjk(rowid, text) VALUES(?, ?)`},
		{&st.del, `DELETE FROM chunks_fts WHERE rowid = ?`},
		{&st.delTri, `DELETE FROM chunks_cjk WHERE rowid = ?`},
	} {
		s, err := pc.PrepareContext(context.Background(), p.q)
		if err != nil {
			return err
		}
		st.stmts = append(st.stmts, s)
		se, ok := s.(driver.StmtExecContext)
		if !ok {
			return fmt.Errorf("driver statement %T cannot execute with a context", s)
		}
		*p.dst = se
	}
	return nil
}

// apply runs one operation on the driver connection dc. Only chunks with
// CJK text are in the bigram table: a query that needs it contains CJK,
// so it can only match chunks that do.
func (st *ftsStmts) apply(dc any, op ftsOp) error {
	if st.ins == nil {
		if err := st.prepare(dc); err != nil {
			return err
		}
	}
	ctx := context.Background()
	one, tri := st.ins, st.insTri
	a := st.args[:]
	if op.del {
		one, tri, a = st.del, st.delTri, a[:1]
	}
	for _, r := range op.rows {
		a[0].Value = r.id
		if !op.del {
			a[1].Value = r.words
		}
		if _, err := one.ExecContext(ctx, a); err != nil {
			return err
		}
		if r.cjk {
			if !op.del {
				a[1].Value = r.text
			}
			if _, err := tri.ExecContext(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (st *ftsStmts) close() {
	for _, s := range st.stmts {
		s.Close()
	}
	st.stmts = nil
}

// ftsRepair makes the FTS file hold exactly the main file's chunks: rows
// of chunks that are gone are deleted, chunks without rows are inserted
// (after a crash between a batch's two commits: the last batch's; for an
// emptied FTS file: all of them). A chunk whose text cannot be read again
// from its session file (changed since: the next index run replaces its
// chunks) gets an empty row, which keeps the two files paired.
func ftsRepair(ctx context.Context, mainTx, ftsTx *sql.Tx, redact bool) error {
	for _, t := range []struct{ table, chunks string }{
		{"chunks_fts", `SELECT id, '' FROM chunks ORDER BY id`},
		{"chunks_cjk", `SELECT id, '' FROM chunks WHERE has_cjk = 1 ORDER BY id`},
	} {
		want, err := queryIDs(ctx, mainTx, t.chunks)
		if err != nil {
			return err
		}
		// A contentless table's rowids are its docsize table's.
		have, err := queryIDs(ctx, ftsTx, `SELECT id, '' FROM `+t.table+`_docsize ORDER BY id`)
		if err != nil {
			return err
		}
		gone, missing := sortedDiff(have, want)
		for _, id := range gone {
			if _, err := ftsTx.ExecContext(ctx, `DELETE FROM `+t.table+` WHERE rowid = ?`, id); err != nil {
				return err
			}
		}
		// In groups: the chunks of a group that cite one file are read
		// from it at once.
		for len(missing) > 0 {
			group := missing[:min(len(missing), 2000)]
			missing = missing[len(group):]
			if err := ftsRepairRows(ctx, mainTx, ftsTx, t.table, group, redact); err != nil {
				return err
			}
		}
	}
	return nil
}

// ftsRepairRows inserts the rows of chunks ids into table.
func ftsRepairRows(ctx context.Context, mainTx, ftsTx *sql.Tx, table string, ids []int64, redact bool) error {
	got, texts, ok, err := chunkTextsWhere(ctx, mainTx, redact, `c.id IN (`+idList(ids)+`)`)
	if err != nil {
		return err
	}
	for i, id := range got {
		var text string
		if r := newFTSRow(id, texts[i], true); !ok[i] {
			text = ""
		} else if table == "chunks_fts" {
			text = r.words
		} else {
			text = r.text
		}
		if _, err := ftsTx.ExecContext(ctx, `INSERT INTO `+table+`(rowid, text) VALUES(?, ?)`, id, text); err != nil {
			return err
		}
	}
	return nil
}

// queryIDs runs a query of rows (id, ”), the shape collectIDTexts reads.
func queryIDs(ctx context.Context, q sqlQuerier, query string) ([]int64, error) {
	ids, _, err := collectIDTexts(sqlRows(q.QueryContext(ctx, query)))
	return ids, err
}

// sortedDiff compares two ascending lists: the ids only in have (gone)
// and only in want (missing).
func sortedDiff(have, want []int64) (gone, missing []int64) {
	i, j := 0, 0
	for i < len(have) || j < len(want) {
		switch {
		case j == len(want) || (i < len(have) && have[i] < want[j]):
			gone = append(gone, have[i])
			i++
		case i == len(have) || want[j] < have[i]:
			missing = append(missing, want[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return gone, missing
}
