package conv

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/convtest"
)

// Lines shaped like the agents' (shortened).
var sampleLines = []string{
	`{"parentUuid":"b3bd","isSidechain":false,"cwd":"/home/dev","sessionId":"88c2","type":"assistant","message":{"model":"claude-opus-4-6","id":"msg_01","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -la","description":"List"}}],"stop_reason":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":1200,"cache_read_input_tokens":40000,"output_tokens":80}},"uuid":"c4d1","timestamp":"2026-03-02T09:00:05.120Z"}`,
	`{"parentUuid":"c4d1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"total 8\ndrwxr-xr-x 2 dev dev 4096 .\n","is_error":false}]},"uuid":"d5e2","timestamp":"2026-03-02T09:00:06.001Z","toolUseResult":{"stdout":"total 8","stderr":"","interrupted":false}}`,
	`{"parentUuid":null,"isSidechain":false,"type":"progress","data":{"type":"hook_progress","hookEvent":"SessionStart"},"uuid":"b3bd","timestamp":"2026-03-02T09:00:02.370Z"}`,
	`{"timestamp":"2026-03-18T11:05:01.002Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls\"],\"timeout_ms\":10000}","call_id":"call_7"}}`,
	`{"timestamp":"2026-03-18T11:05:02.500Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":9000,"cached_input_tokens":8000,"output_tokens":40,"reasoning_output_tokens":0,"total_tokens":9040},"last_token_usage":{"input_tokens":9000,"cached_input_tokens":8000,"output_tokens":40,"reasoning_output_tokens":0,"total_tokens":9040},"model_context_window":258400},"rate_limits":null}}`,
	`{"timestamp":"2026-03-18T11:05:03.000Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Listing** the files"}],"content":null,"encrypted_content":"gAAAAB"}}`,
}

// Lines to check the decoder on: lines shaped like the agents', hand-made
// edge cases, and random damage to all of them.
func jdecCorpus() [][]byte {
	var lines [][]byte
	for _, s := range sampleLines {
		lines = append(lines, []byte(s))
	}
	for _, s := range []string{``, ` `, `{}`, `[]`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a" 1}`,
		`{"a":1 "b":2}`, `01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `-0.0e0`, `tru`, `nul`, `nulls`,
		`"\u12"`, `"\x"`, "\"a\tb\"", `"abc`, `"\`, "\xef\xbb\xbf{}", `{"a":[{"b":[[]]}]}`, ` {"a" : [ 1 , 2 ] } `,
		"{\"a\":1}\r", `{"a":1}x`, `{"a":1}{}`, `[1 2]`, `{"\u0074ype":"x"}`, `{"ty\"pe":1}`, `{"ty\\":1}`, "{\"ty\x01pe\":1}", "{\"\xff\xe9\":1}", `{"":1}`, `{"a`, `{"a\`, `123456789012345678901234567890`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
		string(bytes.Repeat([]byte{'['}, 10001)) + string(bytes.Repeat([]byte{']'}, 10001)),
		string(bytes.Repeat([]byte{'['}, 10000)) + string(bytes.Repeat([]byte{']'}, 10000))} {
		lines = append(lines, []byte(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		lines = append(lines, convtest.RandomStringToken(r))
	}
	n := len(lines)
	for i := range n {
		l := lines[i]
		if len(l) == 0 {
			continue
		}
		for range 3 {
			m := append([]byte(nil), l...)
			switch p := r.IntN(len(m)); r.IntN(4) {
			case 0:
				m = m[:p]
			case 1:
				const junk = "{}[]\":,\\ x0-e\x01\xff"
				m[p] = junk[r.IntN(len(junk))]
			case 2:
				m = append(m[:p], append(convtest.RandomStringToken(r), m[p:]...)...)
			default:
				m = append(m[:p], m[p+1:]...)
			}
			lines = append(lines, m)
		}
	}
	return lines
}

// checkJdec compares the decoder with encoding/json on one input.
func checkJdec(t *testing.T, in []byte) {
	t.Helper()
	d := NewDec(in)
	d.Skip()
	d.End()
	if valid := json.Valid(in); d.Bad == valid {
		t.Fatalf("%q: jdec says bad=%v, encoding/json valid=%v", in, d.Bad, valid)
	}
	if d.Bad {
		if d.ErrText() == "" {
			t.Fatalf("%q: no error text", in)
		}
		return
	}
	d = NewDec(in)
	raw, compact := d.Raw()
	if compact {
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil || !bytes.Equal(c.Bytes(), raw) {
			t.Fatalf("%q: said compact, json.Compact gives %q", raw, c.Bytes())
		}
	}
	switch raw[0] {
	case '"':
		d := NewDec(raw)
		s := d.Str()
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if s.String() != want {
			t.Fatalf("%q: decoded %q, encoding/json %q", raw, s.String(), want)
		}
		if b, ok := s.unescaped(); ok && string(b) != want {
			t.Fatalf("%q: unescaped %q, encoding/json %q", raw, b, want)
		}
		enc := AppendString(nil, want)
		if !bytes.Equal(s.JSON(), enc) || !bytes.Equal(s.appendJSON(nil), enc) {
			t.Fatalf("%q: encoded %q, want %q", raw, s.JSON(), enc)
		}
		if inner := s.appendInner([]byte("x")); !bytes.Equal(inner, append([]byte("x"), enc[1:len(enc)-1]...)) {
			t.Fatalf("%q: inner %q, want %q", raw, inner, enc[1:len(enc)-1])
		}
		if s.Canon && !bytes.Equal(raw, enc) {
			t.Fatalf("%q: said canonical, AppendString writes %q", raw, enc)
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n, ok := parseInt64(raw)
		want, err := strconv.ParseInt(string(raw), 10, 64)
		if ok != (err == nil) || n != want && ok {
			t.Fatalf("%q: parseInt64 %d %v, strconv %d %v", raw, n, ok, want, err)
		}
	}
}

func TestJdecAgreesWithEncodingJSON(t *testing.T) {
	lines := jdecCorpus()
	canon, nonCanon, sized := 0, 0, 0
	for _, l := range lines {
		checkJdec(t, l)
		if len(l) > 0 && l[0] == '"' && json.Valid(l) {
			s := NewDec(l).Str()
			if s.Canon {
				canon++
			} else {
				nonCanon++
			}
			// The length str measured is the decoded string's.
			if n, ok := s.chars(); ok {
				sized++
				var v string
				_ = json.Unmarshal(l, &v)
				if want := len(utf16.Encode([]rune(v))); n != want {
					t.Errorf("%s: %d chars measured, %d decoded", l, n, want)
				}
			}
		}
	}
	// Both paths of the string encoder were taken, and lengths measured.
	if canon < 20 || nonCanon < 20 || sized < 20 {
		t.Errorf("canonical strings %d, others %d, measured %d: the corpus misses a path", canon, nonCanon, sized)
	}
}

func FuzzJdec(f *testing.F) {
	for _, s := range []string{`{"a":"b\n"}`, `"\ud83d\ude00"`, "\"\xff\"", `[1,{"x":null}]`, `-0.5e3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !utf8.Valid(in) && len(in) > 1<<16 {
			return
		}
		checkJdec(t, in)
	})
}

// appendJSON writes the string as JSON (AppendString's form).
func (s Str) appendJSON(b []byte) []byte {
	if s.Canon {
		return append(b, s.Q...)
	}
	return AppendString(b, s.String())
}

// unescaped decodes what it takes on exactly as encoding/json does, and
// ArgsFromJSON gives ArgsFromString's bytes.
func TestUnescapedMatchesEncodingJSON(t *testing.T) {
	for _, q := range []string{`""`, `"plain"`, `"{\"a\":[1,\"b\\\\c\"],\"d\":\"e\\nf\\/g\\t\\r\\b\\f\"}"`,
		`"{\"a\": 1}"`, `" {\"a\":1}"`, `"{\"a\":1} "`, `"{\"a\":\u0031}"`, `"[1,2]"`, `"{\"a\":1"`,
		`"{\"é\":\"漢\"}"`, "\"\xff{}\"", `"\\"`, `"{}"`} {
		var want string
		if err := json.Unmarshal([]byte(q), &want); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		d := NewDec([]byte(q))
		s := d.Str()
		if b, ok := s.unescaped(); ok && string(b) != want {
			t.Errorf("%s: unescaped %q, want %q", q, b, want)
		}
		if got, want := ArgsFromJSON(s), ArgsFromString(want); !bytes.Equal(got, want) {
			t.Errorf("%s: argsFromJSON %s, want %s", q, got, want)
		}
	}
}

// key (plain keys read by a byte loop, others by str) and name (known
// names looked up without a string made) give the keys and values
// encoding/json gives, on the corpus's objects and on objects whose keys
// and values are the corpus's strings.
func TestKeysAndNamesAgreeWithEncodingJSON(t *testing.T) {
	objs := [][]byte{[]byte(`{"type":"user","ty\u0070e":"\u0075ser","a\"b":"assistant","":"Bash","k\\":"x\ty"}`)}
	var strs [][]byte
	for _, l := range jdecCorpus() {
		if json.Valid(l) && len(l) > 0 {
			switch l[0] {
			case '{':
				objs = append(objs, l)
			case '"':
				strs = append(strs, l)
			}
		}
	}
	for i := 0; i+1 < len(strs); i += 2 {
		objs = append(objs, []byte(`{`+string(strs[i])+`:`+string(strs[i+1])+`,"type":`+string(strs[i+1])+`}`))
	}
	for _, o := range objs {
		dec := json.NewDecoder(bytes.NewReader(o))
		dec.Token() // {
		d := NewDec(o)
		d.Obj("")
		for k, ok := d.Key(); ok; k, ok = d.Key() {
			want, _ := dec.Token()
			// A key of invalid UTF-8 stays its bytes (it names nothing
			// either way).
			if utf8.Valid(k) && string(k) != want.(string) {
				t.Fatalf("%s: key %q, encoding/json %q", o, k, want)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			if v[0] != '"' {
				d.Skip()
				continue
			}
			var s string
			_ = json.Unmarshal(v, &s)
			if got := d.Name(""); got != s {
				t.Fatalf("%s: name %q, encoding/json %q", o, got, s)
			}
		}
		if d.Bad {
			t.Fatalf("%s: jdec failed", o)
		}
	}
}
