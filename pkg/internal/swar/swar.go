// Package swar holds the word-at-a-time byte tests the hot scanners share
// (SWAR: SIMD within a register): load eight bytes as one uint64, then ask
// which of them is a given byte, below a bound, or not ASCII, with a few
// integer operations instead of eight compares.
//
// A mask's flags are the high bits of the bytes. Only the lowest flag is
// exact (a subtraction's borrow runs upwards and may flag a byte above a
// true one), so callers use a mask as "any?" or step to its lowest flag
// (bits.TrailingZeros64(m) >> 3), never read the flags above it.
//
// Measured (go test -bench . ./pkg/internal/swar; AMD EPYC, 2 cores shared with 7 other agents, load average 14-19):
// finding the end of a 64 KiB plain run a word at a time is 2.7 GB/s,
// against 1.2 GB/s a byte at a time (BenchmarkJSONEscapeWords/Bytes).
//
// Every function here is small enough for the compiler to inline (check:
// go build -gcflags=-m ./pkg/... 2>&1 | grep swar); the scanners' speed
// depends on it.
package swar

import "encoding/binary"

const (
	// Low has the low bit of each byte set: Low * c is c in every byte.
	Low = 0x0101010101010101
	// High has the high bit of each byte set: x & High != 0 when a byte
	// of x is not ASCII.
	High = 0x8080808080808080
)

// Load reads b[i:i+8] as one little-endian word (a single load).
func Load(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// LoadString reads s[i:i+8] as one little-endian word (a single load: the
// compiler merges the bytes of a slice of known length).
func LoadString(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Below flags the bytes of x below n (n <= 128); bytes >= 0x80 are never
// flagged. The result is not masked: and it with High.
func Below(x, n uint64) uint64 { return (x - Low*n) &^ x }

// Equal flags the bytes of x equal to c. The result is not masked: and it
// with High.
func Equal(x uint64, c byte) uint64 { return Below(x^(Low*uint64(c)), 1) }

// JSONEscape flags the bytes of x a JSON string cannot hold as they are:
// '"', '\\' and control bytes below 0x20 (bytes >= 0x80 are never flagged).
func JSONEscape(x uint64) uint64 {
	return (Equal(x, '"') | Equal(x, '\\') | Below(x, 0x20)) & High
}
