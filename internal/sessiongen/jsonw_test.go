package sessiongen

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

func TestAppendFloatLikeJavaScript(t *testing.T) {
	a, b, price := 0.1, 0.2, 25.0 // variables: Go constant arithmetic would be exact
	for f, want := range map[float64]string{
		0: "0", 1: "1", -2: "-2", 0.5: "0.5", 0.000005: "0.000005", 5e-7: "5e-7", 1.5e-7: "1.5e-7",
		1e21: "1e+21", 1.5e300: "1.5e+300", 123456789012345680000: "123456789012345680000",
		a + b: "0.30000000000000004", price / 1000000 * 9: "0.00022500000000000002", math.Inf(1): "null",
	} {
		if got := string(appendFloat(nil, f)); got != want {
			t.Errorf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestAppendStringLikeJavaScript(t *testing.T) {
	for s, want := range map[string]string{
		"<a href=\"x\">&</a>": `"<a href=\"x\">&</a>"`,
		"tab\tnl\ncr\rbs\\":   `"tab\tnl\ncr\rbs\\"`,
		"\x00\x01\x1f\b\f":    `"\u0000\u0001\u001f\b\f"`,
		"\u2028\u2029é部😀/":    "\"\u2028\u2029é部😀/\"",
		"bad\xffbyte":         "\"bad\uFFFDbyte\"",
		"\x7f":                "\"\x7f\"",
	} {
		if got := string(formats.AppendString(nil, s)); got != want {
			t.Errorf("formats.AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	if _, err := Marshal(struct{}{}); err == nil {
		t.Error("Marshal accepted a struct")
	}
	got, _ := Marshal(map[string]any{"b": 1, "a": []any{true, nil}, "10": "x", "2": 0.25})
	if string(got) != `{"2":0.25,"10":"x","a":[true,null],"b":1}` {
		t.Errorf("map order: %s", got)
	}
}

// TestEncodingRoundTripsInNode writes tricky values and lets node confirm
// JSON.stringify(JSON.parse(line)) === line.
func TestEncodingRoundTripsInNode(t *testing.T) {
	var lines []string
	var all strings.Builder
	for c := 0; c < 0x80; c++ {
		all.WriteByte(byte(c))
	}
	all.WriteString("\u2028\u2029\u00a0\ufeff部署😀\xfe")
	a, b := 0.1, 0.2
	vals := []any{all.String(), 5e-7, 1e21, math.Copysign(0, -1), a + b, 1.7976931348623157e308, 4.9e-324, 123e-20,
		Obj{{"nested", Obj{{"list", []any{1, "two", 3.5, false, nil, Obj{}}}}}}, []string{}, RawJSON(`{"raw":[1,2]}`)}
	for _, v := range vals {
		b, err := Marshal(Obj{{"v", v}})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	f := filepath.Join(t.TempDir(), "values.jsonl")
	testkit.WriteFile(t, f, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	r := canonCheck(t, f)[f]
	if len(r.Bad) > 0 || len(r.Malformed) > 0 || r.Lines != len(lines) {
		t.Fatalf("node: %+v", r)
	}
}
