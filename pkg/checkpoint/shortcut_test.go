package checkpoint

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// randomText joins n pieces drawn from pieces.
func randomText(r *rand.Rand, pieces []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	return b.String()
}

// truncateRunes is truncate as it was first written, by a rune slice.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// oneLine collapses only a prefix of a long text and truncate cuts
// without a rune slice; what they give is what collapsing the whole text
// and cutting a rune slice give, whatever the text's characters
// (multi-byte, invalid UTF-8, control characters, runs of whitespace)
// and wherever the prefix ends.
func TestOneLineOfAPrefixIsOfTheWholeText(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	pieces := []string{"a", "word ", "é", "中文", "😀", " ", "\n", "\t", "\r\n", "\x00", "\x1b[0m", "\xff", "\xe2\x82", "\u2028", "\uFEFF",
		strings.Repeat(" ", 300), strings.Repeat("\xff", 5)}
	for i := range 2000 {
		n := []int{shortReplyChars, GistChars, TopicChars, 400}[i%4]
		s := randomText(r, pieces, r.Intn(n))
		c := collapse(s)
		if got, want := oneLine(s, n), truncate(c, n); got != want {
			t.Fatalf("oneLine(%q, %d):\n got %q\nwant %q", s, n, got, want)
		}
		if got, want := truncate(c, n), truncateRunes(c, n); got != want {
			t.Fatalf("truncate(%q, %d):\n got %q\nwant %q", c, n, got, want)
		}
	}
}

// The pre-test of the checkbox expression never skips a text it matches.
func TestMayHaveCheckboxWhereverCheckboxMatches(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	pieces := []string{"[", "]", " ", "x", "X", "- ", "* ", "\n", "item", "[ ]", "[x]", "]["}
	matched := 0
	for range 20000 {
		s := randomText(r, pieces, r.Intn(30))
		if checkbox().MatchString(s) {
			matched++
			if !mayHaveCheckbox(s) {
				t.Fatalf("%q matches checkbox but mayHaveCheckbox says no", s)
			}
		}
	}
	if matched < 100 {
		t.Fatalf("only %d texts with a checkbox", matched)
	}
	for _, s := range []string{"", "no box", "[a] [", "[ x]", "[x", "]"} {
		if mayHaveCheckbox(s) {
			t.Errorf("mayHaveCheckbox(%q) = true", s)
		}
	}
}

// jsonString's cut for plain strings gives what json.Unmarshal gives.
func TestJSONStringIsUnmarshal(t *testing.T) {
	for _, v := range []string{`"a.go"`, `""`, `"bad` + "\xff" + `.go"`, `"esc\u0064.go"`, `"q\"x"`, `"中文/😀.go"`, `7`, `null`, `true`, `["a"]`, `{"a":"b"}`} {
		got, gok := jsonString([]byte(v))
		var want string
		wok := json.Unmarshal([]byte(v), &want) == nil
		if got != want || gok != wok {
			t.Errorf("jsonString(%q) = %q, %v; json.Unmarshal gives %q, %v", v, got, gok, want, wok)
		}
	}
}
