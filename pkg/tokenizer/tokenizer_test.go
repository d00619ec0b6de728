package tokenizer

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

func mustGet(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tk, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestGetNames(t *testing.T) {
	for name, want := range map[string]Encoding{"o200k": O200k, "o200k_base": O200k, "O200K_BASE": O200k, "cl100k": Cl100k, " cl100k_base ": Cl100k} {
		tk := mustGet(t, name)
		if tk.Encoding() != want {
			t.Errorf("Get(%q).Encoding() = %s, want %s", name, tk.Encoding(), want)
		}
	}
	if a, b := mustGet(t, "o200k"), mustGet(t, "o200k_base"); a != b {
		t.Error("Get does not cache")
	}
	for _, bad := range []string{"", "p50k", "gpt2", "o200"} {
		if _, err := Get(bad); err == nil || !strings.Contains(err.Error(), "supported: o200k, cl100k") {
			t.Errorf("Get(%q) error = %v", bad, err)
		}
	}
}

// Token ids from OpenAI's tokenizer (js-tiktoken 1.0.21).
func TestKnownTokens(t *testing.T) {
	cases := []struct {
		enc  string
		text string
		ids  []int
	}{
		{"o200k", "hello world", []int{24912, 2375}},
		{"cl100k", "hello world", []int{15339, 1917}},
		{"o200k", "Hello, World! It's   fine.\n\n  x", []int{13225, 11, 5922, 0, 7744, 256, 8975, 364, 220, 1215}},
		{"cl100k", "Hello, World! It's   fine.\n\n  x", []int{9906, 11, 4435, 0, 1102, 596, 256, 7060, 382, 220, 865}},
		{"o200k", "中文字符测试 don't", []int{10667, 67951, 82843, 4128}},
		{"cl100k", "中文字符测试 don't", []int{16325, 17161, 49491, 82805, 1541, 956}},
		{"o200k", "", nil},
		{"o200k", "<|endoftext|>", []int{27, 91, 419, 1440, 919, 91, 29}},
	}
	for _, c := range cases {
		tk := mustGet(t, c.enc)
		if got := tk.Encode(c.text); !reflect.DeepEqual(got, c.ids) && !(len(got) == 0 && len(c.ids) == 0) {
			t.Errorf("%s Encode(%q) = %v, want %v", c.enc, c.text, got, c.ids)
		}
		if got := tk.Count(c.text); got != len(c.ids) {
			t.Errorf("%s Count(%q) = %d, want %d", c.enc, c.text, got, len(c.ids))
		}
	}
}

// Pieces worked out by hand from the regexes' backtracking rules.
func TestPiecesByHand(t *testing.T) {
	cases := []struct {
		enc  string
		text string
		want []string
	}{
		{"cl100k", "  \t\n  a", []string{"  \t\n", " ", " a"}},
		{"cl100k", "x   y", []string{"x", "  ", " y"}},
		{"cl100k", "x \ty", []string{"x", " ", "\ty"}},
		{"cl100k", "end   ", []string{"end", "   "}},
		{"cl100k", "'steve's", []string{"'s", "teve", "'s"}},
		{"cl100k", "WE'RE x'LL", []string{"WE", "'RE", " x", "'LL"}},
		{"cl100k", "12345", []string{"123", "45"}},
		{"cl100k", " !!\n\n/", []string{" !!\n\n", "/"}},
		{"o200k", " !!\n\n/x", []string{" !!\n\n/", "x"}},
		{"o200k", "HTTPServer's", []string{"HTTPServer's"}},
		{"o200k", "ABC DEF", []string{"ABC", " DEF"}},
		{"o200k", "中文A", []string{"中文", "A"}},
		{"o200k", "e\u0301 x", []string{"e\u0301", " x"}},
		{"o200k", "\u0301 x", []string{"\u0301", " x"}},
		{"o200k", "don't", []string{"don't"}},
		{"o200k", "ǅemal", []string{"ǅemal"}},
		{"o200k", "\u3000\u3000x", []string{"\u3000", "\u3000x"}},
		{"o200k", "a\u0085\u0085b", []string{"a", "\u0085", "\u0085b"}},
		{"o200k", "a\ufeff b", []string{"a", "\ufeff", " b"}},
		// tiktoken's Rust regex: U+FEFF is not \s, U+0085 is (JavaScript's regex,
		// hence js-tiktoken, has it the other way round), and 'ſ' folds to 's'.
		{"o200k", "x\ufeff!", []string{"x", "\ufeff!"}},
		{"o200k", "x\u0085!", []string{"x", "\u0085", "!"}},
		{"o200k", "x'ſ", []string{"x'ſ"}},
		{"cl100k", "'ſx", []string{"'ſ", "x"}},
	}
	for _, c := range cases {
		if got := mustGet(t, c.enc).Pieces(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s Pieces(%q) = %q, want %q", c.enc, c.text, got, c.want)
		}
	}
}

// tiktoken's regexes, as tiktoken-go runs them with dlclark/regexp2.
var patterns = map[Encoding]string{
	Cl100k: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	O200k: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
		`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

func regexPieces(re *regexp2.Regexp, s string) []string {
	var out []string
	m, _ := re.FindStringMatch(s)
	for m != nil {
		out = append(out, m.String())
		m, _ = re.FindNextMatch(m)
	}
	return out
}

// randomText mixes the test alphabet and words (no 'ſ', see TestPiecesByHand).
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for k := 0; k < n; k++ {
		switch rng.IntN(4) {
		case 0:
			b.WriteString(words[rng.IntN(len(words))])
		case 1:
			b.WriteString(strings.Repeat(alphabet[rng.IntN(len(alphabet))], 1+rng.IntN(5)))
		default:
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
	}
	return b.String()
}

// The hand-written pre-tokenizer must split exactly like a backtracking regex
// engine running tiktoken's patterns.
func TestPiecesMatchRegexEngine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	texts := append([]string{}, words...)
	texts = append(texts, alphabet...)
	for i := 0; i < 3000; i++ {
		texts = append(texts, randomText(rng, 1+rng.IntN(80)))
	}
	texts = append(texts, generatedSamples()[:2000]...)
	// The regex engine agrees with tiktoken's Rust regex on these (js-tiktoken does not).
	for i := 0; i < 500; i++ {
		texts = append(texts, randomText(rng, 10)+[]string{"\u0085", "\ufeff"}[i%2]+randomText(rng, 10))
	}
	for _, enc := range encodings() {
		re := regexp2.MustCompile(patterns[enc], regexp2.None)
		tk := mustGet(t, string(enc))
		bad := 0
		for _, s := range texts {
			want := regexPieces(re, s)
			if got := tk.Pieces(s); !reflect.DeepEqual(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("%s pieces of %q:\n got %q\nwant %q", enc, s, got, want)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d texts split differently from the regex", enc, bad, len(texts))
		}
	}
}

// mergeReference is tiktoken's quadratic merge without mergeSmall's size cap.
func (t *Tokenizer) mergeReference(p string) []int {
	type pt struct {
		start int
		rank  uint32
	}
	var parts []pt
	for i := 0; i <= len(p); i++ {
		parts = append(parts, pt{i, noRank})
	}
	rankAt := func(i, skip int) uint32 {
		if i+skip+2 < len(parts) {
			return t.rank(p[parts[i].start:parts[i+skip+2].start])
		}
		return noRank
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankAt(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := uint32(noRank), -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minIdx < 0 {
			break
		}
		parts[minIdx].rank = rankAt(minIdx, 1)
		if minIdx > 0 {
			parts[minIdx-1].rank = rankAt(minIdx-1, 1)
		}
		parts = append(parts[:minIdx+1], parts[minIdx+2:]...)
	}
	var ids []int
	for i := 0; i+1 < len(parts); i++ {
		ids = append(ids, int(t.rank(p[parts[i].start:parts[i+1].start])))
	}
	return ids
}

func TestMergesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	var pieces []string
	for i := 0; i < 300; i++ {
		// Runs of one unit, random text, and random bytes: all merged as single pieces.
		unit := alphabet[rng.IntN(len(alphabet))] + words[rng.IntN(len(words))]
		switch i % 3 {
		case 0:
			pieces = append(pieces, strings.Repeat(unit, 1+rng.IntN(300)))
		case 1:
			pieces = append(pieces, randomText(rng, 1+rng.IntN(400)))
		default:
			b := make([]byte, 1+rng.IntN(600))
			for k := range b {
				b[k] = byte(rng.IntN(256))
			}
			pieces = append(pieces, string(b))
		}
	}
	pieces = append(pieces, strings.Repeat(" ", 3000), strings.Repeat("中", 1500), strings.Repeat("ab", 1000))
	for _, enc := range encodings() {
		tk := mustGet(t, string(enc))
		for _, p := range pieces {
			want := tk.mergeReference(p)
			var long []int
			if n := tk.mergeLong(p, &long); n != len(want) || !reflect.DeepEqual(long, want) {
				t.Errorf("%s mergeLong(%s) = %d tokens, reference %d", enc, short(p), n, len(want))
			}
			if len(p) <= smallPiece {
				var small []int
				if n := tk.mergeSmall(p, &small); n != len(want) || !reflect.DeepEqual(small, want) {
					t.Errorf("%s mergeSmall(%s) = %d tokens, reference %d", enc, short(p), n, len(want))
				}
			}
		}
	}
}

// Invalid UTF-8 never panics, pieces still tile the input, and every byte is counted.
func TestArbitraryBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, enc := range encodings() {
		tk := mustGet(t, string(enc))
		for i := 0; i < 500; i++ {
			b := make([]byte, rng.IntN(300))
			for k := range b {
				b[k] = byte(rng.IntN(256))
			}
			s := string(b)
			if i%2 == 0 {
				s = randomText(rng, 20) + s + "\xff\xc5'\xe4\xb8"
			}
			pieces := tk.Pieces(s)
			if strings.Join(pieces, "") != s {
				t.Fatalf("%s pieces of %q do not tile it: %q", enc, s, pieces)
			}
			n := tk.Count(s)
			if n != len(tk.Encode(s)) || n > len(s) || (len(s) > 0 && n == 0) {
				t.Fatalf("%s Count(%q) = %d, Encode %d", enc, s, n, len(tk.Encode(s)))
			}
		}
		if utf8.ValidString("\xff") || tk.Count("\xff") != 1 {
			t.Errorf("%s Count(\\xff) = %d", enc, tk.Count("\xff"))
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	text := strings.Join(generatedSamples()[:300], "\n")
	want := map[Encoding]int{}
	for _, enc := range encodings() {
		want[enc] = mustGet(t, string(enc)).Count(text)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, enc := range encodings() {
				tk, err := Get(string(enc))
				if err != nil {
					t.Error(err)
					return
				}
				if got := tk.Count(text); got != want[enc] {
					t.Errorf("%s concurrent Count = %d, want %d", enc, got, want[enc])
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzPieces(f *testing.F) {
	for _, s := range append(append([]string{}, words...), alphabet...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, enc := range encodings() {
			tk := mustGet(t, string(enc))
			pieces := tk.Pieces(s)
			if strings.Join(pieces, "") != s {
				t.Fatalf("%s pieces do not tile %q: %q", enc, s, pieces)
			}
			if tk.Count(s) != len(tk.Encode(s)) {
				t.Fatalf("%s Count != len(Encode) for %q", enc, s)
			}
			if utf8.ValidString(s) && !strings.ContainsRune(s, 'ſ') {
				re := regexp2.MustCompile(patterns[enc], regexp2.None)
				if want := regexPieces(re, s); !reflect.DeepEqual(pieces, want) {
					t.Fatalf("%s pieces of %q = %q, regex %q", enc, s, pieces, want)
				}
			}
		}
	})
}
