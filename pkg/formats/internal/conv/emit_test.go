package conv

import (
	"testing"
	"time"
)

// TestPiFormAgreesWithParse: the fast path of PiTime gives what
// time.Parse and Format give, and leaves every other form to them.
func TestPiFormAgreesWithParse(t *testing.T) {
	slow := func(s string) (string, int64) {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return s, 0
		}
		return tm.UTC().Format("2006-01-02T15:04:05.000Z"), tm.UnixMilli()
	}
	cases := []string{
		"2026-03-02T09:00:02.370Z", "1970-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000Z",
		"0000-01-01T00:00:00.000Z", "2024-02-29T23:59:59.999Z", "2023-02-29T10:00:00.000Z",
		"2026-02-30T10:00:00.000Z", "2026-13-01T10:00:00.000Z", "2026-00-01T10:00:00.000Z",
		"2026-01-00T10:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-01-01T10:60:00.000Z",
		"2026-01-01T10:00:60.000Z", "2026-01-01T10:00:00.00xZ", "2026-01-01 10:00:00.000Z",
		"2026-01-01T10:00:00.000+00:00", "2026-01-01T10:00:00Z", "2026-01-01T10:00:00.1234Z",
		"9999-12-31T23:59:59.999Z", "-026-01-01T10:00:00.000Z", "2026-04-31T10:00:00.000Z", "",
	}
	for _, s := range cases {
		iso, ms := PiTime(s)
		wantISO, wantMS := slow(s)
		if iso != wantISO || ms != wantMS {
			t.Errorf("piTime(%q) = %q, %d; time.Parse gives %q, %d", s, iso, ms, wantISO, wantMS)
		}
	}
	for ms := int64(-1e12); ms < 4e12; ms += 7777777777 {
		s := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
		if got, ok := PiForm(s); !ok || got != ms {
			t.Fatalf("piForm(%q) = %d, %v; want %d", s, got, ok, ms)
		}
	}
}
