package recall

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// argsTextDecoder is how argsText read arguments before it used
// transcript.Scalars: encoding/json's tokens.
func argsTextDecoder(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v)
		case json.Number:
			b.WriteByte(' ')
			b.WriteString(v.String())
		case bool:
			b.WriteByte(' ')
			b.WriteString(strconv.FormatBool(v))
		}
	}
	return b.String()
}

// argsText reads tool-call arguments as encoding/json's tokens read them:
// on every tool call of generated sessions of every format, and on values
// in odd shapes (escapes, surrogates, invalid UTF-8, numbers, nesting).
func TestArgsTextMatchesDecoder(t *testing.T) {
	args := []string{
		`{}`, `[]`, `null`, `"a string"`, `42`, `true`, `{"":""}`, `{"a":""}`, `["",""]`,
		`{"path":"a\nb\t\"c\"\\d\/e","n":-1.5e+3,"z":0,"ok":false,"x":null,"l":[1,{"k":"v"},[true,null]]}`,
		`{"emoji":"\ud83d\ude00","lone":"\ud800x","low":"\udc00","pair-broken":"\ud83d\u0041","u":"\u00e9\u4e2d"}`,
		"{\"bad\":\"a\xffb\",\"k\xfe\":1,\"esc\xff\":\"\\n\xc3\"}",
		` { "spaced" : [ 1 , 2 ] , "deep" : [[[[{"a":[["b"]]}]]]] } `,
		`{"big":123456789012345678901234567890,"neg0":-0,"frac":0.000001}`,
	}
	n := 0
	for _, l := range recalltest.EveryFormatLines(t) {
		_, m, ok := transcript.ParseRecord(l)
		if !ok || m == nil {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "toolCall" && len(b.Arguments) > 0 {
				args = append(args, string(b.Arguments))
				n++
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d tool calls in the generated sessions", n)
	}
	for _, a := range args {
		if got, want := argsText(json.RawMessage(a)), argsTextDecoder(json.RawMessage(a)); got != want {
			t.Fatalf("argsText(%s)\n= %q\nencoding/json's tokens give\n  %q", a, got, want)
		}
	}
}

// weightedLen and hasCJK, which skip ASCII eight bytes at a time, agree
// with a rune-by-rune reading: CJK, Hangul, other non-ASCII and invalid
// bytes at every alignment among ASCII, and the lines of generated
// sessions of every format.
func TestWeightsMatchRunes(t *testing.T) {
	pieces := []string{"部署", "생산", "é", "\xff", "\xe3\x80", "𠀀", "\u3000", "abc", "0123456789abcdef"}
	var texts []string
	for n := 0; n < 20; n++ {
		for _, p := range pieces {
			texts = append(texts, strings.Repeat("x", n)+p+strings.Repeat("y", 20-n), strings.Repeat("x", n)+p)
		}
	}
	for _, l := range recalltest.EveryFormatLines(t) {
		texts = append(texts, string(l))
	}
	for _, s := range texts {
		want, cjk := 0, false
		for _, r := range s {
			want += runeWeight(r)
			cjk = cjk || isCJK(r)
		}
		if got := weightedLen(s); got != want {
			t.Fatalf("weightedLen(%q) = %d, runes weigh %d", s, got, want)
		}
		if hasCJK(s) != cjk {
			t.Fatalf("hasCJK(%q) = %v, runes say %v", s, !cjk, cjk)
		}
	}
}

// normalizeSpace, which copies plain ASCII runs found eight bytes at a
// time, gives what strings.Fields does: on the lines of generated
// sessions of every format (escapes and all), and on whitespace of every
// kind at every alignment.
func TestNormalizeSpaceMatchesFields(t *testing.T) {
	pieces := []string{" ", "  ", "\n", "\t \r\n", "\v\f", "\u00a0", "\u3000", "\u2028", "\u0085", "\x01", "\x7f", "\xff", "\xe3\x80", "部署", "é",
		"部署到生产环境", "部\xe9\x80", "\xe4\xb8\xe4\xb8\xad", "署\u3000部", "中文ok中"}
	var texts []string
	for n := 0; n < 20; n++ {
		for _, p := range pieces {
			texts = append(texts, strings.Repeat("x", n)+p+strings.Repeat("y y", 7-n/3)+p, p+strings.Repeat("x ", n)+p)
		}
	}
	for _, l := range recalltest.EveryFormatLines(t) {
		texts = append(texts, string(l))
		if _, m, ok := transcript.ParseRecord(l); ok && m != nil {
			for _, b := range m.Content {
				texts = append(texts, b.Text, b.Thinking)
			}
		}
	}
	for _, s := range texts {
		if got, want := normalizeSpace(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("normalizeSpace(%q)\n= %q\nstrings.Fields gives\n  %q", s, got, want)
		}
	}
}

// A piece of tool output over maxPieceBytes is cut to it whatever
// recall.toolOutputChars says: its head and tail are indexed, its middle
// counted as left out; a piece at the bound is indexed whole.
func TestToolOutputCutAtMaxPieceBytes(t *testing.T) {
	line := "log line 0123456789 abcdefghij\n"
	body := strings.Repeat(line, (maxPieceBytes+(1<<20))/len(line))
	s := "wombat-head " + body + " quokka-tail"
	var x extractor
	got := x.clip(s)
	if len(got) > maxPieceBytes+len(capMarker) {
		t.Errorf("clipped to %d bytes, over %d", len(got), maxPieceBytes+len(capMarker))
	}
	if !strings.HasPrefix(got, "wombat-head ") || !strings.HasSuffix(got, " quokka-tail") || !strings.Contains(got, capMarker) {
		t.Errorf("head or tail lost: %.40q … %.40q", got, got[len(got)-40:])
	}
	if want := int64(len(s) - (len(got) - len(capMarker))); x.leftOut.Cut != 1 || x.leftOut.CutBytes != want {
		t.Errorf("left out %+v, want 1 cut of %d bytes", x.leftOut, want)
	}

	whole := s[:maxPieceBytes]
	var y extractor
	if got := y.clip(whole); got != whole || y.leftOut.Cut != 0 {
		t.Errorf("a piece of maxPieceBytes was cut (%d bytes kept, %+v)", len(got), y.leftOut)
	}
}

// binaryText, eight bytes at a time, counts the control bytes as a byte
// by byte count does, wherever they fall.
func TestBinaryTextWords(t *testing.T) {
	byBytes := func(s string) bool {
		n, ctrl := min(len(s), 4096), 0
		for i := 0; i < n; i++ {
			if c := s[i]; c < 0x20 && !asciiSpace(c) || c == 0x7f {
				ctrl++
			}
		}
		return ctrl*10 > n
	}
	r := rand.New(rand.NewPCG(1, 2))
	pool := []byte("abc xyz\n\t\x00\x01\x1b\x7f\x80é")
	for i := 0; i < 3000; i++ {
		b := make([]byte, r.IntN(5000))
		dense := r.IntN(4)
		for j := range b {
			if r.IntN(8) < dense {
				b[j] = pool[r.IntN(len(pool))]
			} else {
				b[j] = 'a' + byte(r.IntN(26))
			}
		}
		if got, want := binaryText(string(b)), byBytes(string(b)); got != want {
			t.Fatalf("binaryText of %q = %v, want %v", b, got, want)
		}
	}
}

// stripBlobsRef is what stripBlobs does to text without control bytes,
// written as plainly as it can be: every maximal run of 256 base64 bytes
// or more that holds upper case, lower case and digits becomes a marker.
func stripBlobsRef(s string) (string, LeftOut) {
	var lo LeftOut
	var out strings.Builder
	inRun := func(r rune) bool { return r < utf8.RuneSelf && b64[r] }
	for s != "" {
		i := strings.IndexFunc(s, inRun)
		if i < 0 {
			out.WriteString(s)
			break
		}
		out.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return !inRun(r) })
		if j < 0 {
			j = len(s)
		}
		run := s[:j]
		s = s[j:]
		if len(run) < blobChars || !strings.ContainsAny(run, "abcdefghijklmnopqrstuvwxyz") ||
			!strings.ContainsAny(run, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.ContainsAny(run, "0123456789") {
			out.WriteString(run)
			continue
		}
		lo.Blobs++
		lo.BlobBytes += int64(len(run))
		out.WriteString("[base64, " + strconv.Itoa(len(run)) + " bytes]")
	}
	return out.String(), lo
}

// stripBlobs, which measures only the base64 runs through one byte in
// 256, replaces the runs and counts them as a scan of every run does.
func TestStripBlobsSampled(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	runeOf := func(kind int) byte {
		switch kind {
		case 0:
			return 'a' + byte(r.IntN(26))
		case 1:
			return 'A' + byte(r.IntN(26))
		case 2:
			return '0' + byte(r.IntN(10))
		case 3:
			return "+/=-_"[r.IntN(5)]
		}
		return " \n.,:\"é"[r.IntN(6)]
	}
	blobs := 0
	for i := 0; i < 3000; i++ {
		var b []byte
		for len(b) < r.IntN(3000) {
			// runs of base64 bytes of every length around blobChars,
			// some of one kind only, between other bytes
			n, kinds := r.IntN(blobChars*2), 1+r.IntN(4)
			for range n {
				b = append(b, runeOf(r.IntN(kinds)))
			}
			for range 1 + r.IntN(3) {
				b = append(b, runeOf(4))
			}
		}
		s := string(b)
		var x extractor
		want, lo := stripBlobsRef(s)
		if got := x.stripBlobs(s); got != want || x.leftOut != lo {
			t.Fatalf("stripBlobs(%q) = %q %+v, want %q %+v", s, got, x.leftOut, want, lo)
		}
		blobs += lo.Blobs
	}
	if blobs < 100 {
		t.Errorf("only %d blobs in the random texts", blobs)
	}
}
