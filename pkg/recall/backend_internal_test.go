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

// fakeRows is a result of ids whose Scan fails at scanErr (1-based, 0:
// never) and whose Err is err; it counts Close.
type fakeRows struct {
	ids     []int64
	i       int
	scanErr int
	err     error
	closed  int
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.ids) }
func (r *fakeRows) Err() error { return r.err }
func (r *fakeRows) Close()     { r.closed++ }
func (r *fakeRows) Scan(dest ...any) error {
	if r.i == r.scanErr {
		return errors.New("scan")
	}
	*dest[0].(*int64) = r.ids[r.i-1]
	return nil
}

// TestEachRowClosesAndReportsErrors: every multi-row read of both stores
// goes through eachRow, so it must close the rows however the reading
// ends, hand back the query's, Scan's or Err's error, and read no row of
// a query that failed.
func TestEachRowClosesAndReportsErrors(t *testing.T) {
	cols := func(id *int64) []any { return []any{id} }
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		rows    *fakeRows
		err     error
		want    []int64
		wantErr string
	}{
		{"all rows", &fakeRows{ids: []int64{1, 2, 3}}, nil, []int64{1, 2, 3}, ""},
		{"scan fails", &fakeRows{ids: []int64{1, 2, 3}, scanErr: 2}, nil, nil, "scan"},
		{"rows.Err", &fakeRows{ids: []int64{1}, err: boom}, nil, nil, "boom"},
		{"query failed", nil, boom, nil, "boom"},
	} {
		var rows rowIter
		if tc.rows != nil {
			rows = tc.rows
		}
		got, err := allRows(rows, tc.err, cols)
		if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[len(got)-1] != tc.want[len(tc.want)-1]) {
			t.Errorf("%s: rows %v, want %v", tc.name, got, tc.want)
		}
		if tc.rows != nil && tc.rows.closed != 1 {
			t.Errorf("%s: closed %d times, want once", tc.name, tc.rows.closed)
		}
	}
}
