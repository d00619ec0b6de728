package recall

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCancelledBatchWritesNothing: once a batch's context is cancelled,
// database/sql rolls its transaction back; chunks added after that (the
// caller checked its context just before) must fail, not be written by the
// driver statements outside any transaction.
func TestCancelledBatchWritesNothing(t *testing.T) {
	st, err := openSQLite(filepath.Join(t.TempDir(), "i.db"))
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
// display, for the FTS repair and for the LIKE scan of a short CJK word.
// A Latin word glued to CJK is in the word index on its own.
func TestStoredTextIsCompressedAndExact(t *testing.T) {
	st, err := openSQLite(filepath.Join(t.TempDir(), "i.db"))
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
	got, err := st.chunks(ctx, []int64{1, 2, 3})
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
