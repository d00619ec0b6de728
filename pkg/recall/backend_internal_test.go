package recall

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

type fakeRow struct {
	id  int64
	err error
}

func (r fakeRow) Scan(dest ...any) error {
	if r.err == nil {
		*dest[0].(*int64) = r.id
	}
	return r.err
}

// TestScanRowNoRows: both drivers' "no row" is ok=false without error, any
// other error is kept, so a missing file is never taken for a failure.
func TestScanRowNoRows(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		row    fakeRow
		ok     bool
		err    error
		wantID int64
	}{
		{"row", fakeRow{id: 7}, true, nil, 7},
		{"sql no rows", fakeRow{err: sql.ErrNoRows}, false, nil, 0},
		{"pgx no rows", fakeRow{err: pgx.ErrNoRows}, false, nil, 0},
		{"failure", fakeRow{err: boom}, false, boom, 0},
	} {
		var id int64
		ok, err := scanRow(tc.row, &id)
		if ok != tc.ok || !errors.Is(err, tc.err) || id != tc.wantID {
			t.Errorf("%s: scanRow = %d, %v, %v; want %d, %v, %v", tc.name, id, ok, err, tc.wantID, tc.ok, tc.err)
		}
	}
	if f, err := scanFileRow(fakeRow{err: pgx.ErrNoRows}); f != nil || err != nil {
		t.Errorf("scanFileRow(no rows) = %v, %v; want nil, nil", f, err)
	}
}
