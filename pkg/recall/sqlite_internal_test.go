package recall

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
)

// TestCancelledBatchWritesNothing: once a batch's context is cancelled,
// database/sql rolls its transaction back; chunks added after that (the
// caller checked its context just before) must fail, not be written by the
// driver statements outside any transaction.
func TestCancelledBatchWritesNothing(t *testing.T) {
	st, err := openSQLite(filepath.Join(t.TempDir(), "i.db"), schemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bt, err := st.batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := bt.(*sqliteBatch)
	defer b.rollback()
	bg := context.Background()
	cs := []chunk{{StartLine: 1, EndLine: 1, Text: "before the cancel"}}
	if err := b.addChunks(bg, 1, cs); err != nil {
		t.Fatal(err)
	}
	cancel()
	// Wait for database/sql's rollback of the cancelled transaction.
	deadline := time.Now().Add(10 * time.Second)
	for b.tx.QueryRowContext(bg, `SELECT 1`).Scan(new(int)) != sql.ErrTxDone {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled transaction was not rolled back")
		}
		time.Sleep(time.Millisecond)
	}
	cs[0].Text = "after the cancel"
	if err := b.addChunks(bg, 1, cs); !errors.Is(err, context.Canceled) {
		t.Errorf("addChunks after the rollback: %v, want context.Canceled", err)
	}
	var n int
	if err := st.db.QueryRow(`SELECT count(*) FROM chunks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d chunks stored by a cancelled batch, want 0", n)
	}
}

// The chunk text is stored once, compressed, and comes back exactly: for
// display and for the FTS repair.
// A Latin word glued to CJK is in the word index on its own.
func TestStoredTextIsCompressedAndExact(t *testing.T) {
	st, err := openSQLite(filepath.Join(t.TempDir(), "i.db"), schemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	ctx := context.Background()
	long := strings.Repeat("User: the deploy script runs the migration first, then the checks. ", 40)
	texts := []string{
		long,
		"Assistant: 我们用assembly的方式部署, 然后跑测试",
		"Tool result (bash): 好 ok",
	}
	bt, err := st.batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if err := bt.(*sqliteBatch).addChunks(ctx, 1, []chunk{{StartLine: i + 1, EndLine: i + 1, Text: s, Kinds: "c", HasCJK: hasCJK(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bt.commit(); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := st.db.QueryRow(`SELECT length(text) FROM chunks WHERE id = 1`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored*4 > len(long) {
		t.Errorf("a %d-byte repetitive text is stored in %d bytes: not compressed", len(long), stored)
	}
	if _, err := st.db.Exec(`INSERT INTO files(id, path, size, mtime_ns, head_len, head_hash, sample_hash,
		last_line_start, last_line_hash, bytes_indexed, lines_indexed, malformed, indexed_at) VALUES(1, 'a.jsonl', 0, 0, 0, '', '', 0, '', 0, 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	got, _, err := st.chunks(ctx, []int64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d chunks read back, want 3", len(got))
	}
	for _, c := range got {
		if c.text != texts[c.id-1] {
			t.Errorf("chunk %d reads back %q, want %q", c.id, c.text, texts[c.id-1])
		}
	}
	for q, want := range map[string]int64{"assembly": 2, "好": 3, "部署": 2, "migration": 1} {
		ids, err := st.match(ctx, queryTokens(q), noFilter, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0] != want {
			t.Errorf("%q matches %v, want [%d]", q, ids, want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"用assembly的方式", " assembly   "},
		{"한국어 text", "    text"},
	} {
		if got := withoutCJK(tc.in); got != tc.want {
			t.Errorf("withoutCJK(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Once an index has seen dictSample bytes of chunk text it trains a
// compression dictionary; later chunks use it and read back exactly, also
// in a process that opened the index before the dictionary existed.
func TestTextDictionary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i.db")
	st, err := openSQLite(path, schemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	other, err := openSQLite(path, schemaVersion) // opened before the dictionary exists
	if err != nil {
		t.Fatal(err)
	}
	defer other.close()
	ctx := context.Background()
	var want []string
	write := func(n int, rollback bool) {
		t.Helper()
		bt, err := st.batch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := bt.(*sqliteBatch)
		var cs []chunk
		for i := 0; i < n; i++ {
			s := fmt.Sprintf("User: step %d of the 在生产环境 rollout: kubectl apply -f deploy/%d.yaml, then check pod-%d logs for errors", len(want)+i, i%97, i*31%1013)
			cs = append(cs, chunk{StartLine: len(want) + i + 1, EndLine: len(want) + i + 1, Text: s, Kinds: "c", HasCJK: true})
			if !rollback {
				want = append(want, s)
			}
		}
		for len(cs) > 0 {
			k := min(len(cs), 100)
			if err := b.addChunks(ctx, 1, cs[:k]); err != nil {
				t.Fatal(err)
			}
			cs = cs[k:]
		}
		if rollback {
			if b.enc.d == nil {
				t.Fatal("a batch past dictSample bytes trained no dictionary")
			}
			b.rollback()
			return
		}
		if err := b.commit(); err != nil {
			t.Fatal(err)
		}
	}
	dictIDs := func() (n int) {
		if err := st.db.QueryRow(`SELECT count(*) FROM text_dicts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	write(dictSample/100+300, true) // fills the sample, trains, rolls back
	if n := dictIDs(); n != 0 || st.dict.enc.d != nil {
		t.Fatalf("a rolled back batch left %d dictionaries (encoder %v)", n, st.dict.enc.d != nil)
	}
	write(dictSample/100+300, false) // trains and stores the dictionary
	if n := dictIDs(); n != 1 || st.dict.enc.d == nil {
		t.Fatalf("%d dictionaries after the sample was full (encoder %v), want 1 in use", n, st.dict.enc.d != nil)
	}
	write(500, false) // compressed with it
	var plain, withDict int
	if err := st.db.QueryRow(`SELECT sum(length(text)) FROM chunks WHERE id > ?`, len(want)-500).Scan(&withDict); err != nil {
		t.Fatal(err)
	}
	if err := st.db.QueryRow(`SELECT sum(length(text)) FROM (SELECT text FROM chunks ORDER BY id LIMIT 500)`).Scan(&plain); err != nil {
		t.Fatal(err)
	}
	if withDict*3 > plain*2 {
		t.Errorf("500 chunks take %d bytes with the dictionary, %d without: want at least a third less", withDict, plain)
	}
	if _, err := st.db.Exec(`INSERT INTO files(id, path, size, mtime_ns, head_len, head_hash, sample_hash,
		last_line_start, last_line_hash, bytes_indexed, lines_indexed, malformed, indexed_at) VALUES(1, 'a.jsonl', 0, 0, 0, '', '', 0, '', 0, 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		s    *sqliteStore
	}{{"writer", st}, {"other process", other}} {
		name, s := r.name, r.s
		if s == other {
			// As in another process: no decoder for the dictionary yet,
			// and only this store's loader to find it.
			zDicts.Lock()
			zDicts.dec = map[uint32]*s2.Dict{}
			delete(zDicts.loaders, st)
			zDicts.Unlock()
		}
		ids := make([]int64, len(want))
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		got, _, err := s.chunks(ctx, ids)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d chunks, want %d", name, len(got), len(want))
		}
		for _, c := range got {
			if c.text != want[c.id-1] {
				t.Fatalf("%s: chunk %d reads %q, want %q", name, c.id, c.text, want[c.id-1])
			}
		}
	}
}

// A term's document frequency is counted up to dfSample matches and
// estimated past it from how far back its dfSample-th newest match lies.
func TestDFEstimate(t *testing.T) {
	for _, c := range []struct {
		n, last, lo, hi, total, want int64
	}{
		{0, 0, 0, 0, 0, 0},                                    // empty index
		{1999, 5, 1, 100000, 100000, 1999},                    // under the sample: exact
		{dfSample, 90001, 1, 100000, 100000, 20000},           // one chunk in five of the newest 10,000
		{dfSample, 98001, 1, 100000, 100000, 100000},          // every chunk
		{dfSample, 99000, 1, 100000, 50000, 50000},            // ids with gaps: never above the total
		{dfSample, 1, 1, 100000, 100000, dfSample},            // the sample reached the oldest chunk: exact
		{dfSample, 51001, 1001, 101000, 100000, dfSample * 2}, // ids from 1001
	} {
		if got := dfEstimate(c.n, c.last, c.lo, c.hi, c.total); got != c.want {
			t.Errorf("dfEstimate(%d, %d, %d, %d, %d) = %d, want %d", c.n, c.last, c.lo, c.hi, c.total, got, c.want)
		}
	}
}
