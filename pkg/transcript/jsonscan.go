package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/ctxtool/ctxtool/pkg/internal/swar"
)

// scanner is a small validating JSON scanner over one line. It accepts
// exactly what JavaScript's JSON.parse accepts (so a line is malformed for us
// exactly when pi drops it) and measures strings in UTF-16 code units, the
// unit of pi's chars/4 heuristic, without allocating. The converters of
// pkg/formats have a pull decoder of their own (jdec), with encoding/json's
// nesting limit; its doc comment says why the two are kept apart.
//
// Measured (go test -bench 'Scanner|ParseLine' ./pkg/transcript; AMD EPYC, 2 cores shared with 7 other agents, load average 14-19,
// best of 3): validating pi lines with a 1 MB base64 image among them runs
// at 1.7-1.8 GB/s without allocating (BenchmarkScanner); parsing them into
// entries (parseLineIn) at 0.9-2.3 GB/s, 165 allocations for 123 lines
// (BenchmarkParseLine; the spread is the machine's load).
type scanner struct {
	b   []byte
	i   int
	err error
	// wide counts CJK/Hangul characters (U+3000–U+DFFF, by UTF-8 lead byte)
	// seen in strings, a cheap content-class signal for calibration.
	wide int
	// canon is the JSON.stringify length of the last string scanned.
	canon int
	// warns collects values read in a defined way (maybeInt).
	warns []string
	// p is the parse worker reading the line (nil outside Load): strings
	// it saw on earlier lines, which this one's may share.
	p *parser
}

func (s *scanner) fail(format string, args ...any) bool {
	if s.err == nil {
		s.err = fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
	}
	return false
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str scans a string starting at the opening quote. It returns the raw span
// between the quotes and the decoded length in UTF-16 code units, and leaves
// in s.canon the length (quotes included) JSON.stringify would write for it.
func (s *scanner) str() (start, end, u16 int, ok bool) {
	if s.peek() != '"' {
		return 0, 0, 0, s.fail("expected string")
	}
	s.i++
	start = s.i
	b := s.b
	i := s.i
	canon := 2
	for i < len(b) {
		// Fast path: eight plain ASCII bytes at a time (no quote, backslash,
		// control or non-ASCII byte) — base64 images and code are mostly this.
		for i+8 <= len(b) {
			x := swar.Load(b, i)
			m := swar.JSONEscape(x) | x&swar.High
			if m != 0 {
				// The lowest flagged byte is exact: step to it.
				k := bits.TrailingZeros64(m) >> 3
				i += k
				u16 += k
				canon += k
				break
			}
			i += 8
			u16 += 8
			canon += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			s.canon = canon
			return start, i, u16, true
		case c == '\\':
			if i+1 >= len(b) {
				s.i = i
				return 0, 0, 0, s.fail("unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
				canon += 2
			case '/':
				i += 2
				canon++ // JSON.stringify does not escape '/'
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					s.i = i
					return 0, 0, 0, s.fail("bad \\u escape")
				}
				r := hex4(b[i+2 : i+6])
				i += 6
				switch {
				case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
					canon += 2
				case r < 0x20:
					canon += 6
				case r >= 0xD800 && r < 0xDC00:
					// A high surrogate followed by a low one is a pair that
					// JSON.stringify writes raw; alone it stays escaped.
					if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' && isHex(b[i+2]) && isHex(b[i+3]) && isHex(b[i+4]) && isHex(b[i+5]) {
						if r2 := hex4(b[i+2 : i+6]); r2 >= 0xDC00 && r2 < 0xE000 {
							i += 6
							u16 += 2
							canon += 2
							continue
						}
					}
					canon += 6
				case r >= 0xDC00 && r < 0xE000:
					canon += 6
				default:
					canon++
				}
				u16++
				continue
			default:
				s.i = i
				return 0, 0, 0, s.fail("bad escape")
			}
			u16++
		case c < 0x20:
			s.i = i
			return 0, 0, 0, s.fail("control character in string")
		case c < 0x80:
			i++
			u16++
			canon++
		default:
			// UTF-8 lead bytes count one unit, four-byte sequences two
			// (a surrogate pair); continuation bytes count nothing.
			if c >= 0xF0 {
				u16 += 2
				canon += 2
			} else if c >= 0xC0 {
				u16++
				canon++
				if c >= 0xE3 && c <= 0xED {
					s.wide++
				}
			}
			i++
		}
	}
	s.i = i
	return 0, 0, 0, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number scans a JSON number (JSON.parse grammar: no leading zeros, no '+').
func (s *scanner) number() bool {
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return s.fail("bad number")
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		i = digits(b, i)
	} else {
		return s.fail("bad number")
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = digits(b, d); i == d {
			return s.fail("bad number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = digits(b, d); i == d {
			return s.fail("bad number")
		}
	}
	s.i = i
	return true
}

// digits returns the index after the run of decimal digits at b[i:].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return s.fail("invalid literal")
}

// skip validates and skips one value of any kind. It keeps its own stack
// instead of recursing: JSON.parse has no nesting limit a session line
// could reach, so neither does this (the depth argument is ignored).
func (s *scanner) skip(_ int) bool { return s.walk(nil) }

// walk is skip calling fn, when not nil, with each key, string, number and
// true/false of the value in order: tok is its raw bytes (a key or string
// still escaped, without its quotes; str tells them apart).
func (s *scanner) walk(fn func(tok []byte, str bool)) bool {
	var inline [64]byte
	stack := inline[:0] // '{' or '[' per open container
	for {
		// A value starts here.
		s.ws()
		st := s.i
		switch c := s.peek(); {
		case c == '"':
			a, b, _, ok := s.str()
			if !ok {
				return false
			}
			if fn != nil {
				fn(s.b[a:b], true)
			}
		case c == '{' || c == '[':
			if s.open() {
				break
			}
			stack = append(stack, c)
			if c == '{' && !s.member(fn) {
				return false
			}
			continue
		case c == '-' || (c >= '0' && c <= '9'):
			if !s.number() {
				return false
			}
			if fn != nil {
				fn(s.b[st:s.i], false)
			}
		case c == 't' || c == 'f':
			lit := "false"
			if c == 't' {
				lit = "true"
			}
			if !s.literal(lit) {
				return false
			}
			if fn != nil {
				fn(s.b[st:s.i], false)
			}
		case c == 'n':
			if !s.literal("null") {
				return false
			}
		case c == 0:
			return s.fail("unexpected end of input")
		default:
			return s.fail("unexpected character %q", c)
		}
		var ok bool
		if stack, ok = s.endValue(stack); !ok || len(stack) == 0 {
			return ok
		}
		if stack[len(stack)-1] == '{' {
			s.ws()
			if !s.member(fn) {
				return false
			}
		}
	}
}

// open consumes the '{' or '[' at the scanner and reports whether the
// container is empty (its closing bracket consumed too).
func (s *scanner) open() (empty bool) {
	c := s.b[s.i]
	s.i++
	s.ws()
	if s.peek() == c+2 { // '}' is '{'+2 and ']' is '['+2
		s.i++
		return true
	}
	return false
}

// endValue is called after a value inside the open containers stack
// ('{' or '[' each, innermost last). It closes containers until one has a
// next element and returns the stack left: empty when the outermost closed,
// otherwise the ',' before the next element is consumed. It returns false,
// with s.err set, at a bad separator.
func (s *scanner) endValue(stack []byte) ([]byte, bool) {
	for len(stack) > 0 {
		s.ws()
		top, c := stack[len(stack)-1], s.peek()
		if c == ',' {
			s.i++
			return stack, true
		}
		if c == top+2 { // its closing bracket (see open)
			s.i++
			stack = stack[:len(stack)-1]
			continue
		}
		if top == '{' {
			return stack, s.fail("expected ',' or '}'")
		}
		return stack, s.fail("expected ',' or ']'")
	}
	return stack, true
}

// member scans an object member's key and colon, leaving the scanner at
// its value; fn, when not nil, is given the key (see walk).
func (s *scanner) member(fn func(tok []byte, str bool)) bool {
	a, b, _, ok := s.str()
	if !ok {
		return false
	}
	if fn != nil {
		fn(s.b[a:b], true)
	}
	s.ws()
	if s.peek() != ':' {
		return s.fail("expected ':'")
	}
	s.i++
	return true
}

// canonKey measures an object key and its colon as JSON.stringify writes
// them (the scanner at the key's quote) and moves past the colon.
func (s *scanner) canonKey() int {
	n := s.canonStringLen() + 1
	if s.err == nil {
		s.ws()
		if s.peek() != ':' {
			s.fail("expected ':'")
		}
		s.i++
	}
	return n
}

// object reads the object at the scanner (at its '{'), calling member
// with each key while the scanner is at that key's value; member reads the
// value and reports whether it was well-formed. It returns false, with
// s.err set, at the first malformed member or separator.
func (s *scanner) object(member func(key []byte) bool) bool {
	first := true
	for {
		key, ok, done := s.objNext(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		if !member(key) {
			return false
		}
	}
}

// objNext advances an object iteration. On the first call the scanner must
// be at '{'. It returns the next key (raw bytes between quotes) positioned at
// the value, or done=true after the closing brace.
func (s *scanner) objNext(first *bool) (key []byte, ok, done bool) {
	s.ws()
	if *first {
		if s.peek() != '{' {
			return nil, s.fail("expected object"), false
		}
		s.i++
		s.ws()
		*first = false
		if s.peek() == '}' {
			s.i++
			return nil, true, true
		}
	} else {
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return nil, true, true
		default:
			return nil, s.fail("expected ',' or '}'"), false
		}
	}
	ks, ke, _, ok := s.str()
	if !ok {
		return nil, false, false
	}
	s.ws()
	if s.peek() != ':' {
		return nil, s.fail("expected ':'"), false
	}
	s.i++
	s.ws()
	return s.b[ks:ke], true, false
}

// arrNext advances an array iteration like objNext.
func (s *scanner) arrNext(first *bool) (ok, done bool) {
	s.ws()
	if *first {
		if s.peek() != '[' {
			return s.fail("expected array"), false
		}
		s.i++
		s.ws()
		*first = false
		if s.peek() == ']' {
			s.i++
			return true, true
		}
		return true, false
	}
	switch s.peek() {
	case ',':
		s.i++
		s.ws()
		return true, false
	case ']':
		s.i++
		return true, true
	default:
		return s.fail("expected ',' or ']'"), false
	}
}

// span validates one value and returns its bytes (aliasing the line).
func (s *scanner) span() ([]byte, bool) {
	st := s.i
	if !s.skip(0) {
		return nil, false
	}
	return s.b[st:s.i], true
}

// rawCopy validates one value and returns a copy of its bytes, as
// json.RawMessage would hold it.
func (s *scanner) rawCopy() (json.RawMessage, bool) {
	b, ok := s.span()
	if !ok {
		return nil, false
	}
	return append(json.RawMessage(nil), b...), true
}

// replaceInvalidUTF8 replaces each byte that is not part of a valid UTF-8
// sequence by U+FFFD, as encoding/json does.
func replaceInvalidUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// Scalars calls fn with the keys and scalar values of the JSON value raw in
// order: keys and strings decoded as stringValueOf decodes them (str
// true), numbers as written and true/false (str false); null gives
// nothing. tok is valid only during the call. It reports whether raw is
// one valid JSON value; at an error fn has seen what came before it. A
// reader that wants the words of a value (recall, of tool-call arguments)
// reads them without building it.
func Scalars(raw []byte, fn func(tok string, str bool)) bool {
	s := scanner{b: raw}
	ok := s.walk(func(tok []byte, str bool) {
		if str && !utf8.Valid(tok) {
			tok = replaceInvalidUTF8(tok)
		}
		if str && bytes.IndexByte(tok, '\\') >= 0 {
			fn(decodeString(tok), true)
			return
		}
		fn(unsafe.String(unsafe.SliceData(tok), len(tok)), str)
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// stringValueOf scans a string and decodes it (allocating) as
// encoding/json and Node's UTF-8 reading do: invalid UTF-8 bytes become
// U+FFFD. When the value is one of known, that string is returned instead
// of a copy.
func (s *scanner) stringValueOf(known []string) (string, bool) {
	raw, ok := s.strBody()
	if !ok {
		return "", false
	}
	for _, k := range known {
		// Without escapes the raw bytes are the value.
		if string(raw) == k && bytes.IndexByte(raw, '\\') < 0 {
			return k, true
		}
	}
	return decodeValue(raw), true
}

// strBody scans a string and returns its raw body between the quotes,
// escapes undecoded: a view of the line's buffer.
func (s *scanner) strBody() ([]byte, bool) {
	st, en, _, ok := s.str()
	if !ok {
		return nil, false
	}
	return s.b[st:en], true
}

// decodeValue is the string a raw string body holds as JSON.parse reads
// it (an invalid UTF-8 byte as U+FFFD), in memory of its own.
func decodeValue(raw []byte) string {
	if !utf8.Valid(raw) {
		raw = replaceInvalidUTF8(raw)
	}
	return decodeString(raw)
}

// numberValue scans a number and returns it as float64.
func (s *scanner) numberValue() (float64, bool) {
	st := s.i
	if !s.number() {
		return 0, false
	}
	// Out of range numbers are ±Infinity, in Go (with ErrRange) as in
	// JavaScript.
	f, _ := strconv.ParseFloat(string(s.b[st:s.i]), 64)
	return f, true
}

// decodeString decodes the raw bytes of a validated JSON string body.
// Escaped lone surrogates become U+FFFD (Go strings are UTF-8).
func decodeString(raw []byte) string {
	hasEsc := false
	for _, c := range raw {
		if c == '\\' {
			hasEsc = true
			break
		}
	}
	if !hasEsc {
		return string(raw)
	}
	// A Builder hands its buffer over as the string: one allocation.
	var out strings.Builder
	out.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			out.Write(raw[i:j])
			i = j
			continue
		}
		e := raw[i+1]
		switch e {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 := hex4(raw[i+2 : i+6])
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out.WriteRune(d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out.WriteRune(r)
			continue
		default:
			out.WriteByte(e)
		}
		i += 2
	}
	return out.String()
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		default:
			r |= rune(c-'A') + 10
		}
	}
	return r
}

// canonLen validates one value and returns the length in UTF-16 units of
// JSON.stringify(JSON.parse(value)): what pi's heuristic counts for tool-call
// arguments. For a canonical line it equals the UTF-16 length of the raw
// bytes; for any other spelling it re-derives the canonical form (whitespace
// dropped, escapes normalised, numbers in JavaScript's shortest form). Like
// skip it keeps its own stack, so nesting depth is unlimited.
func (s *scanner) canonLen(_ int) int {
	var inline [64]byte
	stack := inline[:0]
	n := 0
	for {
		s.ws()
		switch c := s.peek(); {
		case c == '"':
			n += s.canonStringLen()
		case c == '{' || c == '[':
			n += 2
			if s.open() {
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if n += s.canonKey(); s.err != nil {
					return 0
				}
			}
			continue
		case c == 't':
			s.literal("true")
			n += 4
		case c == 'f':
			s.literal("false")
			n += 5
		case c == 'n':
			s.literal("null")
			n += 4
		default:
			st := s.i
			if !s.number() {
				return 0
			}
			n += jsNumberLen(s.b[st:s.i])
		}
		if s.err != nil {
			return 0
		}
		var ok bool
		if stack, ok = s.endValue(stack); !ok {
			return 0
		}
		if len(stack) == 0 {
			return n
		}
		n++ // the ','
		if stack[len(stack)-1] == '{' {
			s.ws()
			if n += s.canonKey(); s.err != nil {
				return 0
			}
		}
	}
}

// canonStringLen scans a string and returns the length of its
// JSON.stringify form (quotes included) in UTF-16 units.
func (s *scanner) canonStringLen() int {
	if _, _, _, ok := s.str(); !ok {
		return 0
	}
	return s.canon
}

// jsNumberLen is the length of a number as JavaScript prints it.
func jsNumberLen(raw []byte) int {
	simple := len(raw) > 0 && len(raw) <= 15
	for i, c := range raw {
		if !(c >= '0' && c <= '9') && !(i == 0 && c == '-') {
			simple = false
			break
		}
	}
	if simple && !(len(raw) > 1 && raw[0] == '0') && !(len(raw) > 2 && raw[0] == '-' && raw[1] == '0') && string(raw) != "-0" {
		return len(raw)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) {
		return 4 // JSON.stringify(Infinity) === "null"
	}
	return len(FormatJSNumber(f))
}

// FormatJSNumber formats f the way JavaScript's Number#toString does.
func FormatJSNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	abs := math.Abs(f)
	if abs >= 1e21 || abs < 1e-6 {
		// Go writes 1e-07 and 1e+21; JavaScript writes 1e-7 and 1e+21.
		b := strconv.FormatFloat(f, 'e', -1, 64)
		e := strings.IndexByte(b, 'e')
		mant, sign, exp := b[:e], b[e+1:e+2], strings.TrimLeft(b[e+2:], "0")
		return mant + "e" + sign + exp
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
