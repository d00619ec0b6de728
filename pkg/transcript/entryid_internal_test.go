package transcript

import (
	"testing"
	"unsafe"
)

// Ids of the shapes that have a numeric form get it, whatever their
// length: an 8-byte id that is not hex ("L1234567", a Codex file's row
// from a million on, or "v1:L1234") was kept as text, a longIDs and the
// text on each of the 1 GB Codex file's 393k entries past that row.
func TestIDForms(t *testing.T) {
	for id, want := range map[string]idForm{
		"": idNone, "0b9a9877": idHex, "L7": idRow, "L1234567": idRow, "L4294967295": idRow,
		"v1:L7": idV1, "v1:L1234": idV1, "L123456g": idText, "v1:L123g": idText, "L8.2": idText,
		"7d48cbd2-6615-4dd8-87f6-38f12b8167d6": idUUID, "00000000-0000-0000-0000-000000000000": idUUID,
		"7D48CBD2-6615-4dd8-87f6-38f12b8167d6": idText, "7d48cbd2-6615-4dd8-87f6-38f12b8167d": idText,
		"7d48cbd2x6615-4dd8-87f6-38f12b8167d6": idText, "7d48cbd2-6615-4dd8-87f6-38f12b8167dg": idText,
		"{7d48cbd2-6615-4dd8-87f6-38f12b8167d}": idText, "7d48cbd2-6615-4dd8-87f6-38f12b8167d6#2": idText,
	} {
		if f, _, _ := packID(id); f != want {
			t.Errorf("%q: form %d, want %d", id, f, want)
		}
		// Every form reads back as the text it was made from, as id and
		// as parentId, and an entry is its own id's key.
		var e, c Entry
		e.setID(id)
		c.setParentID(id)
		if e.ID() != id || c.ParentID() != id || !e.is(packed(id)) || !c.childOf(&e) {
			t.Errorf("%q: id %q, parentId %q", id, e.ID(), c.ParentID())
		}
	}
}

// TestUUIDShared: a parentId equal to the previous entry's UUID keeps
// that entry's copy of its bytes.
func TestUUIDShared(t *testing.T) {
	const id = "7d48cbd2-6615-4dd8-87f6-38f12b8167d6"
	var p, c Entry
	p.setID(id)
	c.setParentID(id)
	c.shareParent([]string{p.long.id})
	if unsafe.StringData(c.long.parent) != unsafe.StringData(p.long.id) || c.ParentID() != id {
		t.Errorf("parentId not shared: %q", c.ParentID())
	}
}
