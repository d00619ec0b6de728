package conv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A canonical lower-case UUID packs into its 16 bytes; anything else (upper
// case, other lengths, misplaced dashes, non-hex) is kept as a string, so
// two different strings never share a key.
func TestUUIDMapKeepsStringsApart(t *testing.T) {
	ids := []string{
		"7d48cbd2-6615-4dd8-87f6-38f12b8167d6",
		"7D48CBD2-6615-4DD8-87F6-38F12B8167D6",
		"7d48cbd2-6615-4dd8-87f6-38f12b8167d7",
		"7d48cbd2x6615-4dd8-87f6-38f12b8167d6",
		"7d48cbd2-6615-4dd8-87f6-38f12b8167dg",
		"u1", "", "toolu_0116Hyi5v8ut7Ffb7d8qV1Sc",
	}
	var m UUIDMap[int]
	for i, s := range ids {
		*m.at(s) = i + 1
	}
	for i, s := range ids {
		if v := m.find(s); v == nil || *v != i+1 {
			t.Errorf("%q: got %v, want %d", s, v, i+1)
		}
	}
	for i, s := range ids {
		// as a line spells it, escaped too: the same value
		for _, q := range []string{string(AppendString(nil, s)), strings.Replace(string(AppendString(nil, s)), "-", `\u002d`, 1)} {
			if v := m.AtJSON(NewDec([]byte(q)).Str()); *v != i+1 {
				t.Errorf("atJSON(%s): got %d, want %d", q, *v, i+1)
			}
		}
	}
	if m.find("00000000-0000-0000-0000-000000000000") != nil {
		t.Error("an absent uuid was found")
	}
	if k, ok := packUUID(ids[0]); !ok || k[0] != 0x7d || k[15] != 0xd6 {
		t.Errorf("packUUID(%q) = %x, %v", ids[0], k, ok)
	}
	for i, s := range ids {
		if i == 0 || i == 2 {
			continue // canonical
		}
		if _, ok := packUUID(s); ok {
			t.Errorf("packUUID(%q) packed a non-canonical id", s)
		}
	}
}

// The table of packed uuids grows and probes past collisions: every one
// of many uuids (random, and sequential ones, which share all but their
// last bytes) keeps its value, and absent ones are not found.
func TestUUIDMapGrows(t *testing.T) {
	var ids []string
	for i := range 50000 {
		ids = append(ids, fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(i*2654435761), i&0xffff, i&0xfff, (i>>3)&0xfff, i*7919),
			fmt.Sprintf("00000000-0000-0000-0000-%012x", i))
	}
	var m UUIDMap[int]
	for i, s := range ids {
		*m.at(s) = i + 1
		if i%3 == 0 && *m.find(ids[i/2]) != i/2+1 { // lookups while it grows
			t.Fatalf("%q lost while adding", ids[i/2])
		}
	}
	for i, s := range ids {
		if v := m.find(s); v == nil || *v != i+1 {
			t.Fatalf("%q: got %v, want %d", s, v, i+1)
		}
	}
	if n := int(m.T.n); n != len(ids) {
		t.Fatalf("%d values for %d uuids", n, len(ids))
	}
	if m.find("00000000-0000-0000-0001-000000000000") != nil {
		t.Error("an absent uuid was found")
	}
}

// ToolNames gives what a map of strings gives: the last name set for an
// id, "" for an id never set, for ids that fit a key, ids that end in a
// zero byte (which padding would confuse with shorter ones) and longer ids.
func TestToolNamesIsAMap(t *testing.T) {
	ids := []string{"", "a", "a\x00", "a\x00\x00", "\x00", "a\x00b",
		"toolu_01f3be48b370ec09e473a46fbd", "call_807458730668b0964da8afeb",
		strings.Repeat("x", 32), strings.Repeat("x", 33), strings.Repeat("x", 31) + "\x00"}
	names := []string{"Bash", "", "Read", "Bash", "shell"}
	want := map[string]string{}
	tn := NewToolNames()
	for round := range 3 {
		for i, id := range ids {
			if (i+round)%3 == 0 {
				continue // some ids unset until a later round
			}
			name := names[(i*7+round)%len(names)]
			tn.Set(id, name)
			want[id] = name
		}
		for _, id := range append(ids, "b", "a\x00\x00\x00", strings.Repeat("x", 34)) {
			if got := tn.Get(id); got != want[id] {
				t.Errorf("round %d: %q: got %q, want %q", round, id, got, want[id])
			}
		}
	}
	if len(tn.names) != 4 {
		t.Errorf("%d names kept, want the 4 distinct ones", len(tn.names))
	}
}

// A position's key and value are allocated once: the table grows by
// chunks, where a slice grown by append copied them at every growth (five
// times their size in all, and both arrays live during each copy).
// Between the key and value (24 bytes here) and the slots (4 bytes, at
// most half full, doubled as they grow) a uuid costs under 48 bytes.
func TestUUIDMapAllocatesAPositionOnce(t *testing.T) {
	ids := make([]string, 200000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(i*2654435761), i&0xffff, i&0xfff, (i>>3)&0xfff, i*7919)
	}
	var m UUIDMap[[8]byte]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, s := range ids {
		m.at(s)[0] = 1
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(ids)); per > 48 {
		t.Fatalf("%.1f bytes allocated per uuid, want at most 48", per)
	}
}

// A call id keeps its 32-byte key and its name's 4-byte position, and the
// slots that find it: a Go map of those keys kept 79 bytes an id.
func TestToolNamesBytesPerID(t *testing.T) {
	ids := make([]string, 266000) // a 1 GB Codex file's calls
	for i := range ids {
		ids[i] = fmt.Sprintf("call_%024x", uint64(i)*0x9e3779b97f4a7c15)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tn := NewToolNames()
	for i, id := range ids {
		tn.Set(id, []string{"Bash", "Read", "Grep"}[i%3])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(len(ids))
	if tn.Get(ids[7]) != "Read" {
		t.Fatal("lost an id")
	}
	if per > 56 {
		t.Fatalf("%.1f bytes kept per call id, want at most 56", per)
	}
	t.Logf("%.1f bytes per call id", per)
}

// ToolNames is a map past its recent calls too: with thousands of ids,
// some set again with another name, looked up among the last calls (the
// log's tail), far back (which builds the table) and after the table is
// built, every lookup gives the name set last.
func TestToolNamesIsAMapPastTheRecentCalls(t *testing.T) {
	names := []string{"Bash", "Read", "Grep", "shell", ""}
	want := map[string]string{}
	tn := NewToolNames()
	id := func(i int) string { return fmt.Sprintf("call_%d", i%3000) } // ids come back after 3000
	check := func(step int, id string) {
		if got := tn.Get(id); got != want[id] {
			t.Fatalf("step %d: %q: got %q, want %q", step, id, got, want[id])
		}
	}
	for i := range 10000 {
		k, name := id(i*7), names[i%len(names)]
		tn.Set(k, name)
		want[k] = name
		check(i, k)           // the call just made
		check(i, id((i-5)*7)) // one of the last few
		if i < 64 || i > 6000 {
			check(i, "call_never") // none (past the log's tail: builds the table)
		}
		if i == 6000 {
			if tn.built {
				t.Fatal("the table was built while every lookup was among the last calls")
			}
			check(i, id(11)) // far back: builds the table
			if !tn.built {
				t.Fatal("a lookup far back did not build the table")
			}
		}
	}
	for k := range want {
		check(-1, k)
	}
}
