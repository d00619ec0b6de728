package sessiongen

import (
	"io"
	"testing"
)

// BenchmarkGenerate measures streaming generation speed (MB/s) of a
// default-shaped session with thinking, compactions and planted facts.
func BenchmarkGenerate(b *testing.B) {
	const size = 64 << 20
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		res, err := Generate(io.Discard, Options{Seed: uint64(i), TargetBytes: size, NoLineIndex: true, Thinking: true, Compactions: 4, Facts: 7})
		if err != nil || res.Bytes < size {
			b.Fatal(err, res.Bytes)
		}
	}
}

// BenchmarkGenerateHuge measures a session dominated by multi-MB tool results.
func BenchmarkGenerateHuge(b *testing.B) {
	const size = 64 << 20
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		if _, err := Generate(io.Discard, Options{Seed: uint64(i), TargetBytes: size, NoLineIndex: true, HugeToolResults: 12, HugeToolResultBytes: 5 << 20, Turns: 24}); err != nil {
			b.Fatal(err)
		}
	}
}
