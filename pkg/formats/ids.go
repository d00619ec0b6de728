package formats

// uuidMap maps uuid strings to values of type V. A canonical UUID (36
// characters, lower-case hex) is keyed by its 16 bytes, so that the map
// holds no pointers (the collector never scans it) and hashes one fixed
// block; any other string is kept as it is. Values live in a slice, so one
// lookup gives a value to change in place.
type uuidMap[V any] struct {
	packed map[[16]byte]int32
	other  map[string]int32
	vals   []V
	// last (lastKey when lastPacked) is the key at last gave, at
	// vals[lastAt]: a line's parent is most often the line before it,
	// found without hashing.
	last       string
	lastKey    [16]byte
	lastPacked bool
	lastAt     int32
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
		if len(m.vals) > 0 && m.lastPacked && k == m.lastKey {
			return &m.vals[m.lastAt]
		}
		i, ok = m.packed[k]
	} else {
		if len(m.vals) > 0 && !m.lastPacked && string(s) == m.last {
			return &m.vals[m.lastAt]
		}
		i, ok = m.other[string(s)]
	}
	if !ok {
		return nil
	}
	return &m.vals[i]
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
	return &m.vals[i]
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
	i, ok := m.packed[k]
	if !ok {
		if m.packed == nil {
			m.packed = map[[16]byte]int32{}
		}
		i = m.add()
		m.packed[k] = i
	}
	m.lastKey, m.lastPacked, m.lastAt = k, true, i
	return &m.vals[i]
}

// add appends a zero value and returns its index.
func (m *uuidMap[V]) add() int32 {
	var zero V
	m.vals = append(m.vals, zero)
	return int32(len(m.vals) - 1)
}

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
