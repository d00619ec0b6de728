package slots

import (
	"math/rand/v2"
	"testing"
)

// TestTableAgreesWithAMap puts keys with many colliding hashes (the later
// position replacing an earlier one of the same key, as transcript's id
// index does) and checks every lookup against a map, and that the table
// stays at most half full as it grows.
func TestTableAgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var keys []uint64 // position → key
	var tab Table
	want := map[uint64]int32{}
	hash := func(k uint64) uint64 { return k % 97 } // few distinct hashes: long probes
	for n := 0; n < 5000; n++ {
		k := r.Uint64N(3000)
		p := int32(len(keys))
		keys = append(keys, k)
		if tab.Full(1) {
			tab.Grow(1, func(p int32) uint64 { return hash(keys[p]) })
		}
		slot, _ := tab.Find(hash(k), func(q int32) bool { return keys[q] == k })
		tab.Set(slot, p)
		want[k] = p
		if 2*tab.used > len(tab.slots) {
			t.Fatalf("%d keys in %d slots", tab.used, len(tab.slots))
		}
	}
	if tab.used != len(want) {
		t.Fatalf("used %d, want %d", tab.used, len(want))
	}
	for k := uint64(0); k < 3100; k++ {
		_, p := tab.Find(hash(k), func(q int32) bool { return keys[q] == k })
		if w, ok := want[k]; !ok && p != -1 || ok && p != w {
			t.Fatalf("key %d: position %d, want %d (%v)", k, p, w, ok)
		}
	}
	var empty Table
	if s, p := empty.Find(1, func(int32) bool { return true }); s != -1 || p != -1 {
		t.Fatalf("empty table: slot %d, position %d", s, p)
	}
}
