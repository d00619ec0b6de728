package recall

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The PostgreSQL backend does not let the server parse text: PostgreSQL's
// text search parser keeps "/usr/lib/x.go", "wombat-4411" or an e-mail
// address as single lexemes, and how it treats non-ASCII letters depends on
// the database's locale. Instead chunks are tokenized here exactly as
// SQLite's FTS5 unicode61 tokenizer (remove_diacritics 2) does — runs of
// letters, numbers and private-use characters, lower-cased, diacritics
// removed — and stored as tsvector literals; queries are built the same
// way. Both backends therefore find the same chunks for the same query.

// ftsTokens calls fn with each token of s, in order.
func ftsTokens(s string, fn func(tok string)) {
	ftsTokenBytes(s, nil, func(b []byte) { fn(string(b)) })
}

// ftsTokenBytes calls fn with each token of s in buf (valid until fn
// returns), and returns buf for the next call: scoring tokenizes every
// candidate of every query, without a string per token.
func ftsTokenBytes(s string, buf []byte, fn func(tok []byte)) []byte {
	buf = buf[:0]
	emit := func() {
		if len(buf) > 0 {
			fn(buf)
			buf = buf[:0]
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				buf = append(buf, c)
			case c >= 'A' && c <= 'Z':
				buf = append(buf, c+'a'-'A')
			default:
				emit()
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case unicode.Is(unicode.Mn, r):
			// a combining mark: part of the token, removed with the
			// other diacritics
		case unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r):
			buf = utf8.AppendRune(buf, foldRune(r))
		default:
			emit()
		}
	}
	emit()
	return buf
}

// foldRune lower-cases r and strips its diacritics (é → e, Å → a).
func foldRune(r rune) rune {
	r = unicode.ToLower(r)
	if r < 0xC0 || r > 0x24F && (r < 0x1E00 || r > 0x1EFF) {
		return r // outside the Latin blocks that carry diacritics
	}
	d := norm.NFD.String(string(r))
	base, size := utf8.DecodeRuneInString(d)
	for _, m := range d[size:] {
		if !unicode.Is(unicode.Mn, m) {
			return r
		}
	}
	return base
}

// PostgreSQL's tsvector limits.
const (
	maxLexemeBytes = 2046
	maxPosition    = 16383
	maxPositions   = 256
)

// tsvectorLiteral renders the tokens of text as a tsvector literal with
// positions, and returns the number of tokens (the document length BM25
// normalizes by).
func tsvectorLiteral(text string) (string, int) {
	pos := map[string][]int{}
	var order []string
	n := 0
	ftsTokens(text, func(tok string) {
		n++
		if len(tok) > maxLexemeBytes {
			return
		}
		p, seen := pos[tok]
		if !seen {
			order = append(order, tok)
		}
		if len(p) < maxPositions {
			pos[tok] = append(p, min(n, maxPosition))
		}
	})
	var b strings.Builder
	for i, tok := range order {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(tok))
		b.WriteByte(':')
		for k, p := range pos[tok] {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(p))
		}
	}
	return b.String(), n
}

// quoteLexeme quotes a lexeme for a tsvector or tsquery literal.
func quoteLexeme(s string) string {
	if strings.ContainsAny(s, `'\`) {
		s = strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s)
	}
	return "'" + s + "'"
}

// queryTerms turns query tokens into terms: each a sequence of lexemes (a
// phrase when the token splits, like FTS5's "foo_bar" → foo bar).
func queryTerms(tokens []string) [][]string {
	var out [][]string
	for _, t := range tokens {
		var seq []string
		ftsTokens(t, func(l string) { seq = append(seq, l) })
		if len(seq) > 0 {
			out = append(out, seq)
		}
	}
	return out
}

// tsqueryLiteral is the AND of the terms, phrases joined with <->.
func tsqueryLiteral(terms [][]string) string {
	parts := make([]string, len(terms))
	for i, seq := range terms {
		q := make([]string, len(seq))
		for k, l := range seq {
			q[k] = quoteLexeme(l)
		}
		parts[i] = strings.Join(q, " <-> ")
		if len(seq) > 1 {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, " & ")
}

// sortMatches orders matches best first, newer first on ties.
func sortMatches(ms []match) {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].score != ms[j].score {
			return ms[i].score > ms[j].score
		}
		return ms[i].id > ms[j].id
	})
}
