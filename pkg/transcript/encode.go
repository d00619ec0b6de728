package transcript

import "github.com/ctxtool/ctxtool/pkg/internal/jsout"

// MarshalJS encodes v the way JavaScript's JSON.stringify would for the same
// data: compact, no HTML escaping, U+2028/U+2029 written raw, invalid UTF-8
// as Node reads it (jsout, the one writer of entries and converted lines).
// Field order is the struct's declaration order, so entry structs declare
// fields in the order pi writes them.
func MarshalJS(v any) ([]byte, error) { return jsout.Marshal(v) }
