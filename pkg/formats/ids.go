package formats

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// uuidMap maps uuid strings to values of type V. A canonical UUID (36
// characters, lower-case hex) is keyed by its 16 bytes in an open
// addressing table of int32 positions, the scheme of pkg/transcript's id
// index: it holds no pointers (the collector never scans it), hashes one
// fixed block, and a new key (nearly every line's uuid) costs one probe of
// a slot array where Go's map touched a group of keys and grew by copying
// them, about a tenth of a Claude Code file's reading. Any other string is
// kept in a map as it is. Values live in chunks of fixed size, so one
// lookup gives a value to change in place, and the table grows without
// copying them: a slice grown by append held both the old and the new
// array for each of its copies and a quarter more than it used, 38 MB of
// a 1 GB file's 24 MB of keys and values at the converter's peak.
type uuidMap[V any] struct {
	// slots holds 1 + a position (0: empty), at the slot the key's hash
	// names or the first free one after it, at most half full; keys holds
	// the packed key of each position (zero for other strings), vals its
	// value, both in chunks of posChunk.
	slots []int32
	keys  [][][16]byte
	used  int
	other map[string]int32
	vals  [][]V
	n     int32 // positions
	// last (lastKey when lastPacked) is the key at last gave, at
	// position lastAt: a line's parent is most often the line before it,
	// found without hashing.
	last       string
	lastKey    [16]byte
	lastPacked bool
	lastAt     int32
}

// uuidSeed keys the hash, so that no file can choose uuids that collide.
var uuidSeed = [2]uint64{rand.Uint64(), rand.Uint64()}

// hashUUID mixes the two halves of k with the seed (a 128-bit product
// folded, as wyhash does).
func hashUUID(k *[16]byte) uint64 {
	hi, lo := bits.Mul64(binary.LittleEndian.Uint64(k[:8])^uuidSeed[0], binary.LittleEndian.Uint64(k[8:])^uuidSeed[1])
	return hi ^ lo
}

// find returns the value of s, nil when it has none.
func (m *uuidMap[V]) find(s string) *V { return lookup(m, s) }

// findJSON is find for a JSON string as it appears in a line, without
// making a string of it.
func (m *uuidMap[V]) findJSON(s jstr) *V {
	if s.esc || !s.canon {
		return lookup(m, s.String())
	}
	return lookup(m, s.raw())
}

func lookup[V any, S string | []byte](m *uuidMap[V], s S) *V {
	var i int32
	var ok bool
	if k, canon := packUUID(s); canon {
		if m.n > 0 && m.lastPacked && k == m.lastKey {
			return m.val(m.lastAt)
		}
		if i = m.recent(&k); i >= 0 {
			return m.val(i)
		}
		if len(m.slots) == 0 {
			return nil
		}
		slot := m.slot(&k)
		i, ok = m.slots[slot]-1, m.slots[slot] > 0
	} else {
		if m.n > 0 && !m.lastPacked && string(s) == m.last {
			return m.val(m.lastAt)
		}
		i, ok = m.other[string(s)]
	}
	if !ok {
		return nil
	}
	return m.val(i)
}

// at returns the value of s, adding a zero one when it has none. The
// pointer is valid until the next call of at.
func (m *uuidMap[V]) at(s string) *V {
	if k, canon := packUUID(s); canon {
		return m.atPacked(k)
	}
	i, ok := m.other[s]
	if !ok {
		if m.other == nil {
			m.other = map[string]int32{}
		}
		i = m.add()
		m.other[s] = i
	}
	m.last, m.lastPacked, m.lastAt = s, false, i
	return m.val(i)
}

// atJSON is at for a JSON string as it appears in a line: a canonical
// UUID is added without making a string of it.
func (m *uuidMap[V]) atJSON(s jstr) *V {
	if !s.esc && s.canon {
		if k, canon := packUUID(s.raw()); canon {
			return m.atPacked(k)
		}
	}
	return m.at(s.String())
}

// atPacked is at for the packed canonical UUID k.
func (m *uuidMap[V]) atPacked(k [16]byte) *V {
	i := m.recent(&k)
	if i < 0 {
		m.reserve()
		slot := m.slot(&k)
		if i = m.slots[slot] - 1; i < 0 {
			i = m.add()
			*m.key(i) = k
			m.slots[slot] = i + 1
			m.used++
		}
	}
	m.lastKey, m.lastPacked, m.lastAt = k, true, i
	return m.val(i)
}

// recent is the position of k among the last keys added, -1 when it is
// not one of them: a line's parent is most often a line a few lines back
// (a tool result's is its call's block), found in keys still in the cache
// rather than by a probe of the table, which misses it. The zero key is
// never looked for here: other strings' keys are zero too.
func (m *uuidMap[V]) recent(k *[16]byte) int32 {
	if *k == ([16]byte{}) {
		return -1
	}
	for p := m.n - 1; p >= 0 && p >= m.n-8; p-- {
		if *m.key(p) == *k {
			return p
		}
	}
	return -1
}

// slot is where k is in the table, or the free slot where it goes (the
// table is never full).
func (m *uuidMap[V]) slot(k *[16]byte) int {
	mask := uint64(len(m.slots) - 1)
	for i := hashUUID(k) & mask; ; i = (i + 1) & mask {
		p := m.slots[i] - 1
		if p < 0 || *m.key(p) == *k {
			return int(i)
		}
	}
}

// reserve grows the table for one more key, at most half full (a probe
// then ends after 1.5 slots on average).
func (m *uuidMap[V]) reserve() {
	if 2*(m.used+1) <= len(m.slots) {
		return
	}
	old := m.slots
	m.slots = make([]int32, max(16, 2*len(old)))
	mask := uint64(len(m.slots) - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := hashUUID(m.key(v-1)) & mask
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = v
	}
}

// posChunk is how many positions a chunk of keys and of values holds.
const posChunk = 1 << 12

// add adds a position with a zero key and value and returns it.
func (m *uuidMap[V]) add() int32 {
	if m.n%posChunk == 0 {
		m.keys = append(m.keys, make([][16]byte, posChunk))
		m.vals = append(m.vals, make([]V, posChunk))
	}
	m.n++
	return m.n - 1
}

// key is position i's key, val its value.
func (m *uuidMap[V]) key(i int32) *[16]byte { return &m.keys[i/posChunk][i%posChunk] }
func (m *uuidMap[V]) val(i int32) *V        { return &m.vals[i/posChunk][i%posChunk] }

// packUUID reads a canonical lower-case UUID
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) as its 16 bytes; false for any
// other string (upper case too: the map must tell apart what the strings
// tell apart).
func packUUID[S string | []byte](s S) (k [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return k, false
	}
	bad := byte(0)
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, lo := hexVal[s[i]], hexVal[s[i+1]]
		bad |= hi | lo
		k[j] = hi<<4 | lo&0xf
		j++
	}
	return k, bad&0x10 == 0
}

// hexVal is a lower-case hex digit's value, 0x10 for any other byte.
var hexVal = func() (t [256]byte) {
	for c := range t {
		switch {
		case c >= '0' && c <= '9':
			t[c] = byte(c - '0')
		case c >= 'a' && c <= 'f':
			t[c] = byte(c-'a') + 10
		default:
			t[c] = 0x10
		}
	}
	return t
}()

// toolNames maps tool call ids to tool names, for the results, which name
// their call by id only. A converter keeps every call's for the whole file
// (a result may come any time later), a tenth of a Codex file's live heap
// as a map of strings: here an id of up to 32 bytes (Claude Code's
// toolu_ ids and Codex's call_ ids) is its key's bytes rather than a
// string of its own, and a name is its position among the file's few
// distinct names rather than each call's copy.
type toolNames struct {
	short map[[32]byte]uint32
	long  map[string]uint32 // ids that do not fit a key
	names []string
	index map[string]uint32 // names' positions
}

func newToolNames() toolNames {
	return toolNames{short: map[[32]byte]uint32{}, long: map[string]uint32{}, index: map[string]uint32{}}
}

// shortKey is id's key, false when id has none: an id is its bytes padded
// with zeros, which tells ids apart only when they do not end in a zero.
func shortKey(id string) (k [32]byte, ok bool) {
	if len(id) > len(k) || (id != "" && id[len(id)-1] == 0) {
		return k, false
	}
	copy(k[:], id)
	return k, true
}

// set names id's tool.
func (t *toolNames) set(id, name string) {
	i, ok := t.index[name]
	if !ok {
		i = uint32(len(t.names))
		t.names = append(t.names, name)
		t.index[name] = i
	}
	if k, ok := shortKey(id); ok {
		t.short[k] = i
	} else {
		t.long[id] = i
	}
}

// get is id's tool name, "" when no call had id.
func (t *toolNames) get(id string) string {
	var i uint32
	var ok bool
	if k, short := shortKey(id); short {
		i, ok = t.short[k]
	} else {
		i, ok = t.long[id]
	}
	if !ok {
		return ""
	}
	return t.names[i]
}
