package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/convtest"
)

// viewStrings decodes every line of a view with encoding/json and collects
// its string values (and the arguments objects of tool calls).
func viewStrings(t *testing.T, v *View) (map[string]bool, []map[string]any, []byte) {
	t.Helper()
	var out bytes.Buffer
	if _, err := v.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	strs := map[string]bool{}
	var args []map[string]any
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			strs[x] = true
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if a, ok := x["arguments"].(map[string]any); ok && x["type"] == "toolCall" {
				args = append(args, a)
			}
			for _, e := range x {
				walk(e)
			}
		}
	}
	for i, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte{'\n'}), []byte{'\n'}) {
		var x any
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("view line %d is not JSON: %v: %s", i+1, err, l)
		}
		walk(x)
	}
	return strs, args, out.Bytes()
}

func decodeJSONString(tok []byte) string {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		panic(err)
	}
	return s
}

// Text reaches the pi view exactly as encoding/json decodes the source and
// AppendString encodes it, whatever escapes, surrogates or invalid bytes it
// holds — through the fast path (copying the source's bytes) and the slow
// one (decoding and re-encoding) alike.
func TestTranslationKeepsStringsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tok := func() []byte { return convtest.RandomStringToken(r) }

	t.Run("claude-code", func(t *testing.T) {
		var src bytes.Buffer
		var want []string
		var wantArgs []map[string]any
		parent := "null"
		for i := range 60 {
			user, text, think, arg, res1, res2 := tok(), tok(), tok(), tok(), tok(), tok()
			fmt.Fprintf(&src, `{"type":"user","uuid":"u%d","parentUuid":%s,"sessionId":"s","message":{"role":"user","content":%s},"timestamp":"2026-01-01T00:00:00Z"}`+"\n", i, parent, user)
			fmt.Fprintf(&src, `{"type":"assistant","uuid":"a%d","parentUuid":"u%d","message":{"id":"m%d","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":%s,"signature":"sig"},{"type":"text","text":%s},{"type":"tool_use","id":"t%d","name":"Bash","input":{"cmd" : %s, "n":1}}],"usage":{"input_tokens":1}}}`+"\n", i, i, i, think, text, i, arg)
			fmt.Fprintf(&src, `{"type":"user","uuid":"r%d","parentUuid":"a%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":[{"type":"text","text":%s},{"type":"text","text":%s}]}]}}`+"\n", i, i, i, res1, res2)
			parent = fmt.Sprintf(`"r%d"`, i)
			want = append(want, decodeJSONString(user), decodeJSONString(text), decodeJSONString(think), decodeJSONString(res1), decodeJSONString(res2))
			wantArgs = append(wantArgs, map[string]any{"cmd": decodeJSONString(arg), "n": 1.0})
		}
		s1, s2 := tok(), tok()
		fmt.Fprintf(&src, `{"type":"system","subtype":"compact_boundary","uuid":"cb","parentUuid":null,"compactMetadata":{"preTokens":5}}`+"\n")
		fmt.Fprintf(&src, `{"type":"user","uuid":"cs","parentUuid":"cb","isCompactSummary":true,"message":{"role":"user","content":[{"type":"text","text":%s},{"type":"image"},{"type":"text","text":%s}]}}`+"\n", s1, s2)
		want = append(want, decodeJSONString(s1)+"\n"+decodeJSONString(s2))
		checkStrings(t, src.Bytes(), ClaudeCode, want, wantArgs)
	})

	t.Run("codex", func(t *testing.T) {
		var src bytes.Buffer
		var want []string
		var wantArgs []map[string]any
		src.WriteString(`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/x"}}` + "\n")
		for i := range 60 {
			user, sum1, sum2, text, arg, out := tok(), tok(), tok(), tok(), tok(), tok()
			args, _ := json.Marshal(fmt.Sprintf(`{"cmd": %s,"n":1}`, arg))
			fmt.Fprintf(&src, `{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}}`+"\n", user)
			fmt.Fprintf(&src, `{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":%s},{"type":"summary_text","text":%s}]}}`+"\n", sum1, sum2)
			fmt.Fprintf(&src, `{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":%s}]}}`+"\n", text)
			fmt.Fprintf(&src, `{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":%s,"call_id":"c%d"}}`+"\n", args, i)
			fmt.Fprintf(&src, `{"timestamp":"2026-01-01T00:00:05Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":%s}}`+"\n", i, out)
			want = append(want, decodeJSONString(user), decodeJSONString(sum1)+"\n\n"+decodeJSONString(sum2),
				decodeJSONString(text), decodeJSONString(out))
			wantArgs = append(wantArgs, map[string]any{"cmd": decodeJSONString(arg), "n": 1.0})
		}
		checkStrings(t, src.Bytes(), Codex, want, wantArgs)
	})
}

func checkStrings(t *testing.T, src []byte, f Format, want []string, wantArgs []map[string]any) {
	t.Helper()
	v, err := OpenReader("x.jsonl", bytes.NewReader(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.Format != f || len(v.Malformed) > 0 {
		t.Fatalf("format %s, malformed %v", v.Format, v.Malformed)
	}
	got, args, raw := viewStrings(t, v)
	for _, w := range want {
		if !got[w] {
			t.Errorf("view lacks %q", w)
		}
		// Byte for byte as ctxtool encodes strings (as JSON.stringify
		// would, after encoding/json's decoding).
		if enc := AppendString(nil, w); !bytes.Contains(raw, enc) {
			t.Errorf("view lacks the encoding %s", enc)
		}
	}
	if !reflect.DeepEqual(args, wantArgs) {
		t.Errorf("tool call arguments differ:\n got %v\nwant %v", args, wantArgs)
	}
}
