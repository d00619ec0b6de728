package jsout

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Marshal encodes v as JSON.stringify would write the same data (see the
// package comment): encoding/json's mapping of Go values (struct tags,
// omitempty, sorted map keys, MarshalJSON and MarshalText methods, nil
// slices and maps as null), with every string written by AppendString.
// Values that implement json.Marshaler (json.RawMessage among them) are
// written compact, their strings re-encoded by AppendString too.
func Marshal(v any) ([]byte, error) {
	return appendAny(make([]byte, 0, 256), v)
}

// appendAny writes the values json.Unmarshal makes into an any without
// reflection (a message copied from a line is one), the rest through
// appendValue.
func appendAny(b []byte, x any) ([]byte, error) {
	var err error
	switch x := x.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x, 64)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendAny(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(AppendString(b, k), ':')
			if b, err = appendAny(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), nil
		}
		return AppendCompact(b, x)
	}
	return appendValue(b, reflect.ValueOf(x))
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func appendValue(b []byte, v reflect.Value) ([]byte, error) {
	if !v.IsValid() {
		return append(b, "null"...), nil
	}
	t := v.Type()
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) && v.CanAddr() {
		return appendMarshaler(b, v)
	}
	if t.Kind() != reflect.String && (t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) && v.CanAddr()) {
		return appendMarshaler(b, v)
	}
	switch t.Kind() {
	case reflect.Interface:
		return appendAny(b, v.Interface()) // the value inside: not boxed again
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		return appendValue(b, v.Elem())
	case reflect.String:
		if t.Implements(marshalerType) || t.Implements(textMarshalerType) {
			return appendMarshaler(b, v)
		}
		return AppendString(b, v.String()), nil
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return appendFloat(b, v.Float(), t.Bits())
	case reflect.Struct:
		return appendStruct(b, v)
	case reflect.Map:
		return appendMap(b, v)
	case reflect.Slice:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return appendMarshaler(b, v) // base64, as encoding/json writes it
		}
		fallthrough
	case reflect.Array:
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return nil, fmt.Errorf("jsout: cannot encode a %s", t)
}

// appendMarshaler writes what encoding/json writes for v (its MarshalJSON
// or MarshalText, a []byte as base64), compact, strings re-encoded.
func appendMarshaler(b []byte, v reflect.Value) ([]byte, error) {
	x := v.Interface()
	if raw, ok := x.(json.RawMessage); ok {
		return AppendCompact(b, raw)
	}
	if v.CanAddr() {
		x = v.Addr().Interface() // methods on the pointer, as encoding/json calls them
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // json.Marshal would escape '<', '>' and '&'
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return AppendCompact(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
}

// appendFloat is encoding/json's float encoding (which matches
// JavaScript's Number#toString for the numbers a line holds).
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("jsout: unsupported value %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// field is a struct field as encoding/json names it.
type field struct {
	name      string
	index     []int
	omitEmpty bool
	quoted    bool // the ",string" option
}

var fieldCache sync.Map // reflect.Type → []field

// fields lists t's encoded fields in order, with encoding/json's rules
// for tags and embedded structs (a name at a shallower depth, or tagged,
// wins; an ambiguous name is dropped).
func fields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	type cand struct {
		field
		depth  int
		tagged bool
	}
	var all []cand
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clip(index), i)
			ft := sf.Type
			if sf.Anonymous {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if !sf.IsExported() && ft.Kind() != reflect.Struct {
					continue
				}
				if name == "" && ft.Kind() == reflect.Struct {
					walk(ft, idx, depth+1)
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			tagged := name != ""
			if name == "" {
				name = sf.Name
			}
			all = append(all, cand{field{name: name, index: idx,
				omitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
				quoted:    strings.Contains(","+opts+",", ",string,")}, depth, tagged})
		}
	}
	walk(t, nil, 0)
	var out []field
	for i, c := range all {
		keep := true
		for j, d := range all {
			if i == j || d.name != c.name {
				continue
			}
			if d.depth < c.depth || d.depth == c.depth && d.tagged && !c.tagged ||
				d.depth == c.depth && d.tagged == c.tagged {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c.field)
		}
	}
	// encoding/json orders fields by index sequence.
	slices.SortStableFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	fieldCache.Store(t, out)
	return out
}

func appendStruct(b []byte, v reflect.Value) ([]byte, error) {
	b = append(b, '{')
	first := true
	for _, f := range fields(v.Type()) {
		fv, ok := fieldByIndex(v, f.index)
		if !ok || f.omitEmpty && isEmpty(fv) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(AppendString(b, f.name), ':')
		var err error
		if f.quoted {
			b, err = appendQuoted(b, fv)
		} else {
			b, err = appendValue(b, fv)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// fieldByIndex is v.FieldByIndex, false through a nil embedded pointer
// (encoding/json skips such fields).
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// appendQuoted is a ",string" field: scalars inside a JSON string.
func appendQuoted(b []byte, v reflect.Value) ([]byte, error) {
	switch v.Kind() {
	case reflect.String:
		return AppendString(b, string(AppendString(nil, v.String()))), nil
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		inner, err := appendValue(nil, v)
		if err != nil {
			return nil, err
		}
		return append(append(append(b, '"'), inner...), '"'), nil
	}
	return appendValue(b, v)
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

func appendMap(b []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(b, "null"...), nil
	}
	kt := v.Type().Key()
	if kt.Kind() != reflect.String || kt.Implements(textMarshalerType) {
		// integer or text-marshalled keys: encoding/json's own rules
		return appendMarshaler(b, v)
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k.String()), ':')
		var err error
		if b, err = appendValue(b, v.MapIndex(k)); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendCompact appends the JSON value raw compact (insignificant
// whitespace dropped, as JSON.stringify(JSON.parse(raw)) would write it
// but for numbers, which are kept as written), each string re-encoded by
// AppendString. raw must be valid JSON (encoding/json's acceptance:
// invalid UTF-8 in strings is read as Node reads it).
func AppendCompact(b, raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("jsout: invalid JSON value")
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			j := i + 1
			for raw[j] != '"' {
				if raw[j] == '\\' {
					j++
				}
				j++
			}
			b = appendReencoded(b, raw[i:j+1])
			i = j + 1
		default:
			b = append(b, c)
			i++
		}
	}
	return b, nil
}

// appendReencoded writes the JSON string q (quotes included) of a raw
// value: as written (its escapes kept, as encoding/json keeps a raw
// message's) but for \u2028 and \u2029, which JSON.stringify writes raw;
// holding invalid UTF-8, decoded as Node reads it and written again.
func appendReencoded(b, q []byte) []byte {
	if !utf8.Valid(q) {
		var s string
		_ = json.Unmarshal(AppendValid(nil, q), &s)
		return AppendString(b, s)
	}
	if !bytes.Contains(q, []byte(`\u202`)) {
		return append(b, q...)
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		if i+5 < len(q) && q[i+1] == 'u' && q[i+2] == '2' && q[i+3] == '0' && q[i+4] == '2' && (q[i+5] == '8' || q[i+5] == '9') {
			if q[i+5] == '8' {
				b = append(b, "\u2028"...)
			} else {
				b = append(b, "\u2029"...)
			}
			i += 5
			continue
		}
		b = append(b, c, q[i+1])
		i++
	}
	return b
}
