package swar

import (
	"bytes"
	"math/bits"
	"testing"
)

// plain is 64 KiB of printable ASCII without '"' or '\\' and a '"' at its
// end: the run a JSON string scanner crosses before its closing quote.
var plain = append(bytes.Repeat([]byte("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ "), 64<<10/45+1)[:64<<10-1], '"')

// BenchmarkJSONEscapeWords finds the first byte a JSON string cannot
// hold as it is (or a non-ASCII one), eight bytes a word, as the scanners
// do.
func BenchmarkJSONEscapeWords(b *testing.B) {
	b.SetBytes(int64(len(plain)))
	for i := 0; i < b.N; i++ {
		j := 0
		for ; j+8 <= len(plain); j += 8 {
			x := Load(plain, j)
			if m := JSONEscape(x) | x&High; m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		if plain[j] != '"' {
			b.Fatal("missed the quote")
		}
	}
}

// BenchmarkJSONEscapeBytes is the same search a byte at a time.
func BenchmarkJSONEscapeBytes(b *testing.B) {
	b.SetBytes(int64(len(plain)))
	for i := 0; i < b.N; i++ {
		j := 0
		for ; j < len(plain); j++ {
			if c := plain[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				break
			}
		}
		if plain[j] != '"' {
			b.Fatal("missed the quote")
		}
	}
}
