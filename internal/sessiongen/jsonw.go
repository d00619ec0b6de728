package sessiongen

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// KV is one member of an ordered JSON object.
type KV struct {
	K string
	V any
}

// Obj is a JSON object whose members are written in slice order. pi writes
// objects with JavaScript's insertion order, so every object this package
// writes is an Obj (or a struct-like entry written field by field), never a
// Go map: map iteration order would break byte-for-byte reproducibility.
//
// Avoid integer-like keys ("2"): JavaScript moves them to the front of an
// object, so a line holding one would not survive JSON.stringify(JSON.parse()).
type Obj []KV

// RawJSON is written verbatim. It must already be canonical JSON.stringify
// output (compact, JavaScript escaping) or the line will not round-trip.
type RawJSON string

// appendFloat formats f like JavaScript's Number.prototype.toString
// (transcript.FormatJSNumber: shortest round-trip digits, exponent form below
// 1e-6 and from 1e21 on), with JSON.stringify's null for NaN and ±Infinity.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...) // what JSON.stringify writes
	}
	return append(b, transcript.FormatJSNumber(f)...)
}

// appendValue writes one JSON value. Supported: nil, string, bool, all Go
// integer kinds, float32/64, Obj, RawJSON, []any, []string, []int, []Obj,
// map[string]any (keys sorted the way JavaScript would order them when
// inserted alphabetically: integer-like keys first). Anything else is an error.
func appendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		b = append(b, "null"...)
	case string:
		b = formats.AppendString(b, x)
	case bool:
		b = strconv.AppendBool(b, x)
	case int, int64, int32:
		b = strconv.AppendInt(b, reflect.ValueOf(x).Int(), 10)
	case uint, uint64, uint32:
		b = strconv.AppendUint(b, reflect.ValueOf(x).Uint(), 10)
	case float64:
		b = appendFloat(b, x)
	case float32:
		b = appendFloat(b, float64(x))
	case RawJSON:
		b = append(b, x...)
	case Obj:
		b = append(b, '{')
		for i, kv := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = formats.AppendString(b, kv.K)
			b = append(b, ':')
			if b, err = appendValue(b, kv.V); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	case []any:
		return appendArray(b, x)
	case []string:
		return appendArray(b, x)
	case []int:
		return appendArray(b, x)
	case []Obj:
		return appendArray(b, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sortJSKeys(keys)
		o := make(Obj, len(keys))
		for i, k := range keys {
			o[i] = KV{k, x[k]}
		}
		return appendValue(b, o)
	default:
		return b, fmt.Errorf("sessiongen: cannot encode %T as JSON (use Obj, []any, string, number, bool, nil or RawJSON)", v)
	}
	return b, nil
}

func appendArray[T any](b []byte, xs []T) ([]byte, error) {
	b = append(b, '[')
	for i, e := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// sortJSKeys orders keys alphabetically except that array-index-like keys
// come first in ascending numeric order, as JavaScript objects enumerate them.
func sortJSKeys(keys []string) {
	idx := func(k string) (uint64, bool) {
		if k == "" || (len(k) > 1 && k[0] == '0') {
			return 0, false
		}
		n, err := strconv.ParseUint(k, 10, 32)
		return n, err == nil && n < math.MaxUint32
	}
	sort.Slice(keys, func(i, j int) bool {
		a, aok := idx(keys[i])
		c, cok := idx(keys[j])
		switch {
		case aok && cok:
			return a < c
		case aok != cok:
			return aok
		}
		return keys[i] < keys[j]
	})
}

// Marshal encodes v the way JSON.stringify would (see appendValue for the
// supported types). Useful for tests that build tool arguments or details.
//
// transcript.MarshalJS (encoding/json plus a U+2028/U+2029 fix-up) is not a
// substitute: it writes what JSON.parse reads back the same, but not always
// JSON.stringify's bytes — invalid UTF-8 becomes the escape \ufffd (node
// writes the raw character), -0 stays "-0" (node writes "0") and map keys
// sort as strings ("10" before "2"; JavaScript enumerates index keys first)
// — and it cannot keep an Obj's member order. Generated lines must survive
// JSON.stringify(JSON.parse(line)) byte for byte, so this encoder stays.
func Marshal(v any) ([]byte, error) {
	return appendValue(nil, v)
}
