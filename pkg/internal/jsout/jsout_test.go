package jsout

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// invalid holds ill-formed UTF-8 of every kind the decoder's rule tells
// apart: a lone continuation byte, truncated sequences (one U+FFFD each in
// Node), an encoded surrogate and an overlong form (one per byte), bytes
// that never start a sequence, and a truncated sequence before ASCII.
var invalid = []string{
	"\x80", "a\xe4\xb8b", "\xe4\xb8", "\xf0\x9f\x98", "\xf0\x9f\x98x", "\xed\xa0\x80", "\xc0\xaf",
	"\xf5\x80", "\xff", "é\xe9t\xe9", "\xe0\x80\x80", "\xf4\x90\x80\x80", "\xe1\x80", "ok\u2028\u2029\x7f<&>",
}

// AppendString writes what JSON.stringify writes for the string Node
// reads from the same bytes: checked against node itself.
func TestAppendStringIsNodes(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is needed (CI=true)")
		}
		t.Skip("node is not installed: install it to check the writer against JSON.stringify")
	}
	cases := append(invalid, "plain", "quote\" back\\ nl\n tab\t \x00\x1f\x01 \U0001F600")
	var hexes []string
	for _, c := range cases {
		hexes = append(hexes, hex.EncodeToString([]byte(c)))
	}
	// Node reads the bytes as UTF-8 (the way pi reads a session file) and
	// writes each string with JSON.stringify, one a line.
	script := `const h=JSON.parse(require('fs').readFileSync(0,'utf8'));` +
		`process.stdout.write(h.map(x=>JSON.stringify(Buffer.from(x,'hex').toString('utf8'))).join('\n'))`
	cmd := exec.Command(node, "-e", script)
	in, _ := json.Marshal(hexes)
	cmd.Stdin = bytes.NewReader(in)
	got, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(string(got), "\n")
	for i, s := range cases {
		if g := string(AppendString(nil, s)); g != want[i] {
			t.Errorf("%q: wrote %q, JSON.stringify %q", s, g, want[i])
		}
	}
}

// StringLen counts what AppendString writes, for any bytes.
func TestStringLenIsAppendString(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\x01", "é", "中", "\U0001F600", "\x80", "\xe4\xb8", "\xf0\x9f", "\xed\xa0\x80", "\xff", "        "}
	for n := 0; n < 5000; n++ {
		var sb strings.Builder
		for k := r.IntN(40); k > 0; k-- {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := sb.String()
		if got, want := StringLen(s), len(AppendString(nil, s)); got != want {
			t.Fatalf("%q: StringLen %d, AppendString wrote %d", s, got, want)
		}
		if v := AppendValid(nil, []byte(s)); !json.Valid(AppendString(nil, string(v))) ||
			!bytes.Equal(AppendString(nil, s), AppendString(nil, string(v))) {
			t.Fatalf("%q: AppendValid %q is not what AppendString reads", s, v)
		}
	}
}

type inner struct {
	A string `json:"a"`
	B int    `json:"b,omitempty"`
}

type Embedded struct {
	E  string `json:"e"`
	Ov string `json:"a"` // shadowed by the outer field of the same name
}

type textKey struct{ v int }

func (k textKey) MarshalText() ([]byte, error) { return []byte("k" + string(rune('0'+k.v))), nil }

type sample struct {
	Embedded
	Type    string          `json:"type"`
	ID      *string         `json:"id"`
	Parent  *string         `json:"parentId,omitempty"`
	Zero    int             `json:"zero,omitempty"`
	F       float64         `json:"f"`
	Small   float64         `json:"small"`
	Big     float64         `json:"big"`
	F32     float32         `json:"f32"`
	Raw     json.RawMessage `json:"raw"`
	RawNil  json.RawMessage `json:"rawNil,omitempty"`
	Any     any             `json:"any"`
	List    []inner         `json:"list"`
	Nil     []string        `json:"nil"`
	Bytes   []byte          `json:"bytes"`
	Map     map[string]any  `json:"map"`
	IntMap  map[int]string  `json:"intMap"`
	TextMap map[textKey]int `json:"textMap"`
	When    time.Time       `json:"when"`
	Quoted  int             `json:"quoted,string"`
	Skip    string          `json:"-"`
	private string
	A       string `json:"a"`
	NoTag   bool
}

// Marshal maps Go values to JSON as encoding/json does: on valid UTF-8
// its output equals encoding/json's without HTML escaping, U+2028 and
// U+2029 written raw.
func TestMarshalIsEncodingJSON(t *testing.T) {
	id := "ab12cd34"
	values := []any{
		nil, "x", 3, 2.5, true, []any{1, "a", nil},
		map[string]any{"z": 1, "a": []int{1, 2}, "m": map[string]string{"k": "<&>\u2028"}},
		sample{Embedded: Embedded{E: "e", Ov: "shadowed"}, Type: "message", ID: &id, F: 1.25, Small: 1e-7, Big: 1e21,
			F32: 0.1, Raw: json.RawMessage(` { "b" : [1, 2.50, "x\/y\u00e9\u2028<&>"] , "a":null }`), Any: map[string]any{"k": []any{"v", 1.5}},
			List: []inner{{A: "q\"\n"}, {A: "", B: 2}}, Bytes: []byte("hi"), Map: map[string]any{"b": 1, "a": "\u2029"},
			IntMap: map[int]string{2: "b", 10: "a"}, TextMap: map[textKey]int{{1}: 1, {0}: 0},
			When: time.Date(2026, 12, 2, 5, 0, 0, 123e6, time.UTC), Quoted: 42, Skip: "no", private: "no", A: "outer", NoTag: true},
		&inner{A: "p"},
	}
	for _, v := range values {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		want := strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(strings.TrimSuffix(buf.String(), "\n"))
		got, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("Marshal(%T):\n got %s\nwant %s", v, got, want)
		}
	}
}

// Invalid UTF-8 in a value, a map key or a raw message is written by the
// one rule, not encoding/json's \ufffd per byte.
func TestMarshalInvalidUTF8(t *testing.T) {
	got, err := Marshal(map[string]any{"k\xe4\xb8": []any{"a\xe4\xb8b", json.RawMessage("\"r\xf0\x9f\x98\"")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"k\ufffd\":[\"a\ufffdb\",\"r\ufffd\"]}"; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
