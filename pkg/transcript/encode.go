package transcript

import (
	"bytes"
	"encoding/json"
)

// MarshalJS encodes v the way JavaScript's JSON.stringify would for the same
// data: compact, no HTML escaping, and U+2028/U+2029 written raw. Field order
// is the struct's declaration order, so entry structs declare fields in the
// order pi writes them.
func MarshalJS(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	return unescapeLineSeparators(out), nil
}

// unescapeLineSeparators rewrites the \u2028 and \u2029 escapes Go always
// emits into the raw characters JSON.stringify writes. It tracks string and
// escape state so an escaped backslash followed by "u2028" is left alone.
func unescapeLineSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inStr {
			if c == '"' {
				inStr = true
			}
			out = append(out, c)
			continue
		}
		switch c {
		case '"':
			inStr = false
			out = append(out, c)
		case '\\':
			if i+5 < len(b) && b[i+1] == 'u' && b[i+2] == '2' && b[i+3] == '0' && b[i+4] == '2' && (b[i+5] == '8' || b[i+5] == '9') {
				if b[i+5] == '8' {
					out = append(out, "\u2028"...)
				} else {
					out = append(out, "\u2029"...)
				}
				i += 5
				continue
			}
			out = append(out, c, b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}
