package recall

import (
	"reflect"
	"testing"
)

func TestWordSetMatchesTokenRe(t *testing.T) {
	for _, s := range []string{"", "a", "foo_bar baz-9 ünïcode 部署到生产 x/y.go", "  lead and trail  ", "tab\tnew\nline"} {
		want := map[string]bool{}
		for _, w := range tokenRe.FindAllString(s, -1) {
			want[w] = true
		}
		if got := wordSet(s); !reflect.DeepEqual(got, want) {
			t.Errorf("wordSet(%q) = %v, want %v", s, got, want)
		}
	}
}
