package checkpoint

import (
	"math/rand"
	"strings"
	"testing"
)

// randomText joins n pieces drawn from pieces.
func randomText(r *rand.Rand, pieces []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	return b.String()
}

// oneLine collapses only a prefix of a long text; what it gives is what
// collapsing the whole text gives, whatever the text's characters
// (multi-byte, invalid UTF-8, control characters, runs of whitespace)
// and wherever the prefix ends.
func TestOneLineOfAPrefixIsOfTheWholeText(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	pieces := []string{"a", "word ", "é", "中文", "😀", " ", "\n", "\t", "\r\n", "\x00", "\x1b[0m", "\xff", "\xe2\x82", "\u2028", "\uFEFF",
		strings.Repeat(" ", 300), strings.Repeat("\xff", 5)}
	for i := range 2000 {
		n := []int{shortReplyChars, GistChars, TopicChars, 400}[i%4]
		s := randomText(r, pieces, r.Intn(n))
		if got, want := oneLine(s, n), truncate(collapse(s), n); got != want {
			t.Fatalf("oneLine(%q, %d):\n got %q\nwant %q", s, n, got, want)
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
		if checkbox.MatchString(s) {
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
