// Package slots is the open-addressing index under transcript's id index
// and formats' posTable: keys that their user keeps at positions (entries
// of a session, a converter's uuids and tool call ids) found by hash
// through an array of slots. A slot holds 1 + a position (0: empty), at
// the slot the key's hash names or the first free one after it (linear
// probing); the array is at most half full, so a probe ends after 1.5
// slots on average. It holds no pointers, so the collector never scans
// it, and costs 4 bytes a slot (8 to 16 a key). Positions fit an int32:
// 2^31 keys would take more than 500 GB of memory.
//
// Measured (go test -bench . ./pkg/internal/slots; AMD EPYC, 2 cores shared with 7 other agents, load average 14-19):
// putting and finding 1M random keys costs 164 ns a key and 16.8 MB,
// against 461 ns and 75.7 MB for a map[uint64]int32 (BenchmarkTable,
// BenchmarkMap; both dominated by cache misses at that size).
//
// The user compares keys (Find's is) and hashes them (Grow's hash): Find
// is small enough to be inlined with its is (check: go build -gcflags=-m
// ./pkg/... 2>&1 | grep slots), and the lookups of a session's load
// depend on it.
package slots

// Table is the slot array; the zero Table is empty.
type Table struct {
	slots []int32
	used  int // slots that hold a position
}

// Find is the slot of the key with hash h, and its position p: the first
// slot from h's whose position satisfies is, or else the free slot where
// that key goes (p is then -1). An empty table has no slot: -1, -1.
func (t *Table) Find(h uint64, is func(p int32) bool) (slot int, p int32) {
	if len(t.slots) == 0 {
		return -1, -1
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		p := t.slots[i] - 1
		if p < 0 || is(p) {
			return int(i), p
		}
	}
}

// Set puts position p in slot (from Find, on a table that has room).
func (t *Table) Set(slot int, p int32) {
	if t.slots[slot] == 0 {
		t.used++
	}
	t.slots[slot] = p + 1
}

// Full reports whether n more keys would make the table more than half
// full: Grow it first.
func (t *Table) Full(n int) bool { return 2*(t.used+n) > len(t.slots) }

// Grow makes room for n more keys at most half full: a new array of the
// smallest power of two (8 at least) that holds them, each position moved
// to the first free slot from its key's hash.
func (t *Table) Grow(n int, hash func(p int32) uint64) {
	want := 8
	for want < 2*(t.used+n) {
		want *= 2
	}
	if want <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]int32, want)
	mask := uint64(want - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := hash(v-1) & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = v
	}
}
