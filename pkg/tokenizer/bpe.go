package tokenizer

import "math"

// Byte-pair merging of one pre-tokenizer piece.
//
// tiktoken's rule: start from single bytes; repeatedly merge the adjacent pair
// whose concatenation has the lowest rank, the leftmost one on ties, until no
// adjacent pair is a known token. Both functions below apply exactly that rule.
// mergeSmall is tiktoken's own algorithm (a linear scan for the minimum after
// every merge, O(n²)): the fastest for the short pieces of ordinary text.
// mergeLong keeps the candidate pairs in a min-heap keyed by (rank, start
// offset) over a linked list of parts, O(n log n): the same sequence of merges,
// because the heap pops the global minimum with the leftmost start on ties, and
// a merge only changes the ranks of the pairs touching the merged part (stale
// heap entries are recognised and skipped). It is what keeps a 200,000-space or
// 600 KB CJK piece well under a second, where the quadratic scan takes minutes.

const noRank = math.MaxUint32

// smallPiece is the longest piece merged with the quadratic scan.
const smallPiece = 128

// maxExactPiece is the longest piece merged as one. A longer piece — one run
// of letters, of spaces or of CJK this long, which only generated or hostile
// text holds — is merged a segment of this size at a time: merges across a
// cut are missed, so the count can be a few tokens off tiktoken's per MiB
// (TestLongPieceSegments measures it), and the merge's memory (about 24
// bytes per byte) stays bounded where a 200 MB run took 4 GB and minutes.
const maxExactPiece = 1 << 20

func (t *Tokenizer) rank(b string) uint32 {
	if r, ok := t.ranks[b]; ok {
		return uint32(r)
	}
	return noRank
}

// piece returns the number of tokens of p and, when out is not nil, appends their ids.
func (t *Tokenizer) piece(p string, out *[]int) int {
	if r, ok := t.ranks[p]; ok {
		if out != nil {
			*out = append(*out, r)
		}
		return 1
	}
	if len(p) <= smallPiece {
		return t.mergeSmall(p, out)
	}
	n := 0
	for len(p) > maxExactPiece {
		n += t.mergeLong(p[:maxExactPiece], out)
		p = p[maxExactPiece:]
	}
	return n + t.mergeLong(p, out)
}

type part struct {
	start int32
	rank  uint32 // rank of this part merged with the next one
}

func (t *Tokenizer) mergeSmall(p string, out *[]int) int {
	var buf [smallPiece + 1]part
	parts := buf[:0]
	minRank, minIdx := uint32(noRank), -1
	for i := 0; i < len(p)-1; i++ {
		r := t.pairs[uint16(p[i])<<8|uint16(p[i+1])]
		if r < minRank {
			minRank, minIdx = r, i
		}
		parts = append(parts, part{int32(i), r})
	}
	parts = append(parts, part{int32(len(p) - 1), noRank}, part{int32(len(p)), noRank})
	// rankAt is the rank of parts[i] merged with parts[i+1] and parts[i+2],
	// i.e. of parts[i] with its next part once parts[i+1] has been merged in.
	rankAt := func(i int) uint32 {
		if i+3 < len(parts) {
			return t.rank(p[parts[i].start:parts[i+3].start])
		}
		return noRank
	}
	for minRank != noRank {
		i := minIdx
		if i > 0 {
			parts[i-1].rank = rankAt(i - 1)
		}
		parts[i].rank = rankAt(i)
		parts = append(parts[:i+1], parts[i+2:]...)
		minRank, minIdx = noRank, -1
		for k, pt := range parts[:len(parts)-1] {
			if pt.rank < minRank {
				minRank, minIdx = pt.rank, k
			}
		}
	}
	if out != nil {
		for k := 0; k < len(parts)-1; k++ {
			*out = append(*out, int(t.rank(p[parts[k].start:parts[k+1].start])))
		}
	}
	return len(parts) - 1
}

func (t *Tokenizer) mergeLong(p string, out *[]int) int {
	n := int32(len(p))
	// Part i (alive while prev[i] != dead) covers p[i:next[i]]; next == n marks the last part.
	const dead = -2
	next := make([]int32, n)
	prev := make([]int32, n)
	pairRank := make([]uint32, n) // rank of part i merged with part next[i]
	for i := int32(0); i < n; i++ {
		next[i], prev[i] = i+1, i-1
	}
	rankOf := func(i int32) uint32 {
		j := next[i]
		if j >= n {
			return noRank
		}
		return t.rank(p[i:next[j]])
	}
	h := make(minHeap, 0, n)
	for i := int32(0); i < n; i++ {
		pairRank[i] = rankOf(i)
		if pairRank[i] != noRank {
			h = append(h, uint64(pairRank[i])<<32|uint64(i))
		}
	}
	h.init()
	count := int(n)
	for len(h) > 0 {
		top := h.pop()
		r, i := uint32(top>>32), int32(uint32(top))
		if prev[i] == dead || pairRank[i] != r {
			continue // stale: the pair changed since this entry was pushed
		}
		j := next[i]
		next[i] = next[j]
		if next[j] < n {
			prev[next[j]] = i
		}
		prev[j] = dead
		count--
		if pairRank[i] = rankOf(i); pairRank[i] != noRank {
			h.push(uint64(pairRank[i])<<32 | uint64(i))
		}
		if k := prev[i]; k >= 0 {
			if pairRank[k] = rankOf(k); pairRank[k] != noRank {
				h.push(uint64(pairRank[k])<<32 | uint64(k))
			}
		}
	}
	if out != nil {
		for i := int32(0); i < n; i = next[i] {
			*out = append(*out, int(t.rank(p[i:next[i]])))
		}
	}
	return count
}

// minHeap orders (rank<<32 | start) keys: lowest rank first, then leftmost
// start. It is 4-ary: half the depth of a binary heap, and the four children
// of a node share a cache line, which matters for 600,000-entry heaps.
type minHeap []uint64

func (h minHeap) init() {
	if len(h) < 2 {
		return
	}
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

func (h *minHeap) push(x uint64) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if s[parent] <= x {
			break
		}
		s[i] = s[parent]
		i = parent
	}
	s[i] = x
}

func (h *minHeap) pop() uint64 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	if last > 0 {
		(*h).down(0)
	}
	return top
}

func (h minHeap) down(i int) {
	n := len(h)
	x := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if h[k] < h[m] {
				m = k
			}
		}
		if x <= h[m] {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}
