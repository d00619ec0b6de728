package facts

import (
	"strings"
	"unicode"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// Corpus is text that facts are looked for in (a summary plus the kept
// messages, say), prepared once for many lookups.
type Corpus struct {
	raw     string
	norm    string
	words   map[string]bool
	numbers map[string]bool
}

var reDistinct = lazyre.New(`[\p{L}\p{N}]*(?:\d|_)[\p{L}\p{N}_]*`)

var reNumberToken = lazyre.New(`\d[\d,]*(?:\.\d+)*`)

// NewCorpus prepares texts for Has.
func NewCorpus(texts ...string) *Corpus {
	raw := strings.Join(texts, "\n")
	c := &Corpus{raw: raw, norm: " " + normalize(raw) + " ", words: map[string]bool{}, numbers: map[string]bool{}}
	for _, w := range strings.Fields(c.norm) {
		c.words[w] = true
	}
	c.addNumbers(raw)
	return c
}

// Add appends text to the corpus.
func (c *Corpus) Add(text string) {
	c.raw += "\n" + text
	n := normalize(text)
	c.norm += n + " "
	for _, w := range strings.Fields(n) {
		c.words[w] = true
	}
	c.addNumbers(text)
}

// addNumbers records the whole numbers of s: digit runs not glued to a
// word before them (quota_c768 holds no 768).
func (c *Corpus) addNumbers(s string) {
	for _, n := range numberTokens(s) {
		c.numbers[n] = true
	}
}

func numberTokens(s string) []string {
	var out []string
	for _, l := range reNumberToken().FindAllStringIndex(s, -1) {
		if l[0] > 0 {
			if b := s[l[0]-1]; b == '_' || b == '.' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') {
				continue
			}
		}
		out = append(out, strings.ReplaceAll(s[l[0]:l[1]], ",", ""))
	}
	return out
}

// Has reports whether the corpus still carries f:
//   - an identifier: its exact text;
//   - a number: every number in its value, as a whole number (so "31686"
//     is not found inside "316860"; "1,000" matches "1000");
//   - a sentence: the sentence itself (case, punctuation and spacing
//     ignored), or — for a rewording — at least 80% of its content words
//     and every identifier, number and word with a digit or underscore
//     it contains.
func (c *Corpus) Has(f Fact) bool {
	switch f.Class {
	case Identifier:
		return strings.Contains(c.raw, f.Value)
	case Number:
		return c.hasNumbers(f.Value)
	}
	n := normalize(f.Value)
	if n == "" {
		return true
	}
	if strings.Contains(c.norm, " "+n+" ") {
		return true
	}
	ids, rest := findIdentifiers(f.Value)
	for _, id := range ids {
		if !strings.Contains(c.raw, id.value) {
			return false
		}
	}
	for _, num := range findNumbers(rest) {
		if !c.hasNumbers(num.value) {
			return false
		}
	}
	// words with digits or underscores (status_316b, v2, x86) are what
	// tells one sentence from its siblings: they must be there verbatim
	for _, w := range reDistinct().FindAllString(f.Value, -1) {
		if !strings.Contains(c.raw, w) {
			return false
		}
	}
	kws := contentWords(f.Value)
	if len(kws) < 3 {
		return false
	}
	hit := 0
	for _, w := range kws {
		if c.words[w] {
			hit++
		}
	}
	return float64(hit) >= 0.8*float64(len(kws))
}

func (c *Corpus) hasNumbers(v string) bool {
	nums := numberTokens(v)
	if len(nums) == 0 {
		return strings.Contains(c.raw, v)
	}
	for _, n := range nums {
		if !c.numbers[n] {
			return false
		}
	}
	return true
}

// Missing returns the facts of fs that none of texts carries, in order.
func Missing(fs []Fact, texts ...string) []Fact {
	c := NewCorpus(texts...)
	var out []Fact
	for _, f := range fs {
		if !c.Has(f) {
			out = append(out, f)
		}
	}
	return out
}

// normalize lower-cases s and turns every run of characters that are not
// letters or digits into one space.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// contentWords are the normalised words of s that carry its meaning: at
// least three characters, not a stop word or statement cue.
func contentWords(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(normalize(s)) {
		if len([]rune(w)) < 3 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are but not you all any can had her was one our out has him his how its may new now old see two way who did get let say she too use
		that this with from have what will would should could there then them they your about into just also make sure been were when which while where their these those than some such only other more most very much many each over under after before again once here because does doing done being having
		decided decide decision must never always don avoid please need want like going let lets we ll ve i`) {
		m[w] = true
	}
	return m
}()
