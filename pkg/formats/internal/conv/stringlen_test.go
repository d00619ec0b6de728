package conv

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/jsout"
)

// The measuring writer's lengths are those of the bytes the writing one
// appends: strings of every escape, invalid UTF-8 (each bad byte becomes
// U+FFFD), a valid U+FFFD, and integers of every width and sign.
func TestMeasuredLengthsAreWrittenLengths(t *testing.T) {
	strs := []string{"", "a", "plain ascii of more than eight bytes", "\"\\\n\r\t\b\f", "\x00\x01\x1f\x7f",
		"caf\u00e9 漢字 😀", "\xff", "ab\xfe\xffcd", "\xed\xa0\x80", "\xef\xbf\xbd", "12345678\xff12345678",
		"\u2028\u2029<>&", "long plain run 1234567890123456789012345678901234567890\"", "\xc3"}
	for _, s := range strs {
		if got, want := jsout.StringLen(s), len(AppendString(nil, s)); got != want {
			t.Errorf("jsout.StringLen(%q) = %d, AppendString writes %d bytes", s, got, want)
		}
		var m, w JSONWriter
		m.Skip = true
		if a, b := m.strWritten(s), w.strWritten(s); a != b || m.gone != len(w.B) {
			t.Errorf("strWritten(%q): measured %q, %d bytes; written %q, %d bytes", s, a, m.gone, b, len(w.B))
		}
	}
	for _, n := range []int64{0, 1, 9, 10, 99, 100, -1, -9, -10, 1 << 53, -(1 << 53), math.MaxInt64, math.MinInt64 + 1, math.MinInt64} {
		if got, want := intLen(n), len(appendInt(nil, n)); got != want {
			t.Errorf("intLen(%d) = %d, appendInt writes %d bytes", n, got, want)
		}
	}
}

// TestAppendStringIsJSONStringify checks AppendString and stringLen (the
// same walk, kept as two loops: one walk with a call per escape measured
// 5-8% slower, a generic writer 28%) against a rune-by-rune statement of what
// JSON.stringify writes (the short escapes, \u00xx for other control
// characters, everything else as it is; an invalid UTF-8 byte is read as
// U+FFFD, as node decodes it), on fixed strings and random ones built from
// the bytes that take each branch, at every offset from the eight-byte
// skip.
func TestAppendStringIsJSONStringify(t *testing.T) {
	stringify := func(s string) string {
		var b strings.Builder
		b.WriteByte('"')
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b.WriteString("\ufffd")
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\f':
				b.WriteString(`\f`)
			case r < 0x20:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteString(s[i : i+size])
			}
			i += size
		}
		b.WriteByte('"')
		return b.String()
	}
	pieces := []string{"a", "bcdefghij", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "漢", "😀", "\xff", "\xc3", "\xed\xa0\x80", "\u2028", "<"}
	rng := rand.New(rand.NewSource(1))
	strs := []string{"", "plain", "12345678\n12345678\x01"}
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for k := rng.Intn(12); k >= 0; k-- {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		strs = append(strs, b.String())
	}
	for _, s := range strs {
		want := stringify(s)
		if got := string(AppendString([]byte("x"), s)); got != "x"+want {
			t.Fatalf("AppendString(%q) = %s, JSON.stringify writes %s", s, got[1:], want)
		}
		if got := jsout.StringLen(s); got != len(want) {
			t.Fatalf("jsout.StringLen(%q) = %d, JSON.stringify writes %d bytes", s, got, len(want))
		}
	}
}
