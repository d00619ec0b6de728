package swar

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestLowestFlagIsExact checks every mask against the byte-by-byte rule it
// stands for: no byte before the lowest flag matches, the flagged one does,
// and a word with no match has no flag. Words are built from bytes near
// the bounds, where a borrow could go wrong.
func TestLowestFlagIsExact(t *testing.T) {
	near := []byte{0, 1, 0x1f, 0x20, 0x21, '"', '\\', '!', 0x7f, 0x80, 0x81, 0xa2, 0xdc, 0xff, 'a'}
	rules := []struct {
		name  string
		mask  func(uint64) uint64
		match func(byte) bool
	}{
		{"Below 0x20", func(x uint64) uint64 { return Below(x, 0x20) & High }, func(c byte) bool { return c < 0x20 }},
		{"Below '!'", func(x uint64) uint64 { return Below(x, '!') & High }, func(c byte) bool { return c < '!' }},
		{"Equal '\"'", func(x uint64) uint64 { return Equal(x, '"') & High }, func(c byte) bool { return c == '"' }},
		{"JSONEscape", JSONEscape, func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }},
	}
	r := rand.New(rand.NewPCG(1, 2))
	var b [8]byte
	for n := 0; n < 200000; n++ {
		for i := range b {
			b[i] = near[r.IntN(len(near))]
		}
		x := Load(b[:], 0)
		if y := LoadString(string(b[:]), 0); y != x {
			t.Fatalf("% x: LoadString %#x, Load %#x", b, y, x)
		}
		for _, rule := range rules {
			first := 8
			for i, c := range b {
				if rule.match(c) {
					first = i
					break
				}
			}
			m := rule.mask(x)
			got := 8
			if m != 0 {
				got = bits.TrailingZeros64(m) >> 3
			}
			if got != first {
				t.Fatalf("%s of % x: lowest flag at byte %d, want %d", rule.name, b, got, first)
			}
		}
	}
}
