package recall

import (
	"bytes"
	"math"
	"strings"
	"unicode/utf8"
)

// Scoring. A hit's score is computed here, in Go, from the chunk's text and
// corpus statistics the backend reports (chunk count, average length,
// document frequency of each query term), so that both backends give the
// same score for the same chunk, and so that a score says the same thing
// for every query:
//
//		text = 0.50 × coverage + 0.25 × line + 0.25 × saturation
//
//	  - coverage: the share of the query the chunk holds, each term weighted
//	    by its IDF (a rare identifier counts more than a common word);
//	  - line: the same share in the chunk's best line (one entry, or a
//	    1,600-character piece of a long one), tool output weighted toolWeight:
//	    a line that holds all the words beats a chunk that scatters them;
//	  - saturation: BM25 (k1 1.2, b 0.75) with tool output's term frequency
//	    weighted toolWeight, over the best BM25 the query could reach (every
//	    term infinitely often): more occurrences in a shorter chunk rank
//	    higher, never reaching 1.
//
// Each part is in [0,1], so is text; a chunk with every query word once,
// at an average length, in what the user or the assistant wrote, scores
// about 0.86; the same in tool output about 0.72; half of the query's
// weight about 0.4. Then two small factors, each at most a 10% cut:
// recency (a chunk loses up to 10% as it ages against the newest candidate,
// half of that per recencyHalfLife) and nearness to the caller's session
// (SearchOptions.Near: same session 1, same project or agent 0.95, else
// 0.9). Hits are ordered by score, then newer first, then path, line and
// chunk id, and the candidates do not depend on --max-results (see
// candidatePool): a top-k is always the prefix of a top-(k+n).
const (
	k1, bm25B       = 1.2, 0.75
	toolWeight      = 0.5
	coverageWeight  = 0.5
	lineWeight      = 0.25
	satWeight       = 0.25
	recencyCut      = 0.1
	recencyHalfLife = 30 * 24 * 3600 * 1000 // ms
	farCut          = 0.1
	nearCut         = 0.05
)

// candidatePool is how many keyword matches each query fetches before
// scoring (more when --max-results asks for more).
const candidatePool = 100

// term is one query token as the index matches it: a lexeme sequence
// (FTS5's unicode61 tokens: "foo_bar" is the phrase foo bar), or, for
// CJK, a substring.
type term struct {
	tok string
	seq []string
	cjk bool
}

// queryTermsOf turns query tokens into terms (tokens with no lexeme are
// dropped).
func queryTermsOf(tokens []string) []term {
	var out []term
	for _, t := range tokens {
		if hasCJK(t) {
			out = append(out, term{tok: t, cjk: true})
			continue
		}
		var seq []string
		ftsTokens(t, func(l string) { seq = append(seq, l) })
		if len(seq) > 0 {
			out = append(out, term{tok: t, seq: seq})
		}
	}
	return out
}

// corpus is what scoring needs from the index: its chunk count, their
// average length in tokens, and the number of chunks holding each term.
type corpus struct {
	n     int64
	avgdl float64
	df    []int64
}

// idf is Lucene's BM25 IDF (always positive, unlike FTS5's, which is
// floored at 1e-6 for a term in more than half of the chunks: a small
// index would weigh every common term the same as none), over at least
// minCorpus chunks: in an index of a few sessions every word is in a good
// share of the chunks, and the words of the caller's own prompt would
// outweigh the rest.
func (c corpus) idf(i int) float64 {
	n, df := float64(max(c.n, minCorpus)), float64(c.df[i])
	if df > n {
		n = df
	}
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// minCorpus is the fewest chunks IDF assumes.
const minCorpus = 1000

// textScore scores a chunk (its text and line kinds) against the terms.
func textScore(text, kinds string, terms []term, c corpus) float64 {
	if len(terms) == 0 {
		return 0
	}
	idf := make([]float64, len(terms))
	var idfSum float64
	for i := range terms {
		idf[i] = c.idf(i)
		idfSum += idf[i]
	}
	if idfSum <= 0 {
		return 0
	}
	tf := make([]float64, len(terms)) // kind-weighted, over the chunk
	present := make([]bool, len(terms))
	dl := 0
	bestLine := 0.0
	var lt lineTokens
	for li := 0; ; li++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		w := 1.0
		if li < len(kinds) && kinds[li] == kindTool {
			w = toolWeight
		}
		if lt.absent(line, terms) {
			dl += lt.asciiTokens
			if text == "" {
				break
			}
			continue
		}
		lt.read(line)
		dl += len(lt.ends)
		lower := ""
		inLine := 0.0
		for i, t := range terms {
			var n int
			if t.cjk {
				if lower == "" {
					lower = strings.ToLower(line)
				}
				n = strings.Count(lower, t.tok)
			} else {
				n = lt.count(t.seq)
			}
			if n > 0 {
				tf[i] += w * float64(n)
				present[i] = true
				inLine += idf[i]
			}
		}
		bestLine = math.Max(bestLine, w*inLine/idfSum)
		if text == "" {
			break
		}
	}
	avgdl := c.avgdl
	if avgdl <= 0 {
		avgdl = float64(max(dl, 1))
	}
	var cov, sat float64
	norm := k1 * (1 - bm25B + bm25B*float64(dl)/avgdl)
	for i := range terms {
		if present[i] {
			cov += idf[i]
		}
		sat += idf[i] * tf[i] * (k1 + 1) / (tf[i] + norm)
	}
	cov /= idfSum
	sat /= idfSum * (k1 + 1)
	return coverageWeight*cov + lineWeight*bestLine + satWeight*sat
}

// lineTokens are one line's tokens, back to back in flat (token i ends
// at ends[i]); its buffers are reused from line to line.
type lineTokens struct {
	flat, buf, lower []byte
	ends             []int
	asciiTokens      int
}

// absent reports whether line is plain ASCII and holds none of the terms'
// first lexemes (then none of the terms: the line needs no tokenizing, and
// asciiTokens is its token count). Most lines of a candidate hold no query
// word; tokenizing them was most of a search's scoring.
func (lt *lineTokens) absent(line string, terms []term) bool {
	lt.lower = lt.lower[:0]
	var high byte
	n, in := 0, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		high |= c
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lt.lower = append(lt.lower, c)
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if alnum && !in {
			n++
		}
		in = alnum
	}
	if high >= utf8.RuneSelf {
		return false
	}
	for _, t := range terms {
		if t.cjk {
			continue // (an ASCII line holds no CJK)
		}
		if bytes.Contains(lt.lower, []byte(t.seq[0])) {
			return false
		}
	}
	lt.asciiTokens = n
	return true
}

func (lt *lineTokens) read(line string) {
	lt.flat, lt.ends = lt.flat[:0], lt.ends[:0]
	lt.buf = ftsTokenBytes(line, lt.buf, func(b []byte) {
		lt.flat = append(lt.flat, b...)
		lt.ends = append(lt.ends, len(lt.flat))
	})
}

func (lt *lineTokens) tok(i int) []byte {
	start := 0
	if i > 0 {
		start = lt.ends[i-1]
	}
	return lt.flat[start:lt.ends[i]]
}

// count is the number of times the lexeme sequence seq occurs.
func (lt *lineTokens) count(seq []string) int {
	n := 0
	for i := 0; i+len(seq) <= len(lt.ends); i++ {
		ok := true
		for k, l := range seq {
			if string(lt.tok(i+k)) != l {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// recencyFactor is the cut for a chunk of time ts when the newest
// candidate is newest (unix ms; 0: unknown, the full cut).
func recencyFactor(ts, newest int64) float64 {
	if ts <= 0 || newest <= 0 {
		return 1 - recencyCut
	}
	age := float64(max(newest-ts, 0))
	return 1 - recencyCut*(1-math.Exp2(-age/recencyHalfLife))
}
