// Package convtest holds the test data generators the format packages'
// tests share.
package convtest

import "math/rand/v2"

// Pieces of JSON strings that encoding/json decodes in a special way:
// escapes it rewrites, surrogates (paired, lone, reversed), invalid UTF-8,
// characters AppendString leaves alone.
var stringPieces = []string{`a`, ` `, `\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0061`, `\u00e9`, `\u00E9`,
	`\u001f`, `\u001F`, `\u0000`, `\u0008`, `\u000a`, `\u0022`, `\u005c`, `\u2028`, `\ud83d\ude00`, `\ud83d`,
	`\ude00`, `\ude00\ud83d`, `\ud83dx`, `\ud83d\u0061`, "\xff", "\xc3", "\xc3\xa9", "é", "漢", "😀", "\u2028",
	"\x7f", "\xed\xa0\x80", "\xef\xbf\xbd", `<&>`}

// RandomStringToken returns a JSON string token of up to six such pieces.
func RandomStringToken(r *rand.Rand) []byte {
	b := []byte{'"'}
	for n := r.IntN(6); n >= 0; n-- {
		b = append(b, stringPieces[r.IntN(len(stringPieces))]...)
	}
	return append(b, '"')
}
