// Package jsout is the one JSON writer of the lines ctxtool writes: the
// entries transcript's Writer appends and the pi lines the format
// converters produce. It writes what pi's JSON.stringify writes for the
// same data as Node holds it, byte for byte, so a line we write is the
// line pi would have written:
//
//   - compact, object keys in the order given (a struct's declaration
//     order; a map's keys sorted, as encoding/json does);
//   - in strings only '"', '\\' and the control characters below U+0020
//     escaped (\b \f \n \r \t, the others as \u00xx); '<', '>', '&',
//     U+2028, U+2029, U+007F and every other character written raw;
//   - invalid UTF-8 written as Node reads it: each maximal subpart of an
//     ill-formed sequence (the WHATWG decoder's rule, which Node's
//     Buffer#toString follows) becomes one U+FFFD, written raw. A Go
//     string cannot hold a lone surrogate (JSON.stringify escapes one as
//     \udxxx); its UTF-8 form ED A0 80 is three ill-formed subparts, three
//     U+FFFD in Node as here.
//
// AppendString writes plain text at about 2 GB/s (BenchmarkAppendString in
// pkg/formats, AMD EPYC, 2 cores shared with 7 other agents, load average 14-19); Marshal an assistant message at about
// 200 MB/s, 76 allocations (BenchmarkMarshalJS in pkg/transcript).
//
// encoding/json differs on the last point (it writes the escape \ufffd, and
// one per invalid byte: two for the truncated sequence E4 B8, where Node
// reads one) and on U+2028/U+2029 (escaped).
package jsout

import (
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/swar"
)

const hexDigits = "0123456789abcdef"

// safeByte marks the ASCII bytes JSON strings hold as they are.
var safeByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s as a JSON string the way JSON.stringify writes
// the string Node reads from s's bytes (see the package comment).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := plainRun(s, 0); i < len(s); i = plainRun(s, i) {
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, "\ufffd"...)
		i += Subpart(s[i:])
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// StringLen is len(AppendString(nil, s)), counted without writing (for
// the converters' measuring writer); it must follow AppendString step by
// step (TestStringLenIsAppendString).
func StringLen(s string) int {
	n := len(s) + 2
	for i := plainRun(s, 0); i < len(s); i = plainRun(s, i) {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\', '\n', '\r', '\t', '\b', '\f':
				n++ // a two-byte escape
			default:
				n += 5 // \u00xx
			}
			i++
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		k := Subpart(s[i:])
		n += 3 - k // the subpart becomes U+FFFD, three bytes
		i += k
	}
	return n
}

// plainRun is the index of the first byte of s from i on that is not
// printable ASCII other than '"' and '\\' (len(s) if none): eight bytes a
// word while they all are, as base64 images and code mostly are.
func plainRun(s string, i int) int {
	for i+8 <= len(s) {
		x := swar.LoadString(s, i)
		if swar.JSONEscape(x)|x&swar.High != 0 {
			break
		}
		i += 8
	}
	for i < len(s) && safeByte[s[i]] {
		i++
	}
	return i
}

// Subpart is the length of the maximal subpart of the ill-formed UTF-8
// sequence s starts with (Unicode's "U+FFFD substitution of maximal
// subparts", the WHATWG decoder's rule): the longest prefix of a
// well-formed sequence, at least one byte. Node reads it as one U+FFFD.
func Subpart(s string) int {
	if len(s) == 0 {
		return 0
	}
	c := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // the second byte's range
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for n <= need && n < len(s) && s[n] >= lo && s[n] <= hi {
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}

// AppendValid appends b with each maximal ill-formed subpart replaced by
// U+FFFD: the string Node reads from the bytes b.
func AppendValid(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
			i += Subpart(string(b[i:min(len(b), i+4)]))
			continue
		}
		dst = append(dst, b[i:i+size]...)
		i += size
	}
	return dst
}
