package slots

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkTable puts 1M distinct 64-bit keys (a 1 GB session's ids are
// about 740k) into a Table as transcript's id index does, growing it on
// the way, then finds each once: ns/key is per key, put and found.
func BenchmarkTable(b *testing.B) {
	keys := benchKeys()
	hash := func(p int32) uint64 { return keys[p] * 0x9E3779B97F4A7C15 }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var t Table
		for p, k := range keys {
			if t.Full(1) {
				t.Grow(1, hash)
			}
			slot, _ := t.Find(k*0x9E3779B97F4A7C15, func(q int32) bool { return keys[q] == k })
			t.Set(slot, int32(p))
		}
		for p, k := range keys {
			if _, q := t.Find(k*0x9E3779B97F4A7C15, func(q int32) bool { return keys[q] == k }); q != int32(p) {
				b.Fatalf("key %d at %d, want %d", k, q, p)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
}

// BenchmarkMap is BenchmarkTable with a Go map from key to position, the
// structure Table replaces.
func BenchmarkMap(b *testing.B) {
	keys := benchKeys()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := map[uint64]int32{}
		for p, k := range keys {
			m[k] = int32(p)
		}
		for p, k := range keys {
			if m[k] != int32(p) {
				b.Fatal("lost a key")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
}

// benchKeys is 1M random keys, the same every run.
func benchKeys() []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 1<<20)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	return keys
}
