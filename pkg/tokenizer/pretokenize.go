package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer splits text into the pieces that OpenAI's tiktoken regexes
// would match, without a regex engine. tiktoken's patterns are alternations of
// simple character-class runs; a hand-written scanner that replays the regex
// engine's leftmost-first / greedy-with-backtracking choices gives the same
// pieces in one linear pass (a backtracking regex engine costs several times
// more per byte and allocates).
//
// The patterns (from tiktoken, the reference implementation):
//
//	cl100k_base: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	o200k_base:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	             [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	             \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Every character starts a match of one of the alternatives, so the pieces
// tile the text. Semantics follow the Rust regex crate that tiktoken uses:
// \s is Unicode White_Space (includes U+0085, excludes U+FEFF), and (?i) folds
// 's' with 'ſ' (U+017F). js-tiktoken (JavaScript regex) differs on exactly
// these three characters; see TestPiecesByHand.
//
// Bytes that are not valid UTF-8 are treated as one "other" character each
// (like U+FFFD); BPE still runs on the original bytes.

// character class bits
const (
	clL  uint8 = 1 << iota // \p{L}
	clN                    // \p{N}
	clWS                   // \s: Unicode White_Space
	clNL                   // \r or \n
	clU                    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clW                    // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

var (
	bmpOnce  sync.Once
	bmpClass []uint8 // class of every rune below 0x10000
)

func computeClass(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= clL
	}
	if unicode.IsNumber(r) {
		c |= clN
	}
	if unicode.Is(unicode.White_Space, r) {
		c |= clWS
	}
	if r == '\r' || r == '\n' {
		c |= clNL
	}
	lm := unicode.In(r, unicode.Lm, unicode.Lo, unicode.M)
	if lm || unicode.In(r, unicode.Lu, unicode.Lt) {
		c |= clU
	}
	if lm || unicode.Is(unicode.Ll, r) {
		c |= clW
	}
	return c
}

func initClasses() {
	bmpOnce.Do(func() {
		t := make([]uint8, 0x10000)
		for r := range t {
			if r >= 0xD800 && r <= 0xDFFF {
				continue // surrogates never decode from UTF-8
			}
			t[r] = computeClass(rune(r))
		}
		bmpClass = t
	})
}

// charAt returns the class and byte width of the character at s[i].
func charAt(s string, i int) (uint8, int) {
	b := s[i]
	if b < utf8.RuneSelf {
		return bmpClass[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r < 0x10000 {
		return bmpClass[r], w // invalid bytes decode as U+FFFD: "other"
	}
	return computeClass(r), w
}

// isPrefix reports [^\r\n\p{L}\p{N}].
func isPrefix(c uint8) bool { return c&(clNL|clL|clN) == 0 }

// isOther reports [^\s\p{L}\p{N}].
func isOther(c uint8) bool { return c&(clWS|clL|clN) == 0 }

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[p:], or p.
func contraction(s string, p int) int {
	n := len(s)
	if p+1 >= n || s[p] != '\'' {
		return p
	}
	switch s[p+1] | 0x20 {
	case 's', 't', 'm', 'd': // b|0x20 == 's' only for 'S' and 's'
		return p + 2
	case 'r', 'v':
		if p+2 < n && s[p+2]|0x20 == 'e' {
			return p + 3
		}
	case 'l':
		if p+2 < n && s[p+2]|0x20 == 'l' {
			return p + 3
		}
	}
	if s[p+1] == 0xC5 && p+2 < n && s[p+2] == 0xBF { // 'ſ' folds to 's'
		return p + 3
	}
	return p
}

// run returns the end of the longest run of characters from i that have any of the bits in mask.
func run(s string, i int, mask uint8) int {
	for i < len(s) {
		c, w := charAt(s, i)
		if c&mask == 0 {
			break
		}
		i += w
	}
	return i
}

// numbers matches \p{N}{1,3} at i (the first character is known to be a number).
func numbers(s string, i int) int {
	for k := 0; k < 3 && i < len(s); k++ {
		c, w := charAt(s, i)
		if c&clN == 0 {
			break
		}
		i += w
	}
	return i
}

// punct matches ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with '/' in the tail for o200k); 0 when it does not match.
func punct(s string, i int, c0 uint8, slash bool) int {
	st := i
	if s[i] == ' ' && i+1 < len(s) {
		if c1, _ := charAt(s, i+1); isOther(c1) {
			st = i + 1
		}
	}
	if st == i && !isOther(c0) {
		return 0
	}
	e := st
	for e < len(s) {
		c, w := charAt(s, e)
		if !isOther(c) {
			break
		}
		e += w
	}
	for e < len(s) && (s[e] == '\r' || s[e] == '\n' || (slash && s[e] == '/')) {
		e++
	}
	return e
}

// spaces matches `\s*[\r\n]+|\s+(?!\S)|\s+` at i, where s[i] is whitespace.
func spaces(s string, i, w0 int) int {
	j, lastNL := i, -1
	for j < len(s) {
		c, w := charAt(s, j)
		if c&clWS == 0 {
			break
		}
		if c&clNL != 0 {
			lastNL = j
		}
		j += w
	}
	switch {
	case j == i: // not whitespace (cannot happen for valid callers): always make progress
		return i + w0
	case lastNL >= 0: // \s*[\r\n]+ backtracks to the last newline of the run
		return lastNL + 1
	case j == len(s): // \s+(?!\S) at end of text
		return j
	}
	// \s+(?!\S) gives back the last whitespace character so it can prefix the next word
	_, lw := utf8.DecodeLastRuneInString(s[i:j])
	if j-lw > i {
		return j - lw
	}
	return j // \s+
}

// nextCl100k returns the end of the cl100k_base piece starting at i.
func nextCl100k(s string, i int) int {
	c0, w0 := charAt(s, i)
	if s[i] == '\'' {
		if e := contraction(s, i); e > i {
			return e
		}
	}
	if isPrefix(c0) && i+w0 < len(s) {
		if c1, _ := charAt(s, i+w0); c1&clL != 0 {
			return run(s, i+w0, clL)
		}
	}
	if c0&clL != 0 {
		return run(s, i, clL)
	}
	if c0&clN != 0 {
		return numbers(s, i)
	}
	if e := punct(s, i, c0, false); e > 0 {
		return e
	}
	return spaces(s, i, w0)
}

// o200kLower matches [U]*[W]+(contraction)? at st; 0 when it does not match.
// U* is greedy; when the character after the U run is not in W the regex gives
// back U characters until one that is also in W (Lm, Lo, M) can start W+.
func o200kLower(s string, st int) int {
	e, lastUW, lastW := st, -1, 0
	for e < len(s) {
		c, w := charAt(s, e)
		if c&clU == 0 {
			break
		}
		if c&clW != 0 {
			lastUW, lastW = e, w
		}
		e += w
	}
	if e < len(s) {
		if c, _ := charAt(s, e); c&clW != 0 {
			return contraction(s, run(s, e, clW))
		}
	}
	if lastUW < 0 {
		return 0
	}
	// W+ from lastUW stops after one character: what follows is Lu/Lt or the non-W end of the run.
	return contraction(s, lastUW+lastW)
}

// o200kUpper matches [U]+[W]*(contraction)? at st; 0 when it does not match.
func o200kUpper(s string, st int) int {
	if st >= len(s) {
		return 0
	}
	if c, _ := charAt(s, st); c&clU == 0 {
		return 0
	}
	return contraction(s, run(s, run(s, st, clU), clW))
}

// nextO200k returns the end of the o200k_base piece starting at i.
func nextO200k(s string, i int) int {
	c0, w0 := charAt(s, i)
	prefix := isPrefix(c0)
	if prefix && i+w0 < len(s) {
		if e := o200kLower(s, i+w0); e > 0 {
			return e
		}
	}
	if e := o200kLower(s, i); e > 0 {
		return e
	}
	if prefix {
		if e := o200kUpper(s, i+w0); e > 0 {
			return e
		}
	}
	if e := o200kUpper(s, i); e > 0 {
		return e
	}
	if c0&clN != 0 {
		return numbers(s, i)
	}
	if e := punct(s, i, c0, true); e > 0 {
		return e
	}
	return spaces(s, i, w0)
}
