package formats

import (
	"math"
	"testing"
)

// The measuring writer's lengths are those of the bytes the writing one
// appends: strings of every escape, invalid UTF-8 (each bad byte becomes
// U+FFFD), a valid U+FFFD, and integers of every width and sign.
func TestMeasuredLengthsAreWrittenLengths(t *testing.T) {
	strs := []string{"", "a", "plain ascii of more than eight bytes", "\"\\\n\r\t\b\f", "\x00\x01\x1f\x7f",
		"caf\u00e9 漢字 😀", "\xff", "ab\xfe\xffcd", "\xed\xa0\x80", "\xef\xbf\xbd", "12345678\xff12345678",
		"\u2028\u2029<>&", "long plain run 1234567890123456789012345678901234567890\"", "\xc3"}
	for _, s := range strs {
		if got, want := stringLen(s), len(AppendString(nil, s)); got != want {
			t.Errorf("stringLen(%q) = %d, AppendString writes %d bytes", s, got, want)
		}
		var m, w jsonw
		m.skip = true
		if a, b := m.strWritten(s), w.strWritten(s); a != b || m.gone != len(w.b) {
			t.Errorf("strWritten(%q): measured %q, %d bytes; written %q, %d bytes", s, a, m.gone, b, len(w.b))
		}
	}
	for _, n := range []int64{0, 1, 9, 10, 99, 100, -1, -9, -10, 1 << 53, -(1 << 53), math.MaxInt64, math.MinInt64 + 1, math.MinInt64} {
		if got, want := intLen(n), len(appendInt(nil, n)); got != want {
			t.Errorf("intLen(%d) = %d, appendInt writes %d bytes", n, got, want)
		}
	}
}
