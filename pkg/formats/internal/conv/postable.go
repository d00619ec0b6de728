package conv

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/ctxtool/ctxtool/pkg/internal/slots"
)

// posTable is the table under UUIDMap and ToolNames: keys of a fixed size
// at positions, found through a slots.Table (the scheme of
// pkg/transcript's id index), so a new key costs one probe of the slot
// array where Go's map touched a group of keys and grew by copying them.
// Keys and values live in chunks of posChunk, so a lookup gives a value
// to change in place and the table grows without copying them: a slice
// grown by append held both the old and the new array for each of its
// copies and a quarter more than it used (38 MB of a 1 GB Claude Code
// file's 24 MB of uuids and values at the converter's peak), and a Go map
// of 32-byte keys kept 79 bytes a key.
type posTable[K posKey, V any] struct {
	slots slots.Table
	keys  [][]K
	vals  [][]V
	n     int32 // positions
}

// posKey is a key of a posTable: an array of bytes that hashes itself.
type posKey interface {
	comparable
	hash() uint64
}

// posChunk is how many positions a chunk of keys and of values holds.
const posChunk = 1 << 12

// hashSeed keys the hashes, so that no file can choose keys that collide.
var hashSeed = [2]uint64{rand.Uint64(), rand.Uint64()}

// mix folds two words with the seed (a 128-bit product folded, as wyhash
// does).
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^hashSeed[0], b^hashSeed[1])
	return hi ^ lo
}

// uuidKey is a canonical UUID's 16 bytes (see packUUID).
type uuidKey [16]byte

func (k uuidKey) hash() uint64 {
	return mix(binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:]))
}

// callKey is a tool call id of up to 32 bytes, padded with zeros.
type callKey [32]byte

func (k callKey) hash() uint64 {
	return mix(mix(binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:16])),
		mix(binary.LittleEndian.Uint64(k[16:24]), binary.LittleEndian.Uint64(k[24:])))
}

// find is k's position, -1 when it has none.
func (t *posTable[K, V]) find(k *K) int32 {
	_, p := t.slots.Find((*k).hash(), func(p int32) bool { return *t.Key(p) == *k })
	return p
}

// put is k's position, a new one (zero value) when it had none.
func (t *posTable[K, V]) put(k *K) int32 {
	if t.slots.Full(1) {
		t.slots.Grow(1, func(p int32) uint64 { return (*t.Key(p)).hash() })
	}
	slot, i := t.slots.Find((*k).hash(), func(p int32) bool { return *t.Key(p) == *k })
	if i < 0 {
		i = t.add()
		*t.Key(i) = *k
		t.slots.Set(slot, i)
	}
	return i
}

// add adds a position with a zero key and value, in no slot, and returns
// it.
func (t *posTable[K, V]) add() int32 {
	if t.n%posChunk == 0 {
		t.keys = append(t.keys, make([]K, posChunk))
		t.vals = append(t.vals, make([]V, posChunk))
	}
	t.n++
	return t.n - 1
}

// Key is position i's key, val its value.
func (t *posTable[K, V]) Key(i int32) *K { return &t.keys[i/posChunk][i%posChunk] }
func (t *posTable[K, V]) Val(i int32) *V { return &t.vals[i/posChunk][i%posChunk] }
