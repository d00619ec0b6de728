package conv

// UUIDMap maps uuid strings to values of type V. A canonical UUID (36
// characters, lower-case hex) is keyed by its 16 bytes in a posTable:
// nearly every line of a Claude Code file adds one, and keying them by
// their bytes rather than as strings in a Go map took a tenth of the
// file's reading. Any other string is kept in a map as it is, at a
// position of its own (zero key, in no slot).
type UUIDMap[V any] struct {
	T     posTable[uuidKey, V]
	other map[string]int32
	// last (lastKey when LastPacked) is the key at last gave, at
	// position LastAt: a line's parent is most often the line before it,
	// found without hashing.
	last       string
	lastKey    uuidKey
	LastPacked bool
	LastAt     int32
}

// find returns the value of s, nil when it has none.
func (m *UUIDMap[V]) find(s string) *V { return lookup(m, s) }

// FindJSON is find for a JSON string as it appears in a line, without
// making a string of it.
func (m *UUIDMap[V]) FindJSON(s Str) *V {
	if s.Esc || !s.Canon {
		return lookup(m, s.String())
	}
	return lookup(m, s.Raw())
}

func lookup[V any, S string | []byte](m *UUIDMap[V], s S) *V {
	var i int32
	if k, canon := packUUID(s); canon {
		if m.T.n > 0 && m.LastPacked && k == m.lastKey {
			return m.T.Val(m.LastAt)
		}
		if i = m.recent(&k); i < 0 {
			i = m.T.find(&k)
		}
	} else {
		if m.T.n > 0 && !m.LastPacked && string(s) == m.last {
			return m.T.Val(m.LastAt)
		}
		var ok bool
		if i, ok = m.other[string(s)]; !ok {
			i = -1
		}
	}
	if i < 0 {
		return nil
	}
	return m.T.Val(i)
}

// at returns the value of s, adding a zero one when it has none. The
// pointer is valid until the next call of at.
func (m *UUIDMap[V]) at(s string) *V {
	if k, canon := packUUID(s); canon {
		return m.atPacked(k)
	}
	i, ok := m.other[s]
	if !ok {
		if m.other == nil {
			m.other = map[string]int32{}
		}
		i = m.T.add()
		m.other[s] = i
	}
	m.last, m.LastPacked, m.LastAt = s, false, i
	return m.T.Val(i)
}

// AtJSON is at for a JSON string as it appears in a line: a canonical
// UUID is added without making a string of it.
func (m *UUIDMap[V]) AtJSON(s Str) *V {
	if !s.Esc && s.Canon {
		if k, canon := packUUID(s.Raw()); canon {
			return m.atPacked(k)
		}
	}
	return m.at(s.String())
}

// atPacked is at for the packed canonical UUID k.
func (m *UUIDMap[V]) atPacked(k uuidKey) *V {
	i := m.recent(&k)
	if i < 0 {
		i = m.T.put(&k)
	}
	m.lastKey, m.LastPacked, m.LastAt = k, true, i
	return m.T.Val(i)
}

// recent is the position of k among the last keys added, -1 when it is
// not one of them: a line's parent is most often a line a few lines back
// (a tool result's is its call's block), found in keys still in the cache
// rather than by a probe of the table, which misses it. The zero key is
// never looked for here: other strings' keys are zero too.
func (m *UUIDMap[V]) recent(k *uuidKey) int32 {
	if *k == (uuidKey{}) {
		return -1
	}
	for p := m.T.n - 1; p >= 0 && p >= m.T.n-8; p-- {
		if *m.T.Key(p) == *k {
			return p
		}
	}
	return -1
}

// packUUID reads a canonical lower-case UUID
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) as its 16 bytes; false for any
// other string (upper case too: the map must tell apart what the strings
// tell apart).
func packUUID[S string | []byte](s S) (k uuidKey, ok bool) {
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

// PackUUID is s as the 16 bytes of a canonical lower-case UUID, false for
// any other string: UUIDText(k) is s again, byte for byte.
func PackUUID(s string) ([16]byte, bool) { return packUUID(s) }

// UUIDText is the canonical lower-case text of the UUID k.
func UUIDText(k [16]byte) string {
	var b [36]byte
	return string(appendUUID(b[:0], k))
}

// appendUUID appends the canonical lower-case text of the UUID k to b.
func appendUUID(b []byte, k [16]byte) []byte {
	const digits = "0123456789abcdef"
	for i, c := range k {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[c>>4], digits[c&15])
	}
	return b
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

// ToolNames maps tool call ids to tool names, for the results, which name
// their call by id only. A converter keeps every call's for the whole file
// (a result may come any time later): here an id of up to 32 bytes
// (Claude Code's toolu_ ids and Codex's call_ ids) is its key's bytes
// rather than a string of its own, and a name is its position among the
// file's few distinct names rather than each call's copy.
//
// The keys are logged in order, and put in a table only when a lookup
// needs one: a result almost always names one of the last few calls,
// found in the log's tail, and a table of every call of a 1 GB file (a
// probe missing the cache at each call, and its growth) was a twentieth
// of a Codex file's reading.
type ToolNames struct {
	// log holds the short ids set, in order, in chunks (none copied as it
	// grows), until built: then short holds them and log is dropped.
	log   [][]callName
	built bool
	short posTable[callKey, uint32]
	long  map[string]uint32 // ids that do not fit a key
	names []string
	index map[string]uint32 // names' positions
}

// callName is a logged call: its id's key and its name's position.
type callName struct {
	k    callKey
	name uint32
}

// callChunk is how many calls a chunk of the log holds; recentCalls how
// many of the last ones a lookup reads before it builds the table.
const (
	callChunk   = 1 << 12
	recentCalls = 64
)

func NewToolNames() ToolNames {
	return ToolNames{long: map[string]uint32{}, index: map[string]uint32{}}
}

// shortKey is id's key, false when id has none: an id is its bytes padded
// with zeros, which tells ids apart only when they do not end in a zero.
func shortKey(id string) (k callKey, ok bool) {
	if len(id) > len(k) || (id != "" && id[len(id)-1] == 0) {
		return k, false
	}
	copy(k[:], id)
	return k, true
}

// Set names id's tool.
func (t *ToolNames) Set(id, name string) {
	i, ok := t.index[name]
	if !ok {
		i = uint32(len(t.names))
		t.names = append(t.names, name)
		t.index[name] = i
	}
	k, ok := shortKey(id)
	switch {
	case !ok:
		t.long[id] = i
	case t.built:
		*t.short.Val(t.short.put(&k)) = i
	default:
		if n := len(t.log); n == 0 || len(t.log[n-1]) == callChunk {
			t.log = append(t.log, make([]callName, 0, callChunk))
		}
		last := &t.log[len(t.log)-1]
		*last = append(*last, callName{k, i})
	}
}

// Get is id's tool name, "" when no call had id.
func (t *ToolNames) Get(id string) string {
	var i uint32
	if k, short := shortKey(id); short {
		if !t.built {
			n, found := t.recent(&k)
			if found {
				return t.names[n]
			}
			if !t.build() {
				return "" // the log was read whole
			}
		}
		p := t.short.find(&k)
		if p < 0 {
			return ""
		}
		i = *t.short.Val(p)
	} else {
		var ok bool
		if i, ok = t.long[id]; !ok {
			return ""
		}
	}
	return t.names[i]
}

// recent looks k up among the last recentCalls calls logged, the latest
// first (the name set last is the one that counts).
func (t *ToolNames) recent(k *callKey) (name uint32, found bool) {
	left := recentCalls
	for c := len(t.log) - 1; c >= 0 && left > 0; c-- {
		chunk := t.log[c]
		for j := len(chunk) - 1; j >= 0 && left > 0; j-- {
			if chunk[j].k == *k {
				return chunk[j].name, true
			}
			left--
		}
	}
	return 0, false
}

// build puts the logged calls in the table, in order, unless the log holds
// no more than recent read; it reports whether it did.
func (t *ToolNames) build() bool {
	n := 0
	for _, c := range t.log {
		n += len(c)
	}
	if n <= recentCalls {
		return false
	}
	for _, c := range t.log {
		for j := range c {
			*t.short.Val(t.short.put(&c[j].k)) = c[j].name
		}
	}
	t.log, t.built = nil, true
	return true
}
