package recall

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/swar"
)

// Chunking follows OpenClaw's chunkMarkdown for session transcripts
// (docs/design/rolling-window.md): ~1600 weighted characters per chunk (400
// tokens × 4), 320 characters of overlap, weighted size = code points + 3 ×
// CJK/Hangul code points, and every chunk maps back to the JSONL lines it
// came from. Two deliberate differences keep citations tight:
//   - a long content line is cut at a space near the limit when there is
//     one, so words are not split between chunks;
//   - the overlap carried into the next chunk is at most overlapChars (the
//     tail of the previous chunk), never a whole 1600-char segment, so a chunk
//     is never repeated and its line range starts at most one line early.

const (
	chunkMaxChars     = 1600
	chunkOverlapChars = 320
)

// contentLine is one JSONL line's text with its position.
type contentLine struct {
	line int   // 1-based physical line
	off  int64 // byte offset where the line starts
	end  int64 // byte offset after the line (its newline)
	ord  int   // which of the line's units (extractSourceLine's order)
	unit
}

// segment is a piece of a content line inside a chunk.
type segment struct {
	text   string
	weight int
	line   int
	off    int64
	id     string
	ts     int64
	tool   bool
	// carried marks overlap copied from the previous chunk.
	carried bool
	// Where text lies in its unit (the recipe a re-read follows, see
	// reread.go): the line's end, the unit's ordinal on the line, text's
	// byte offset in the unit's text, and the length of the unit's text.
	end       int64
	ord, at   int
	unitBytes int
}

// chunk is what gets stored and searched.
type chunk struct {
	StartLine, EndLine int
	// StartOffset is where StartLine begins in the file: a small last
	// chunk is re-read from there when the file grows.
	StartOffset int64
	Text        string
	EntryIDs    []string
	Timestamp   int64 // ms of the first entry that has one
	HasCJK      bool
	// Kinds has one byte per line of Text (its segments, joined by '\n'):
	// kindTool for tool output, kindConv for the rest. Scoring weighs
	// tool output lines less (score.go).
	Kinds string
	// Ref is what the SQLite index stores instead of Text when the text
	// can be read again from the session file (reread.go); nil: store the
	// text.
	Ref []byte
}

// Kinds of a chunk's lines.
const (
	kindConv = 'c'
	kindTool = 't'
)

// chunker accumulates content lines into chunks.
type chunker struct {
	max, overlap int
	cur          []segment
	curSize      int
	out          []chunk
	// spare is the array the next carry fills (it swaps with cur's): a
	// carry allocated a new one for every chunk.
	spare []segment
	// reread: the lines come from a plain pi JSONL file on disk, and each
	// chunk gets a Ref (see reread.go), extracted with maxChars.
	reread   bool
	maxChars int
}

// newChunker's arrays hold the segments of most chunks without growing
// (their growth is a directory of small sessions' per-file cost).
func newChunker() *chunker {
	return &chunker{max: chunkMaxChars, overlap: chunkOverlapChars,
		cur: make([]segment, 0, 32), spare: make([]segment, 0, 32)}
}

// add appends one content line: whole when it fits in a chunk (its weight
// measured once: most lines do), else in pieces.
func (c *chunker) add(cl contentLine) {
	seg := segment{text: cl.text, weight: weightedLen(cl.text), line: cl.line, off: cl.off, id: cl.id, ts: cl.ts, tool: cl.tool,
		end: cl.end, ord: cl.ord, unitBytes: len(cl.text)}
	if seg.weight <= c.max {
		c.addSegment(seg)
		return
	}
	for _, p := range splitWeighted(cl.text, c.max) {
		seg.text, seg.weight, seg.at = p.text, weightedLen(p.text), p.at
		c.addSegment(seg)
	}
}

// addSegment appends one piece of a content line, flushing the chunk
// first when the piece does not fit.
func (c *chunker) addSegment(seg segment) {
	if c.curSize+seg.weight+1 > c.max && len(c.cur) > 0 {
		if !c.onlyCarried() {
			c.flush()
			c.carry(c.overlap)
		}
		if c.curSize+seg.weight+1 > c.max {
			c.carry(c.max - seg.weight - 1) // shrink the overlap to fit
		}
	}
	c.cur = append(c.cur, seg)
	c.curSize += seg.weight + 1
}

// take returns the chunks completed so far and forgets them.
func (c *chunker) take() []chunk {
	out := c.out
	c.out = c.out[:0:0]
	return out
}

// finish flushes the last chunk and returns the chunks not yet taken.
func (c *chunker) finish() []chunk {
	c.flush()
	c.cur, c.curSize = nil, 0
	return c.take()
}

func (c *chunker) flush() {
	if len(c.cur) == 0 {
		return
	}
	// A chunk made only of carried overlap adds nothing new.
	if c.onlyCarried() {
		return
	}
	var b strings.Builder
	n := len(c.cur) - 1
	for _, s := range c.cur {
		n += len(s.text)
	}
	b.Grow(n)
	ch := chunk{StartLine: c.cur[0].line, EndLine: c.cur[len(c.cur)-1].line, StartOffset: c.cur[0].off}
	kinds := make([]byte, len(c.cur))
	for i, s := range c.cur {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.text)
		kinds[i] = kindConv
		if s.tool {
			kinds[i] = kindTool
		}
		// A chunk holds a few entries: a search of its ids costs less than
		// a set.
		if s.id != "" && !slices.Contains(ch.EntryIDs, s.id) {
			ch.EntryIDs = append(ch.EntryIDs, s.id)
		}
		if ch.Timestamp == 0 && s.ts > 0 {
			ch.Timestamp = s.ts
		}
	}
	ch.Text = b.String()
	ch.Kinds = string(kinds)
	ch.HasCJK = hasCJK(ch.Text)
	if c.reread {
		ch.Ref = newRef(c.cur, ch.Text, c.maxChars)
	}
	c.out = append(c.out, ch)
}

func (c *chunker) onlyCarried() bool {
	for _, s := range c.cur {
		if !s.carried {
			return false
		}
	}
	return true
}

// carry keeps the tail of the current chunk (≤ budget weighted chars) as
// the start of the next one.
func (c *chunker) carry(budget int) {
	kept := c.spare[:0] // newest first
	acc := 0
	for i := len(c.cur) - 1; i >= 0 && acc < budget; i-- {
		s := c.cur[i]
		if acc+s.weight+1 > budget {
			s = tailSegment(s, budget-acc-1)
			if s.weight == 0 {
				break
			}
		}
		s.carried = true
		kept = append(kept, s)
		acc += s.weight + 1
	}
	slices.Reverse(kept)
	c.spare = c.cur[:0]
	c.cur, c.curSize = kept, acc
}

// tailSegment returns the last ≤ budget weighted chars of s, starting at a
// word boundary when one is near.
func tailSegment(s segment, budget int) segment {
	if budget <= 0 {
		return segment{}
	}
	// walk back from the end
	w, start := 0, len(s.text)
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(s.text[:start])
		rw := runeWeight(r)
		if w+rw > budget {
			break
		}
		w += rw
		start -= size
	}
	if start > 0 && s.text[start-1] != ' ' {
		// Mid-word: start after the next space, or at the cut when the
		// "word" is a long unbroken run (base64, a minified line).
		if sp := strings.IndexByte(s.text[start:], ' '); sp >= 0 && sp < 40 {
			start += sp + 1
		} else if sp < 0 && len(s.text)-start < 40 {
			return segment{}
		}
	}
	t := s.text[start:]
	s.text, s.weight, s.at = t, weightedLen(t), s.at+start
	return s
}

// piece is a piece of a content line and its byte offset in the line.
type piece struct {
	text string
	at   int
}

// splitWeighted cuts a content line into pieces of at most max weighted
// chars, preferring to cut after a space in the last eighth of a piece.
func splitWeighted(text string, max int) []piece {
	var out []piece
	at := 0
	for len(text) > 0 {
		w, end, lastSpace := 0, 0, -1
		for end < len(text) {
			r, size := rune(text[end]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(text[end:])
			}
			rw := runeWeight(r)
			if w+rw > max {
				break
			}
			w += rw
			if r == ' ' && w > max*7/8 {
				lastSpace = end
			}
			end += size
		}
		if end == len(text) {
			out = append(out, piece{text, at})
			break
		}
		if end == 0 { // one rune heavier than max: cannot happen with max ≥ 4
			_, end = utf8.DecodeRuneInString(text)
		}
		if lastSpace > 0 {
			out = append(out, piece{text[:lastSpace], at})
			text, at = text[lastSpace+1:], at+lastSpace+1
		} else {
			out = append(out, piece{text[:end], at})
			text, at = text[end:], at+end
		}
	}
	return out
}

// isCJK reports the code points OpenClaw weights ×4 (CJK, Yi, Hangul,
// compatibility ideographs, extension B+).
func isCJK(r rune) bool {
	return (r >= 0x2E80 && r <= 0x9FFF) || (r >= 0xA000 && r <= 0xA4FF) ||
		(r >= 0xAC00 && r <= 0xD7AF) || (r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x20000 && r <= 0x2FA1F)
}

func runeWeight(r rune) int {
	if r >= 0x2E80 && isCJK(r) {
		return 4
	}
	return 1
}

func weightedLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		// Eight ASCII bytes at a time: most text is.
		for i+8 <= len(s) && swar.LoadString(s, i)&swar.High == 0 {
			n += 8
			i += 8
		}
		if i >= len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			n++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeWeight(r)
		i += size - 1
	}
	return n
}

func hasCJK(s string) bool {
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) && swar.LoadString(s, i)&swar.High == 0 {
			i += 8
		}
		if i >= len(s) {
			break
		}
		if s[i] < 0xE2 { // every CJK rune's UTF-8 starts at 0xE2 or above
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isCJK(r) {
			return true
		}
		i += size - 1
	}
	return false
}
