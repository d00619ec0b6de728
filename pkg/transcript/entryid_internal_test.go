package transcript

import "testing"

// Ids of the shapes that have a numeric form get it, whatever their
// length: an 8-byte id that is not hex ("L1234567", a Codex file's row
// from a million on, or "v1:L1234") was kept as text, a longIDs and the
// text on each of the 1 GB Codex file's 393k entries past that row.
func TestIDForms(t *testing.T) {
	for id, want := range map[string]idForm{
		"": idNone, "0b9a9877": idHex, "L7": idRow, "L1234567": idRow, "L4294967295": idRow,
		"v1:L7": idV1, "v1:L1234": idV1, "L123456g": idText, "v1:L123g": idText, "L8.2": idText,
		"7d48cbd2-6615-4dd8-87f6-38f12b8167d6": idText,
	} {
		if f, _ := packID(id); f != want {
			t.Errorf("%q: form %d, want %d", id, f, want)
		}
	}
}
