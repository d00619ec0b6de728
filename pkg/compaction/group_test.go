package compaction

import (
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/facts"
)

// Bare identifiers share one line per kind, in order; sentences, lone
// identifiers of a kind and carried sentences keep a line each; every value
// is rendered verbatim exactly once.
func TestGroupBareIdentifiers(t *testing.T) {
	id := func(kind, v string) item {
		return item{slot: slotContext, text: v, fact: &facts.Fact{Class: facts.Identifier, Kind: kind, Value: v}}
	}
	items := []item{
		id("hash", "5a3eb40"),
		{slot: slotContext, text: "The tenant id is 4e4beb4e-3012-4165-b650-a1e3bc8cde8d.",
			fact: &facts.Fact{Class: facts.Identifier, Kind: "uuid", Value: "4e4beb4e-3012-4165-b650-a1e3bc8cde8d"}},
		id("path", "pkg/compactor/record.go"),
		id("hash", "6838135"),
		id("url", "https://queue.internal:8684/api"),
		{slot: slotContext, text: "a1b2c3d"}, // carried from an earlier summary
		{slot: slotContext, text: "Carried: the loader retries twice."},
		id("path", "api/token/router.go"),
		id("hash", "bfa6b1f"),
	}
	got := groupBareIdentifiers(items)
	want := []string{
		"The tenant id is 4e4beb4e-3012-4165-b650-a1e3bc8cde8d.",
		"Carried: the loader retries twice.",
		"Hashes: 5a3eb40, 6838135, bfa6b1f",
		"Files: pkg/compactor/record.go, api/token/router.go",
		"https://queue.internal:8684/api",
		"a1b2c3d",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	corpus := facts.NewCorpus(strings.Join(got, "\n"))
	for _, it := range items {
		if it.fact != nil && !corpus.Has(*it.fact) {
			t.Errorf("grouping lost %q", it.fact.Value)
		}
	}
}
