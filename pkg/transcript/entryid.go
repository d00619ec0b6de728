package transcript

import (
	"hash/maphash"
	"strconv"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// idForm is how an entry keeps an id: as a number when the id has one of
// the shapes below (the text is rebuilt from it byte for byte), else as
// text in longIDs.
type idForm uint8

const (
	idNone idForm = iota // "": no id, a root's parentId
	idHex                // pi's: 8 lowercase hex digits
	idRow                // a translated transcript's "L<row>"
	idV1                 // a v1 entry's synthetic "v1:L<line>"
	idText               // any other: the text in longIDs
	// idUUID is Claude Code's: a canonical lower-case UUID, kept in
	// longIDs as its 16 bytes (a 16-byte string where its text took 48).
	idUUID
)

// idForms are the forms of an entry's id (low 4 bits) and parentId (high
// 4 bits): one byte, beside Entry's flags.
type idForms uint8

func (f idForms) id() idForm     { return idForm(f & 15) }
func (f idForms) parent() idForm { return idForm(f >> 4) }

// longIDs are an entry's id and parentId when they have no numeric form:
// their text, or for idUUID their 16 bytes.
type longIDs struct{ id, parent string }

// packID is the form of id, its number (0 for idNone, idText and idUUID)
// and what longIDs keeps of it (id for idText, its 16 bytes for idUUID, ""
// for the others).
func packID(id string) (idForm, uint32, string) {
	if f, v := packNumber(id); f != idText {
		return f, v, ""
	}
	if k, ok := formats.PackUUID(id); ok {
		return idUUID, 0, string(k[:])
	}
	return idText, 0, id
}

// packNumber is the form of id and its number, idText for an id with no
// numeric form.
func packNumber(id string) (idForm, uint32) {
	if len(id) == 8 {
		// Not a case of the switch below: an 8-byte id that is not hex
		// may still be "L<row>" (a translation's rows from a million on)
		// or "v1:L<line>" (lines from 1000 on).
		if v, ok := hex8(id); ok {
			return idHex, v
		}
	}
	switch {
	case id == "":
		return idNone, 0
	case len(id) > 1 && id[0] == 'L':
		if v, ok := decimal(id[1:]); ok {
			return idRow, v
		}
	case len(id) > 4 && id[:4] == "v1:L":
		if v, ok := decimal(id[4:]); ok {
			return idV1, v
		}
	}
	return idText, 0
}

// hex8 reads 8 lowercase hex digits.
func hex8(s string) (uint32, bool) {
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// decimal reads a number below 2^32 written as strconv writes it (no sign,
// no leading zero), so that writing it back gives s.
func decimal(s string) (uint32, bool) {
	if s == "" || len(s) > 10 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 1<<32-1 {
		return 0, false
	}
	return uint32(v), true
}

// text is the id of form f with number v, or text for idText.
func (f idForm) text(v uint32, text string) string {
	switch f {
	case idHex:
		const digits = "0123456789abcdef"
		var b [8]byte
		for i := 7; i >= 0; i-- {
			b[i] = digits[v&15]
			v >>= 4
		}
		return string(b[:])
	case idRow:
		return "L" + strconv.FormatUint(uint64(v), 10)
	case idV1:
		return "v1:L" + strconv.FormatUint(uint64(v), 10)
	case idText:
		return text
	case idUUID:
		return formats.UUIDText([16]byte([]byte(text)))
	}
	return ""
}

var noLong longIDs

func (e *Entry) longOrNone() *longIDs {
	if e.long == nil {
		return &noLong
	}
	return e.long
}

// ID is the entry's id; for v1 files a synthetic one ("v1:L<line>").
func (e *Entry) ID() string { return e.forms.id().text(e.id, e.longOrNone().id) }

// ParentID is the entry's parentId, "" for a root.
func (e *Entry) ParentID() string { return e.forms.parent().text(e.parent, e.longOrNone().parent) }

// setID sets the entry's id.
func (e *Entry) setID(id string) { e.setPackedID(packID(id)) }

// setPackedID sets the entry's id to the one packID gives as f, v, long.
func (e *Entry) setPackedID(f idForm, v uint32, long string) {
	e.forms, e.id = e.forms&^15|idForms(f), v
	if long != "" {
		e.moreLong().id = long
	} else if e.long != nil {
		e.long.id = ""
	}
}

// setParentID sets the entry's parentId.
func (e *Entry) setParentID(id string) { e.setPackedParent(packID(id)) }

// setPackedParent sets the entry's parentId to the one packID gives as f,
// v, long.
func (e *Entry) setPackedParent(f idForm, v uint32, long string) {
	e.forms, e.parent = e.forms&15|idForms(f)<<4, v
	if long != "" {
		e.moreLong().parent = long
	} else if e.long != nil {
		e.long.parent = ""
	}
}

// shareParent makes e's kept parentId the string of known (the ids of
// the entry before) that equals it: a line's parent is most often the
// line before, and one copy of a UUID's bytes then serves both.
func (e *Entry) shareParent(known []string) {
	if e.long != nil && e.long.parent != "" {
		e.long.parent = knownOr(e.long.parent, known)
	}
}

func (e *Entry) moreLong() *longIDs {
	if e.long == nil {
		e.long = &longIDs{}
	}
	return e.long
}

// childOf reports whether e's parentId is p's id, without building either.
func (e *Entry) childOf(p *Entry) bool { return p.is(e.parentKey()) }

// packedID is an id in the form entries keep it, to compare and hash it
// against theirs without building their text.
type packedID struct {
	form idForm
	v    uint32
	text string // what longIDs keeps of it
}

func packed(id string) packedID {
	f, v, long := packID(id)
	return packedID{f, v, long}
}

// is reports whether e's id is k.
func (e *Entry) is(k packedID) bool {
	return e.forms.id() == k.form && e.id == k.v && (k.text == "" || e.long.id == k.text)
}

// key is e's id as a packedID.
func (e *Entry) key() packedID { return packedID{e.forms.id(), e.id, e.longOrNone().id} }

// parentKey is e's parentId as a packedID.
func (e *Entry) parentKey() packedID {
	return packedID{e.forms.parent(), e.parent, e.longOrNone().parent}
}

// hash is k's hash under seed: equal ids hash alike, their forms being
// unique.
func (k packedID) hash(seed maphash.Seed) uint64 {
	if k.text != "" {
		return maphash.String(seed, k.text)
	}
	return maphash.Comparable(seed, uint64(k.form)<<32|uint64(k.v))
}
