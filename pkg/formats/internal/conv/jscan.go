package conv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/swar"
)

// Dec is a validating pull decoder over one JSON line: the readers walk a
// line's keys once, decode the few fields they use and skip the rest, where
// encoding/json would validate the line, then decode it (twice for nested
// raw fields), building strings that are re-encoded at once.
//
// It accepts exactly what encoding/json accepts (RFC 8259, invalid UTF-8 in
// strings allowed, nesting up to 10,000), so a line is malformed exactly when
// it was before; decoded strings equal encoding/json's, including its U+FFFD
// replacements. Keys match exactly (encoding/json would also match
// case-insensitively: no agent writes "Type"). A field of the wrong type is
// noted in TypeErr, decoding goes on (as encoding/json does), and each
// reader decides what that means for the line.
//
// Why this is not transcript's scanner (pkg/transcript/jsonscan.go), the
// other hand-written JSON reader: the grammar is the same (RFC 8259, which
// JSON.parse and encoding/json both follow), both accept invalid UTF-8 in
// strings and decode it alike (one U+FFFD per bad byte, encoding/json's
// rule), and both scan strings a word at a time (swar), but
//   - the acceptance differs in one rule: nesting stops at 10,000 here, as
//     encoding/json, which the converters were built on and whose verdicts
//     on a foreign line (and error messages, ErrText) they keep; pi's reader
//     has no limit, as JSON.parse has none a line could reach;
//   - the product differs: the scanner measures every string for pi's
//     heuristic (UTF-16 units, JSON.stringify's length, wide characters) and
//     walks an entry's keys by callback; Dec pulls typed fields, notes type
//     errors, and tells whether a string is already in the writer's form
//     (Str.canon) so a converter copies it through;
//   - and formats cannot import transcript (transcript's loader reads the
//     converters' output).
//
// BenchmarkJdec and transcript's BenchmarkScanner measure both on lines of
// the same shapes: Dec validates and skips the bundled current Claude Code
// and Codex lines and a 1 MB image line at 1.5-2.2 GB/s without allocating;
// the readers built on it (BenchmarkDecode, to pi lines end to end) run at
// 450 MB/s on a Claude Code transcript and 410 MB/s on a Codex rollout
// (AMD EPYC, 2 cores shared with 7 other agents, load average 14-19, best of 3).
type Dec struct {
	B     []byte
	I     int
	depth int
	// Bad: the line is not JSON; everything stops.
	Bad bool
	// TypeErr describes the first field of an unexpected type.
	TypeErr string
	// Spaced counts whitespace runs skipped, so a caller can tell whether
	// a raw value is compact already.
	Spaced int
	// first: the object or array entered last has had no key or element
	// read yet (so the next one takes no comma). Closing a value leaves
	// its container past its first, so nested values need no state of
	// their own and loops need none either.
	first bool
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

func NewDec(b []byte) *Dec { return &Dec{B: b} }

func (d *Dec) fail() {
	d.Bad = true
	d.I = len(d.B)
}

// End checks that nothing but whitespace follows the top-level value.
func (d *Dec) End() {
	d.ws()
	if d.I != len(d.B) {
		d.fail()
	}
}

// ErrText says why the line was rejected: encoding/json's own message for
// a line that is not JSON, the type mismatch otherwise.
func (d *Dec) ErrText() string {
	if d.Bad {
		var v json.RawMessage
		if err := json.Unmarshal(d.B, &v); err != nil {
			return ShortJSONErr(err)
		}
		return "invalid JSON"
	}
	return d.TypeErr
}

func (d *Dec) ws() {
	if d.I < len(d.B) && d.B[d.I] > ' ' {
		return
	}
	start := d.I
	for d.I < len(d.B) {
		switch d.B[d.I] {
		case ' ', '\t', '\n', '\r':
			d.I++
			continue
		}
		break
	}
	if d.I > start {
		d.Spaced++
	}
}

// PeekByte skips whitespace and returns the next byte (0 at the end).
func (d *Dec) PeekByte() byte {
	d.ws()
	if d.I < len(d.B) {
		return d.B[d.I]
	}
	return 0
}

func (d *Dec) Mismatch(field, want string) {
	if d.TypeErr != "" || d.Bad {
		return
	}
	got := "a number"
	switch d.PeekByte() {
	case '"':
		got = "a string"
	case '{':
		got = "an object"
	case '[':
		got = "an array"
	case 't', 'f':
		got = "a boolean"
	}
	if field == "" {
		d.TypeErr = fmt.Sprintf("the line is %s, expected %s", got, want)
		return
	}
	d.TypeErr = fmt.Sprintf("field %q is %s, expected %s", field, got, want)
}

// Obj enters an object value; false (value consumed) for null or for a
// value of another kind (a type error on field).
func (d *Dec) Obj(field string) bool { return d.enter('{', field, "an object") }

// Arr enters an array value; false (value consumed) for null or another
// kind (a type error on field).
func (d *Dec) Arr(field string) bool { return d.enter('[', field, "an array") }

// enter enters a container opened by open (obj, arr).
func (d *Dec) enter(open byte, field, want string) bool {
	switch d.PeekByte() {
	case open:
		d.I++
		d.depth++
		if d.depth > maxDepth {
			d.fail()
			return false
		}
		d.first = true
		return true
	case 'n':
		d.Skip()
		return false
	}
	d.Mismatch(field, want)
	d.Skip()
	return false
}

// leave consumes the closing bracket of the container being read.
func (d *Dec) leave() {
	d.I++
	d.depth--
	d.first = false
}

// Key returns the next key of the object obj entered (decoded only when it
// holds escapes) and consumes its colon; false at the object's end. Loop
// over an object's keys with
//
//	for k, ok := d.key(); ok; k, ok = d.key() {
func (d *Dec) Key() ([]byte, bool) {
	c := d.PeekByte()
	if c == '}' {
		d.leave()
		return nil, false
	}
	if !d.first {
		if c != ',' {
			d.fail()
			return nil, false
		}
		d.I++
		c = d.PeekByte()
	}
	d.first = false
	if c != '"' {
		d.fail()
		return nil, false
	}
	k, plain := d.plainString()
	if !plain {
		s := d.Str()
		if k = s.Raw(); s.Esc {
			k = []byte(s.String())
		}
	}
	if d.Bad || d.PeekByte() != ':' {
		d.fail()
		return nil, false
	}
	d.I++
	return k, true
}

// plainString reads the string at d.i (its opening quote) when it holds
// no escape and no control byte, as every key and name an agent writes
// does: its bytes are its value, and str's scan, made for long values,
// cost more than this byte loop on a key of a few bytes (keys were a tenth
// of a Codex line's decoding). ok is false, nothing read, for any other
// string.
func (d *Dec) plainString() (k []byte, ok bool) {
	b := d.B
	j := d.I + 1
	for ; j+8 <= len(b); j += 8 {
		if m := swar.JSONEscape(swar.Load(b, j)); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			break
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
	}
	if j >= len(b) || b[j] != '"' {
		return nil, false
	}
	k, d.I = b[d.I+1:j], j+1
	return k, true
}

// Next moves to the next element of the array arr entered; false at its
// end.
func (d *Dec) Next() bool {
	c := d.PeekByte()
	if c == ']' {
		d.leave()
		return false
	}
	if !d.first {
		if c != ',' {
			d.fail()
			return false
		}
		d.I++
	}
	d.first = false
	return !d.Bad
}

// Str is a JSON string as it appears in the line.
type Str struct {
	Q []byte // with its quotes; nil when absent
	// Esc: it holds escapes; canon: q is byte for byte what AppendString
	// writes for the decoded value, so it can be copied to the output.
	Esc, Canon bool
	// ascii: q holds no byte >= 0x80; units is then the decoded value's
	// length in UTF-16 units (its bytes less what its escapes add), which
	// str counts as it scans.
	ascii bool
	units int
}

// chars is the length of the string as written (json) in UTF-16 units —
// JavaScript's length, pi's chars — when str knew it without reading it
// again: a canonical ASCII string (or an absent one, written ""). Any
// other string's length is read from the written line by the transcript
// core, whose rules (UTF-16, the wide characters) are the only ones.
func (s Str) chars() (int, bool) {
	if s.Q == nil {
		return 0, true
	}
	return s.units, s.Canon && s.ascii
}

func (s Str) Raw() []byte {
	if len(s.Q) < 2 {
		return nil
	}
	return s.Q[1 : len(s.Q)-1]
}

func (s Str) Empty() bool { return len(s.Q) <= 2 }

// String decodes the string as encoding/json does.
func (s Str) String() string {
	if s.Q == nil {
		return ""
	}
	if !s.Esc && s.Canon {
		return string(s.Raw())
	}
	var out string
	_ = json.Unmarshal(s.Q, &out)
	return out
}

// Equal reports whether s and t decode to the same string: canonical
// encodings are equal exactly when their values are.
func (s Str) Equal(t Str) bool {
	if s.Canon && t.Canon {
		return bytes.Equal(s.Q, t.Q)
	}
	return s.String() == t.String()
}

// Is reports whether s decodes to v, without making a string of s when it
// holds no escapes (its bytes are then its value, or invalid UTF-8, which
// v is not).
func (s Str) Is(v string) bool {
	if s.Q != nil && !s.Esc {
		return string(s.Raw()) == v
	}
	return s.String() == v
}

// JSON is the string encoded as AppendString would encode its value: the
// line's own bytes when they are that already.
func (s Str) JSON() []byte {
	if s.Canon {
		return s.Q
	}
	return AppendString(nil, s.String())
}

// JSONOrNil is json, nil for an empty or absent string.
func (s Str) JSONOrNil() []byte {
	if s.Empty() {
		return nil
	}
	return s.JSON()
}

// unescaped is the decoded value of a string of valid UTF-8 whose
// escapes are all short ones (\" \\ \/ \b \f \n \r \t), where decoding
// needs no rule of encoding/json's; ok is false for any other string.
func (s Str) unescaped() ([]byte, bool) {
	raw := s.Raw()
	if !s.Esc {
		return raw, s.Canon
	}
	if !utf8.Valid(raw) {
		return nil, false
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return append(out, raw[i:]...), true
		}
		out = append(out, raw[i:i+j]...)
		i += j + 1 // the escaped byte (a string never ends in a lone backslash)
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default:
			return nil, false
		}
	}
	return out, true
}

// appendInner writes the string as JSON without its quotes, for joining.
func (s Str) appendInner(b []byte) []byte {
	if s.Canon {
		return append(b, s.Raw()...)
	}
	n := len(b)
	b = AppendString(b, s.String())
	copy(b[n:], b[n+1:len(b)-1])
	return b[:len(b)-2]
}

// Text is a JSON string to write (nil: "") with its length in UTF-16
// units when the decoder knew it (sized; see Str.chars).
type Text struct {
	B     []byte
	chars int
	sized bool
}

// Text is json with its length.
func (s Str) Text() Text {
	n, ok := s.chars()
	return Text{B: s.JSON(), chars: n, sized: ok}
}

// JoinJSON is the JSON string of the texts pick selects among n, joined
// by sep (written as inside a JSON string, short escapes only: `\n`): one
// text is its own encoding (the line's bytes, most often), more are
// written into one buffer of their size, not one grown text by text.
func JoinJSON(n int, pick func(i int) (Str, bool), sep string) Text {
	count, size, one := 0, 2, Str{}
	chars, sized := 0, true
	sepChars := len(sep) - strings.Count(sep, `\`) // each escape is one unit
	for i := range n {
		if s, ok := pick(i); ok {
			if count > 0 {
				chars += sepChars
			}
			count++
			size += len(s.Q) + len(sep)
			one = s
			c, ok := s.chars()
			chars, sized = chars+c, sized && ok
		}
	}
	if count == 1 {
		return one.Text()
	}
	b := append(make([]byte, 0, size), '"')
	count = 0
	for i := range n {
		if s, ok := pick(i); ok {
			if count > 0 {
				b = append(b, sep...)
			}
			count++
			b = s.appendInner(b)
		}
	}
	return Text{B: append(b, '"'), chars: chars, sized: sized}
}

// Str scans the string at d.i (which holds its opening quote), eight bytes
// at a time while they are plain.
func (d *Dec) Str() Str {
	b := d.B
	start := d.I
	i := start + 1
	var acc uint64 // OR of the bytes seen: any high bit means non-ASCII
	var s Str
	nonCanon := false
	extra := 0 // bytes the escapes add to the value's UTF-16 units
	for {
		for i+8 <= len(b) {
			x := swar.Load(b, i)
			if m := swar.JSONEscape(x); m != 0 {
				k := bits.TrailingZeros64(m) >> 3
				acc |= x & (1<<(8*k) - 1)
				i += k
				break
			}
			acc |= x
			i += 8
		}
		for i < len(b) {
			c := b[i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			acc |= uint64(c)
			i++
		}
		if i >= len(b) {
			d.fail()
			return Str{}
		}
		switch c := b[i]; {
		case c == '"':
			d.I = i + 1
			s.Q = b[start:d.I]
			s.ascii = acc&swar.High == 0
			s.Canon = !nonCanon && (s.ascii || utf8.Valid(s.Q))
			s.units = len(s.Q) - 2 - extra
			return s
		case c == '\\':
			s.Esc = true
			if i+1 >= len(b) {
				d.fail()
				return Str{}
			}
			switch b[i+1] {
			case '"', '\\', 'n', 'r', 't', 'b', 'f':
				i += 2
				extra++
			case '/':
				nonCanon = true
				i += 2
				extra++
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					d.fail()
					return Str{}
				}
				// AppendString writes \u00xx (lower-case) only for control
				// characters without a short escape.
				r := hex4(b[i+2 : i+6])
				if r >= 0x20 || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t' || (b[i+5] >= 'A' && b[i+5] <= 'F') {
					nonCanon = true
				}
				i += 6
				extra += 5 // one unit, surrogates too
			default:
				d.fail()
				return Str{}
			}
		default: // a control byte
			d.fail()
			return Str{}
		}
	}
}

func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Text reads a string field: null and absent give the zero Str, another
// kind a type error.
func (d *Dec) Text(field string) Str {
	switch d.PeekByte() {
	case '"':
		return d.Str()
	case 'n':
		d.Skip()
		return Str{}
	}
	d.Mismatch(field, "a string")
	d.Skip()
	return Str{}
}

// String reads a string field as a Go string.
func (d *Dec) String(field string) string { return d.Text(field).String() }

// Name reads a string field whose value is most often one of the formats'
// own names (a record's type, a role, a common tool): those come back
// without a string allocated per line.
func (d *Dec) Name(field string) string {
	if d.PeekByte() == '"' {
		at := d.I
		if raw, ok := d.plainString(); ok {
			if n, ok := knownNames[string(raw)]; ok {
				return n
			}
		}
		d.I = at
	}
	s := d.Text(field)
	if n, ok := knownNames[string(s.Raw())]; ok {
		return n
	}
	return s.String()
}

var knownNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		// Claude Code
		"user", "assistant", "system", "progress", "attachment", "summary", "file-history-snapshot",
		"queue-operation", "compact_boundary", "text", "thinking", "redacted_thinking", "tool_use",
		"server_tool_use", "tool_result", "image", "base64", "image/png", "image/jpeg",
		"Bash", "Read", "Edit", "Write", "MultiEdit", "Grep", "Glob", "Task", "TodoWrite", "WebFetch", "WebSearch",
		// Codex
		"session_meta", "turn_context", "response_item", "event_msg", "compacted", "message", "reasoning",
		"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
		"local_shell_call", "local_shell_call_output", "token_count", "task_started", "developer",
		"input_text", "output_text", "input_image", "summary_text", "reasoning_text", "state",
		"shell", "apply_patch", "update_plan", "exec_command",
	} {
		m[n] = n
	}
	return m
}()

// OptString reads a string field that may be null (nil then).
func (d *Dec) OptString(field string) *string {
	if d.PeekByte() == 'n' {
		d.Skip()
		return nil
	}
	s := d.String(field)
	return &s
}

func (d *Dec) Bool(field string) bool {
	switch d.PeekByte() {
	case 't':
		d.literal("true")
		return true
	case 'f':
		d.literal("false")
		return false
	case 'n':
		d.Skip()
		return false
	}
	d.Mismatch(field, "a boolean")
	d.Skip()
	return false
}

// Int reads an integer field (encoding/json's rule for int64: no fraction
// or exponent, in range).
func (d *Dec) Int(field string) int64 {
	c := d.PeekByte()
	if c == 'n' {
		d.Skip()
		return 0
	}
	if c != '-' && (c < '0' || c > '9') {
		d.Mismatch(field, "an integer")
		d.Skip()
		return 0
	}
	start := d.I
	d.number()
	num := d.B[start:d.I]
	n, ok := parseInt64(num)
	if !ok && !d.Bad && d.TypeErr == "" {
		d.TypeErr = fmt.Sprintf("field %q is %s, expected an integer", field, num)
	}
	return n
}

// parseInt64 parses a JSON number that must be an int64 (strconv.ParseInt's
// rule: optional minus, digits only, in range).
func parseInt64(num []byte) (int64, bool) {
	neg := len(num) > 0 && num[0] == '-'
	if neg {
		num = num[1:]
	}
	if len(num) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range num {
		if c < '0' || c > '9' || u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// Raw skips a value and returns its bytes; compact is true when no
// whitespace was skipped inside it.
func (d *Dec) Raw() (raw []byte, compact bool) {
	d.ws()
	start, spaced := d.I, d.Spaced
	d.Skip()
	if d.Bad {
		return nil, false
	}
	return d.B[start:d.I], d.Spaced == spaced
}

func (d *Dec) literal(lit string) {
	if len(d.B)-d.I < len(lit) || string(d.B[d.I:d.I+len(lit)]) != lit {
		d.fail()
		return
	}
	d.I += len(lit)
}

func (d *Dec) number() {
	b, i := d.B, d.I
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = digits(b, i)
	default:
		d.fail()
		return
	}
	ok := true
	if i < len(b) && b[i] == '.' {
		i, ok = digits(b, i+1)
	}
	if ok && i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		i, ok = digits(b, i)
	}
	if !ok {
		d.fail()
		return
	}
	d.I = i
}

// digits passes over the run of digits at b[i:]; false when there is none.
func digits(b []byte, i int) (int, bool) {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j, j > i
}

// Skip validates and passes over one value.
func (d *Dec) Skip() {
	switch c := d.PeekByte(); {
	case c == '"':
		d.Str()
	case c == '{':
		d.Obj("")
		for _, ok := d.Key(); ok; _, ok = d.Key() {
			d.Skip()
		}
	case c == '[':
		d.Arr("")
		for d.Next() {
			d.Skip()
		}
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		d.number()
	default:
		d.fail()
	}
}

func ShortJSONErr(err error) string {
	s := err.Error()
	return strings.TrimPrefix(s, "json: ")
}
