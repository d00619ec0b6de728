package recall

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
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
