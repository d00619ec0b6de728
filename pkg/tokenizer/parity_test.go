package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/cputime"
	"github.com/ctxtool/ctxtool/internal/testkit"

	"github.com/ctxtool/ctxtool/internal/oracle"
)

// Parity with OpenAI's tokenizer as shipped in js-tiktoken 1.0.21 (installed by
// internal/oracle/js/install.sh), compared per sample on count and on a hash of the
// token ids.

type jsResult struct {
	Counts  []int    `json:"counts"`
	Hashes  []uint32 `json:"hashes"`
	MS      float64  `json:"ms"`    // wall time spent encoding all samples
	CPUMS   float64  `json:"cpuMs"` // bench mode: CPU time of the best round
	Bytes   int      `json:"bytes"`
	Checked int      `json:"checked"` // fast mode: pieces whose heap merge was compared with js-tiktoken's
}

// requireJS skips (fails in CI) when node or js-tiktoken is missing.
func requireJS(t testing.TB) string {
	t.Helper()
	oracle.Require(t)
	dir := oracle.Dir()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "js-tiktoken", "package.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("js-tiktoken not installed: run %s", filepath.Join(dir, "install.sh"))
		}
		t.Skipf("js-tiktoken not installed: run %s (needs node >= 20 and npm)", filepath.Join(dir, "install.sh"))
	}
	return dir
}

// runJS runs testdata/tokenizer/oracle.mjs in MODE over samples, one node
// process per encoding, in parallel.
func runJS(t testing.TB, mode string, samples []string, env ...string) map[Encoding]*jsResult {
	t.Helper()
	dir := requireJS(t)
	script := filepath.Join(oracle.ModuleRoot(), "testdata", "tokenizer", "oracle.mjs")
	in := filepath.Join(t.TempDir(), "samples.json")
	b, err := json.Marshal(samples)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, in, b, 0o644)
	out := map[Encoding]*jsResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, enc := range encodings() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command("node", script, dir, mode, in, string(enc))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Env = append(os.Environ(), env...)
			if err := cmd.Run(); err != nil {
				errs <- fmt.Errorf("oracle.mjs %s %s: %v\n%s", mode, enc, err, stderr.String())
				return
			}
			var res map[string]*jsResult
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res[string(enc)] == nil {
				errs <- fmt.Errorf("oracle.mjs %s %s output: %v\n%s", mode, enc, err, stdout.String())
				return
			}
			if got := len(res[string(enc)].Counts); mode != "bench" && got != len(samples) {
				errs <- fmt.Errorf("oracle.mjs %s %s: %d results for %d samples", mode, enc, got, len(samples))
				return
			}
			mu.Lock()
			out[enc] = res[string(enc)]
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

func fnvIDs(ids []int) uint32 {
	h := uint32(2166136261)
	for _, id := range ids {
		h = (h ^ uint32(id)) * 16777619
	}
	return h
}

func short(s string) string {
	if len(s) > 160 {
		return fmt.Sprintf("%q… (%d bytes)", s[:160], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// compareJS checks every sample against the oracle's count and id hash.
func compareJS(t *testing.T, samples []string, want map[Encoding]*jsResult) {
	t.Helper()
	for _, enc := range encodings() {
		tk, err := Get(string(enc))
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, s := range samples {
			ids := tk.Encode(s)
			n := tk.Count(s)
			if n != len(ids) || n != want[enc].Counts[i] || fnvIDs(ids) != want[enc].Hashes[i] {
				if bad++; bad <= 5 {
					t.Errorf("%s sample %d %s: Count %d, Encode %d tokens; js-tiktoken %d tokens (ids equal: %v)",
						enc, i, short(s), n, len(ids), want[enc].Counts[i], fnvIDs(ids) == want[enc].Hashes[i])
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d samples differ from js-tiktoken", enc, bad, len(samples))
		}
	}
}

// splitLong separates samples with a pre-tokenizer piece over limit bytes:
// js-tiktoken's own merge is cubic in the piece length, so those go through
// the "fast" oracle mode (js regex + js rank map + heap merge, itself checked
// against js-tiktoken's merge on the shorter pieces).
func splitLong(t testing.TB, samples []string, limit int) (normal, long []string) {
	tk, err := Get("o200k")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		m := 0
		for _, p := range tk.Pieces(s) {
			m = max(m, len(p))
		}
		if m > limit {
			long = append(long, s)
		} else {
			normal = append(normal, s)
		}
	}
	return normal, long
}

// TestParityWithJSTiktoken compares every sample of the parity corpus. By
// default samples with a piece over 64 bytes go through the fast oracle, whose
// merge is checked against js-tiktoken's on pieces up to 300 bytes (~1 min in
// all); CTXTOOL_TOKENIZER_FULL=1 uses all 4.6 MB of fixture text, 256 and
// 1500 bytes (~10 min).
func TestParityWithJSTiktoken(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the ~20 s js-tiktoken parity run")
	}
	requireJS(t)
	limit, check := 64, "ORACLE_CHECK_BYTES=300"
	if os.Getenv("CTXTOOL_TOKENIZER_FULL") != "" {
		limit, check = 256, "ORACLE_CHECK_BYTES=1500"
	}
	samples := parityCorpus(t)
	normal, long := splitLong(t, samples, limit)
	total := 0
	for _, s := range samples {
		total += len(s)
	}
	t.Logf("corpus: %d samples, %d bytes (%d samples through js-tiktoken encode, %d with pieces > %d bytes through the fast oracle, %s)",
		len(samples), total, len(normal), len(long), limit, check)
	if total < 1<<20 {
		t.Fatalf("parity corpus is only %d bytes; want at least 1 MiB", total)
	}
	t.Run("encode", func(t *testing.T) { compareJS(t, normal, runJS(t, "counts", normal)) })
	t.Run("long-pieces", func(t *testing.T) {
		want := runJS(t, "fast", long, check)
		for _, enc := range encodings() {
			t.Logf("%s: heap merge checked against js-tiktoken's merge on %d pieces", enc, want[enc].Checked)
		}
		compareJS(t, long, want)
	})
}

// pathological returns 200,000 spaces and 600 KB of CJK without separators:
// one pre-tokenizer piece each.
func pathological() map[string]string {
	han := []rune("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长")
	var b strings.Builder
	for i := 0; b.Len() < 600_000; i++ {
		b.WriteRune(han[(i*7+i/13)%len(han)])
	}
	return map[string]string{
		"200k spaces":       strings.Repeat(" ", 200_000),
		"600 KB CJK":        b.String(),
		"200k spaces + x":   strings.Repeat(" ", 200_000) + "x",
		"100k 'a'":          strings.Repeat("a", 100_000),
		"50k emoji":         strings.Repeat("😀", 50_000),
		"100k newlines+tab": strings.Repeat("\n\t", 50_000),
	}
}

func TestPathologicalInputsFastAndExact(t *testing.T) {
	inputs := pathological()
	names := []string{"200k spaces", "600 KB CJK", "200k spaces + x", "100k 'a'", "50k emoji", "100k newlines+tab"}
	got := map[Encoding][]int{}
	for _, enc := range encodings() {
		tk, err := Get(string(enc))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			// The bound is on CPU time, not wall time: a quadratic merge
			// blows it just the same, and a machine busy with other work
			// (CI runners, parallel test binaries) does not.
			start, startCPU := time.Now(), cputime.Used()
			n := tk.Count(inputs[name])
			d, cpu := time.Since(start), cputime.Used()-startCPU
			t.Logf("%s %s: %d tokens in %v (%v CPU)", enc, name, n, d, cpu)
			if cpu > time.Second && !raceEnabled {
				t.Errorf("%s %s took %v of CPU time; want < 1s", enc, name, cpu)
			}
			got[enc] = append(got[enc], n)
		}
	}
	if testing.Short() {
		return
	}
	samples := make([]string, len(names))
	for i, name := range names {
		samples[i] = inputs[name]
	}
	// Smaller versions go through js-tiktoken's own merge inside the fast
	// oracle (pieces <= 1500 bytes), tying the heap merge to it.
	samples = append(samples, strings.Repeat(" ", 1499), inputs["600 KB CJK"][:1497], strings.Repeat("😀", 370))
	want := runJS(t, "fast", samples)
	for _, enc := range encodings() {
		for i, name := range names {
			if got[enc][i] != want[enc].Counts[i] {
				t.Errorf("%s %s: %d tokens, js-tiktoken (fast oracle) %d", enc, name, got[enc][i], want[enc].Counts[i])
			}
		}
	}
	compareJS(t, samples, want)
}

// TestLongPieceSegments measures what merging a piece over maxExactPiece a
// segment at a time costs against merging it whole: a few tokens per MiB at
// most, on the runs that make such pieces (spaces, one letter, random
// lowercase letters, CJK); and a 64 MiB run is counted in bounded memory
// (the whole merge needed ~24 bytes per byte, 4 GB for 200 MB).
func TestLongPieceSegments(t *testing.T) {
	tk, err := Get(string(O200k))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	letters := make([]byte, 2*maxExactPiece+12345)
	for i := range letters {
		letters[i] = 'a' + byte(rng.IntN(26))
	}
	cjk := strings.Repeat("龘靐齉", (2*maxExactPiece)/9+1)
	for name, p := range map[string]string{
		"spaces":  strings.Repeat(" ", 2*maxExactPiece+7),
		"x":       strings.Repeat("x", 2*maxExactPiece+7),
		"letters": string(letters),
		"cjk":     cjk,
	} {
		whole := tk.mergeLong(p, nil)
		segmented := tk.piece(p, nil)
		mib := (len(p) + maxExactPiece - 1) / maxExactPiece
		if d := segmented - whole; d < 0 || d > 4*mib {
			t.Errorf("%s (%d bytes): %d tokens per segment, %d whole: off by %d (allowed 0..%d)", name, len(p), segmented, whole, d, 4*mib)
		} else {
			t.Logf("%s (%d bytes): %d tokens whole, %d per segment (+%d)", name, len(p), whole, segmented, d)
		}
	}
	if testing.Short() || raceEnabled {
		return
	}
	// A 16 MiB run is merged a MiB at a time: allocation stays linear (what
	// one segment's merge needs, again per segment, so the peak is one
	// segment's) and so does CPU time.
	var before, after runtime.MemStats
	big := strings.Repeat("y", 16<<20)
	runtime.GC()
	runtime.ReadMemStats(&before)
	startCPU := cputime.Used()
	n := tk.Count(big)
	cpu := cputime.Used() - startCPU
	runtime.ReadMemStats(&after)
	perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(big))
	if perByte > 32 {
		t.Errorf("16 MiB run: %.1f bytes allocated per byte", perByte)
	}
	if cpu > 20*time.Second {
		t.Errorf("16 MiB run: %v of CPU", cpu)
	}
	t.Logf("16 MiB run: %d tokens, %v CPU, %.1f bytes allocated per byte", n, cpu, perByte)
}
