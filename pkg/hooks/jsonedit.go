package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A small textual JSON editor: install and uninstall change the agents'
// config files (settings.json, ~/.claude.json, hooks.json) by inserting or
// removing exactly the text of ctxtool's entries, so every other byte of
// the user's file — key order, spacing, other hooks — stays as it was, and
// an uninstall after an install gives back the same bytes.

// span is a value's extent in a document: data[start:end].
type span struct{ start, end int }

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at i.
func valueEnd(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, fmt.Errorf("unexpected end of JSON")
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at byte %d", i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				e, err := valueEnd(data, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unterminated object or array at byte %d", i)
	}
	j := i
	for j < len(data) && !strings.ContainsRune(",}] \t\r\n", rune(data[j])) {
		j++
	}
	return j, nil
}

// member is one key of an object: the key's start, the value's span.
type member struct {
	key      string
	keyStart int
	val      span
}

// members lists an object's members (obj spans the braces).
func members(data []byte, obj span) ([]member, error) {
	var out []member
	i := skipWS(data, obj.start+1)
	for i < obj.end-1 {
		if data[i] != '"' {
			return nil, fmt.Errorf("expected a key at byte %d", i)
		}
		ke, err := valueEnd(data, i)
		if err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal(data[i:ke], &key); err != nil {
			return nil, err
		}
		j := skipWS(data, ke)
		if j >= len(data) || data[j] != ':' {
			return nil, fmt.Errorf("expected ':' at byte %d", j)
		}
		vs := skipWS(data, j+1)
		ve, err := valueEnd(data, vs)
		if err != nil {
			return nil, err
		}
		out = append(out, member{key, i, span{vs, ve}})
		i = skipWS(data, ve)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	return out, nil
}

// elements lists an array's elements.
func elements(data []byte, arr span) ([]span, error) {
	var out []span
	i := skipWS(data, arr.start+1)
	for i < arr.end-1 {
		e, err := valueEnd(data, i)
		if err != nil {
			return nil, err
		}
		out = append(out, span{i, e})
		i = skipWS(data, e)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
		}
	}
	return out, nil
}

func find(ms []member, key string) *member {
	for i := range ms {
		if ms[i].key == key {
			return &ms[i]
		}
	}
	return nil
}

// indentUnit guesses the file's indentation (default two spaces).
func indentUnit(data []byte) string {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return "  "
	}
	j := i + 1
	for j < len(data) && (data[j] == ' ' || data[j] == '\t') {
		j++
	}
	if j > i+1 {
		return string(data[i+1 : j])
	}
	return "  "
}

// lineIndent is the whitespace that starts the line of byte i.
func lineIndent(data []byte, i int) string {
	s := bytes.LastIndexByte(data[:i], '\n') + 1
	e := s
	for e < len(data) && (data[e] == ' ' || data[e] == '\t') {
		e++
	}
	return string(data[s:e])
}

func render(v any, indent, unit string) string {
	out, _ := json.MarshalIndent(v, indent, unit)
	return string(out)
}

// insertAt inserts text at i.
func insertAt(data []byte, i int, text string) []byte {
	out := make([]byte, 0, len(data)+len(text))
	out = append(out, data[:i]...)
	out = append(out, text...)
	return append(out, data[i:]...)
}

// addMember appends "key": value to the object at obj.
func addMember(data []byte, obj span, key string, value any) ([]byte, error) {
	ms, err := members(data, obj)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(data)
	inner := lineIndent(data, obj.start) + unit
	if len(ms) > 0 {
		inner = lineIndent(data, ms[0].keyStart)
	}
	k, _ := json.Marshal(key)
	text := "\n" + inner + string(k) + ": " + render(value, inner, unit)
	if len(ms) == 0 {
		return insertAt(data, obj.start+1, text), nil
	}
	return insertAt(data, ms[len(ms)-1].val.end, ","+text), nil
}

// addElement appends value to the array at arr.
func addElement(data []byte, arr span, value any) ([]byte, error) {
	es, err := elements(data, arr)
	if err != nil {
		return nil, err
	}
	unit := indentUnit(data)
	inner := lineIndent(data, arr.start) + unit
	if len(es) > 0 {
		inner = lineIndent(data, es[0].start)
	}
	text := "\n" + inner + render(value, inner, unit)
	if len(es) == 0 {
		return insertAt(data, arr.start+1, text), nil
	}
	return insertAt(data, es[len(es)-1].end, ","+text), nil
}

// cut removes item k of items (member value spans or element spans, with
// their starts) from its container: from the end of the previous item
// (its comma) to the end of this one, or for the first item from after
// the opening bracket to the next item's start... the inverse of add*.
func cut(data []byte, container span, starts []int, ends []int, k int) []byte {
	var from, to int
	switch {
	case k > 0:
		from, to = ends[k-1], ends[k]
	case len(starts) > 1:
		from, to = starts[0], starts[1]
	default:
		from, to = container.start+1, ends[0]
	}
	out := append([]byte(nil), data[:from]...)
	return append(out, data[to:]...)
}

func removeMember(data []byte, obj span, ms []member, k int) []byte {
	var starts, ends []int
	for _, m := range ms {
		starts, ends = append(starts, m.keyStart), append(ends, m.val.end)
	}
	return cut(data, obj, starts, ends, k)
}

func removeElement(data []byte, arr span, es []span, k int) []byte {
	var starts, ends []int
	for _, e := range es {
		starts, ends = append(starts, e.start), append(ends, e.end)
	}
	return cut(data, arr, starts, ends, k)
}

// root is the span of the document's top-level object.
func root(data []byte) (span, error) {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return span{}, fmt.Errorf("not a JSON object")
	}
	e, err := valueEnd(data, i)
	if err != nil {
		return span{}, err
	}
	if !json.Valid(data) {
		return span{}, fmt.Errorf("not valid JSON")
	}
	return span{i, e}, nil
}

// topMembers is the document's top-level object and its members.
func topMembers(data []byte) (span, []member, error) {
	r, err := root(data)
	if err != nil {
		return span{}, nil, err
	}
	ms, err := members(data, r)
	return r, ms, err
}
