package tokenizer

import (
	"os"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/cputime"
)

// BenchmarkCount counts every string of the fixture sessions (~4.6 MB of
// prose, code, tool output and JSON), one Count call per string as the
// estimator does per message, starting with an empty piece cache. MB/s is
// reported by -bench.
func BenchmarkCount(b *testing.B) {
	samples := fixtureSamples(b)
	total := 0
	for _, s := range samples {
		total += len(s)
	}
	for _, enc := range encodings() {
		b.Run(string(enc), func(b *testing.B) {
			tk := mustGet(b, string(enc))
			b.SetBytes(int64(total))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tk.resetCache() // each iteration is a cold first pass, as in one CLI run
				b.StartTimer()
				for _, s := range samples {
					tk.Count(s)
				}
			}
		})
	}
}

func BenchmarkCountPathological(b *testing.B) {
	for name, s := range pathological() {
		for _, enc := range encodings() {
			b.Run(string(enc)+"/"+name, func(b *testing.B) {
				tk := mustGet(b, string(enc))
				b.SetBytes(int64(len(s)))
				for i := 0; i < b.N; i++ {
					tk.Count(s)
				}
			})
		}
	}
}

// TestThroughputVsJSTiktoken (opt-in: CTXTOOL_TOKENIZER_BENCH=1) measures
// Count and js-tiktoken's encode on the same samples, best of 3 rounds each,
// by wall time and by process CPU time, and logs MB/s and the ratios: once on
// all fixture strings, once on those without a piece over 256 bytes (where
// js-tiktoken's cubic merge does not dominate). The piece cache is reset
// before each Go round, so repeated rounds do not flatter Go.
func TestThroughputVsJSTiktoken(t *testing.T) {
	if os.Getenv("CTXTOOL_TOKENIZER_BENCH") == "" {
		t.Skip("set CTXTOOL_TOKENIZER_BENCH=1 to compare throughput with js-tiktoken")
	}
	all := fixtureSamples(t)
	normal, _ := splitLong(t, all, 256)
	for _, set := range []struct {
		name    string
		samples []string
	}{{"all fixture strings", all}, {"pieces <= 256 bytes", normal}} {
		bytes := 0
		for _, s := range set.samples {
			bytes += len(s)
		}
		js := runJS(t, "bench", set.samples)
		for _, enc := range encodings() {
			tk := mustGet(t, string(enc))
			wall, cpu, tokens := time.Duration(1<<62), time.Duration(1<<62), 0
			for round := 0; round < 3; round++ {
				tk.resetCache()
				start, c0 := time.Now(), cputime.Used()
				n := 0
				for _, s := range set.samples {
					n += tk.Count(s)
				}
				wall, cpu, tokens = min(wall, time.Since(start)), min(cpu, cputime.Used()-c0), n
			}
			if tokens != js[enc].Counts[0] {
				t.Errorf("%s %s: %d tokens, js-tiktoken %d", set.name, enc, tokens, js[enc].Counts[0])
			}
			mb := float64(bytes) / 1e6
			goWall, jsWall := mb/wall.Seconds(), mb/(js[enc].MS/1000)
			goCPU, jsCPU := mb/cpu.Seconds(), mb/(js[enc].CPUMS/1000)
			t.Logf("%s, %s: %d samples, %.2f MB, %d tokens: wall Go %.1f MB/s vs js-tiktoken %.2f MB/s (%.0fx); CPU Go %.1f MB/s vs js-tiktoken %.2f MB/s (%.0fx)",
				set.name, enc, len(set.samples), mb, tokens, goWall, jsWall, goWall/jsWall, goCPU, jsCPU, goCPU/jsCPU)
		}
	}
}

// resetCache empties the piece cache (benchmarks measure cold runs with it).
func (t *Tokenizer) resetCache() {
	for i := range t.cache {
		t.cache[i].Store(nil)
	}
}
