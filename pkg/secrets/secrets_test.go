package secrets_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/secretkit"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// Every kind the detector knows is planted once; Find names it, Redact
// leaves a marker with lint's fingerprint and nothing of the value, and a
// second Redact changes nothing.
func TestRedactEveryKind(t *testing.T) {
	samples := secretkit.Samples(1)
	var kinds []string
	for _, s := range samples {
		kinds = append(kinds, s.Kind)
	}
	for _, k := range secrets.Kinds() {
		if !slices.Contains(kinds, k) {
			t.Errorf("no sample of kind %q: add one to secretkit.Samples", k)
		}
	}
	for _, s := range samples {
		text := "before " + s.Text + " after"
		spans := secrets.Find([]byte(text))
		if len(spans) != 1 || spans[0].Kind != s.Kind {
			t.Errorf("%s: found %+v", s.Kind, spans)
			continue
		}
		// The fingerprint is the one lint reports for the same bytes.
		scan := secrets.Scan(strings.NewReader(text))
		if len(scan.Hits) != 1 || scan.Hits[0].Fingerprint != spans[0].Fingerprint {
			t.Errorf("%s: Scan says %+v, Find %+v", s.Kind, scan.Hits, spans)
		}
		red := secrets.Redact(text)
		if leaks := secretkit.Leaks([]byte(red), []secretkit.Sample{s}); len(leaks) > 0 {
			t.Errorf("%s: still there after Redact: %q", s.Kind, red)
		}
		want := secrets.Marker(s.Kind, spans[0].Fingerprint)
		if !strings.Contains(red, want) || !strings.HasPrefix(red, "before ") || !strings.HasSuffix(red, " after") {
			t.Errorf("%s: %q lacks %s or the text around it", s.Kind, red, want)
		}
		if again := secrets.Redact(red); again != red {
			t.Errorf("%s: redacting twice changed %q to %q", s.Kind, red, again)
		}
	}
}

// The raw bytes of a JSONL line are redacted into a line that still
// decodes, with the fingerprints lint prints for that line.
func TestRedactJSONStaysJSON(t *testing.T) {
	samples := secretkit.Samples(2)
	var all []string
	for _, s := range samples {
		all = append(all, s.Text)
	}
	for _, text := range append(all, strings.Join(all, "\n\"quoted\"\\ ")) {
		line, _ := json.Marshal(map[string]any{"type": "message", "content": []any{map[string]string{"type": "text", "text": text}}})
		red := secrets.RedactJSON(line)
		var v any
		if err := json.Unmarshal(red, &v); err != nil {
			t.Fatalf("redacted line no longer JSON: %v\n%s", err, red)
		}
		if leaks := secretkit.Leaks(red, samples); len(leaks) > 0 {
			t.Errorf("leaked %v: %s", secretkit.Kinds(leaks), red)
		}
		for _, h := range secrets.Scan(bytes.NewReader(line)).Hits {
			if !bytes.Contains(red, []byte(secrets.Marker(h.Kind, h.Fingerprint))) {
				t.Errorf("lint's %s %s is not named in %s", h.Kind, h.Fingerprint, red)
			}
		}
	}
}

// Text without credentials comes back as it was, placeholders included.
func TestRedactLeavesTheRest(t *testing.T) {
	for _, s := range []string{"", "short", "the docs say AKIAIOSFODNN7EXAMPLE and sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and Bearer YOUR_TOKEN_HERE_PLEASE_12345",
		strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789", 1000), "résumé 😀 " + strings.Repeat("x", 20)} {
		if got := secrets.Redact(s); got != s {
			t.Errorf("Redact(%.40q) = %.80q", s, got)
		}
	}
	if got := secrets.Slug("API key (sk-…)"); got != "api-key-sk" {
		t.Errorf("Slug = %q", got)
	}
}

// Credentials found by different passes come out in file order with their
// own line and UTF-16 column, across chunk boundaries too.
func TestSecretLinesAndColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	tok := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\\n"
	for range 6 {
		key += tok(alnum+"+/", 70) + "\\n"
	}
	gh := "ghp_" + tok(alnum, 36)
	var buf bytes.Buffer
	buf.WriteString(`{"k":"é ` + key + `"}` + "\n")                 // line 1, column 9 (é is one unit)
	buf.WriteString(strings.Repeat("x", secrets.ScanChunk) + "\n")  // line 2: pushes line 3 into the next chunk
	buf.WriteString(`{"t":"😀 ` + gh + `","n":"` + gh + `"}` + "\n") // line 3: columns 10 and 57
	res := secrets.Scan(bytes.NewReader(buf.Bytes()))
	var got []string
	for _, h := range res.Hits {
		got = append(got, fmt.Sprintf("%d:%d:%s", h.Line, h.Col, h.Kind))
	}
	want := "1:9:private key 3:10:GitHub token 3:57:GitHub token"
	if strings.Join(got, " ") != want || res.Lines != 3 {
		t.Fatalf("got %v (%d lines), want %s", got, res.Lines, want)
	}
}
