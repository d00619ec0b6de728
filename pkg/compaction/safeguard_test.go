package compaction

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

func loadAll(t *testing.T, file string) (*transcript.Session, []*Msg) {
	t.Helper()
	s := testkit.Load(t, file)
	t.Cleanup(func() { s.Close() })
	msgs, err := loadMsgs(s, s.Branch())
	if err != nil {
		t.Fatal(err)
	}
	return s, msgs
}

// No chunk or split part may hold a tool call without its results.
func TestChunksNeverSplitToolGroups(t *testing.T) {
	_, msgs := loadAll(t, scenarios(t)["tool-dense"])
	count := func(m *Msg) int { return m.E.Tokens() }
	check := func(label string, parts [][]*Msg) {
		n := 0
		for _, p := range parts {
			calls := map[string]bool{}
			for _, m := range p {
				for _, id := range m.E.ToolCallIDs {
					calls[id] = true
				}
				if m.Role() == "toolResult" && !calls[m.E.ToolCallID] {
					t.Fatalf("%s: result of %s separated from its call", label, m.E.ToolCallID)
				}
			}
			n += len(p)
		}
		if n != len(msgs) {
			t.Fatalf("%s: %d messages in parts, %d in", label, n, len(msgs))
		}
	}
	for _, max := range []int{50, 300, 1000, 5000} {
		check("chunkByMaxTokens", chunkByMaxTokens(msgs, max, count))
	}
	for _, parts := range []int{2, 3, 5} {
		got := splitByTokenShare(msgs, parts, count)
		if len(got) > parts {
			t.Fatalf("%d parts asked, %d made", parts, len(got))
		}
		check("splitByTokenShare", got)
	}
	kept, dropped := pruneHistory(msgs, 2000, count)
	check("pruneHistory", [][]*Msg{dropped, kept})
}

func TestAdaptiveChunkRatio(t *testing.T) {
	_, msgs := loadAll(t, scenarios(t)["huge-results"])
	if r := adaptiveChunkRatio(msgs, 200000, func(m *Msg) int { return m.E.Tokens() }); r != baseChunkRatio {
		t.Fatalf("small average: ratio %v", r)
	}
	if r := adaptiveChunkRatio(msgs, 20000, func(m *Msg) int { return m.E.Tokens() }); math.Abs(r-minChunkRatio) > 1e-9 {
		t.Fatalf("large average: ratio %v, want the floor %v", r, minChunkRatio)
	}
}

// Messages larger than half the window are noted and left out; the summary
// keeps its sections whole and stays within 16,000 characters.
func TestSafeguardOversizedAndCap(t *testing.T) {
	f := testkit.CopyToTemp(t, scenarios(t)["huge-results"])
	res, err := CompactFile(context.Background(), f, Options{Settings: Settings{Strategy: StrategySafeguard, Force: true, KeepRecentTokens: 3000,
		RecentTurnsPreserve: -1}, Summarizer: Extractive{}, Size: estimate.Options{Window: models.Settings{ContextWindow: 100000}}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	o := res.Outcome()
	if o.Omitted == 0 || !strings.Contains(res.Summary, "too large to summarise") {
		t.Fatalf("omitted %d; summary: %.400s", o.Omitted, res.Summary)
	}
	if u16len(res.Summary) > MaxSummaryChars {
		t.Fatalf("%d chars", u16len(res.Summary))
	}
	for _, h := range append(LayoutSafeguard.Headings(), "<modified-files>") {
		if !strings.Contains(res.Summary, h) {
			t.Fatalf("summary lacks %s", h)
		}
	}
}

func TestAssembleKeepsSuffixWhole(t *testing.T) {
	body := strings.Repeat("body text ", 3000)
	suffix := "## Tool failures\n- bash: boom"
	out := assemble(body, "", suffix, "<read-files>\na.go\n</read-files>")
	if u16len(out) > MaxSummaryChars || !strings.HasSuffix(out, "<read-files>\na.go\n</read-files>") ||
		!strings.Contains(out, suffix) || !strings.Contains(out, truncationMarker) {
		t.Fatalf("len %d, tail %q", u16len(out), out[len(out)-120:])
	}
}

func TestExtractiveKeepsIdentifiersAndIsDeterministic(t *testing.T) {
	s, msgs := loadAll(t, scenarios(t)["tool-dense"])
	_ = s
	req := &Request{Kind: KindHistory, Layout: LayoutSafeguard, Messages: msgs, MaxChars: 16000}
	a, err := Extractive{}.Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Extractive{}.Summarize(context.Background(), req)
	if a != b {
		t.Fatal("extractive summary is not deterministic")
	}
	for _, want := range []string{"ENG-1005", "pkg/svc5/handler_test.go", "## Exact identifiers", "Task 0: please fix"} {
		if !strings.Contains(a, want) {
			t.Fatalf("summary lacks %q", want)
		}
	}
	if u16len(a) > 16000 {
		t.Fatalf("%d chars", u16len(a))
	}
}

// Oversized messages in both the history and a split turn's prefix are
// left out and counted; the two are summarised concurrently, so this also
// guards (under -race) against both sides updating the outcome at once.
func TestSafeguardOversizedInHistoryAndTurnPrefix(t *testing.T) {
	g := newGen(3)
	huge := strings.Repeat("2026-03-02 09:00:00 INFO query ok rows=12 latency=3ms\n", 1000)
	g.user("Task 0: dump the access log of pkg/svc0.")
	c0 := call{id: "toolu_h0", name: "bash", cmd: "cat access.log"}
	g.assistant("Reading the log.", []call{c0})
	g.result(c0, huge, false)
	g.assistant("Done with task 0: the log shows no errors.", nil)
	g.user("Task 1: dump the database log and then check each service.")
	c1 := call{id: "toolu_h1", name: "bash", cmd: "cat db.log"}
	g.assistant("Reading the database log.", []call{c1})
	g.result(c1, huge, false)
	for j := 0; j < 6; j++ {
		c := call{id: fmt.Sprintf("toolu_s%d", j), name: "read", path: fmt.Sprintf("pkg/svc%d/main.go", j)}
		g.assistant(fmt.Sprintf("Checking service %d.", j), []call{c})
		g.result(c, para(2), false)
	}
	g.assistant("All services checked.", nil)
	f := g.write(t, "oversized.jsonl")
	res, err := CompactFile(context.Background(), f, Options{Settings: Settings{Strategy: StrategySafeguard, Force: true, KeepRecentTokens: 500,
		MaxHistoryShare: 0.9, RecentTurnsPreserve: -1}, Summarizer: Extractive{}, Size: estimate.Options{Method: estimate.Heuristic, Window: models.Settings{ContextWindow: 20000}}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.SplitTurn || res.Outcome() == nil {
		t.Fatalf("want a split turn, got %+v", res)
	}
	if o := res.Outcome(); o.Omitted != 2 {
		t.Fatalf("omitted %d messages, want 2 (one in the history, one in the turn prefix)", o.Omitted)
	}
}
