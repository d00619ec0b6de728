package compaction

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// checkWritten proves through pi's own loader that a compacted file is
// sound: it loads, the context starts with our summary, no tool result
// lost its call, no new unanswered call, the original bytes are untouched
// and pi rebuilds exactly the tokens we reported.
func checkWritten(t *testing.T, orig []byte, before oracle.Result, file string, res *Result, truncated bool) oracle.Result {
	t.Helper()
	after := testkit.ReadFile(t, file)
	if !truncated && !bytes.HasPrefix(after, orig) {
		t.Fatalf("%s: the original bytes changed", file)
	}
	if !truncated && bytes.Count(bytes.TrimPrefix(after[len(orig):], []byte("\n")), []byte("\n")) != 1 {
		t.Fatalf("%s: expected exactly one appended line, got %q", file, after[len(orig):])
	}
	r := oracle.CheckOne(t, file)
	if !r.Loads {
		t.Fatalf("%s: pi cannot load it: %s", file, r.Error)
	}
	if r.FirstRole != "compactionSummary" {
		t.Fatalf("%s: context starts with %s", file, r.FirstRole)
	}
	if r.OrphanToolResults != 0 {
		t.Fatalf("%s: %d orphaned tool results after compaction", file, r.OrphanToolResults)
	}
	if r.OrphanToolCalls > before.OrphanToolCalls {
		t.Fatalf("%s: orphaned tool calls went from %d to %d", file, before.OrphanToolCalls, r.OrphanToolCalls)
	}
	if r.BrokenParents != 0 {
		t.Fatalf("%s: %d broken parents", file, r.BrokenParents)
	}
	if r.HeuristicTokens != res.TokensAfter {
		t.Fatalf("%s: pi rebuilds %d tokens, we reported tokensAfter %d", file, r.HeuristicTokens, res.TokensAfter)
	}
	if r.ContextMessages != res.KeptMessages+1 {
		t.Fatalf("%s: pi rebuilds %d messages, we reported %d kept + summary", file, r.ContextMessages, res.KeptMessages)
	}
	if r.LastCompaction == nil || strings.TrimSpace(r.LastCompaction.Summary) == "" {
		t.Fatalf("%s: pi sees no (or an empty) compaction", file)
	}
	if res.TokensAfter >= res.TokensBefore {
		t.Fatalf("%s: nothing reclaimed: %d → %d", file, res.TokensBefore, res.TokensAfter)
	}
	return r
}

func TestFixturesAllStrategiesExtractive(t *testing.T) {
	oracle.Require(t)
	files := oracle.Fixtures(t)
	samples, _ := filepath.Glob(filepath.Join(oracle.ModuleRoot(), "testdata", "*.jsonl"))
	files = append(files, samples...)
	for _, fx := range files {
		for _, strategy := range strategies {
			fx, strategy := fx, strategy
			t.Run(filepath.Base(fx)+"/"+strategy, func(t *testing.T) {
				t.Parallel()
				file := testkit.CopyToTemp(t, fx)
				orig, _ := os.ReadFile(file)
				before := oracle.CheckOne(t, file)
				keep := 20000
				if strings.HasPrefix(filepath.Base(fx), "edge-") || filepath.Base(fx) == "sample-v1.jsonl" {
					keep = 3000 // small sessions
				}
				res, err := CompactFile(context.Background(), file, Options{
					Settings:   Settings{Strategy: strategy, Force: true, QualityGuard: true, KeepRecentTokens: keep},
					Summarizer: Extractive{},
				})
				if strings.Contains(fx, "d5dde00") {
					// ends with a compaction: refused, file untouched
					if err != nil || res.Compacted || !strings.Contains(res.Reason, "already compacted") {
						t.Fatalf("want a clean refusal, got %+v, %v", res, err)
					}
					if now, _ := os.ReadFile(file); !bytes.Equal(now, orig) {
						t.Fatal("file changed on refusal")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !res.Compacted {
					t.Fatalf("not compacted: %s", res.Reason)
				}
				r := checkWritten(t, orig, before, file, res, false)
				t.Logf("%s %s: %d → %d tokens, summarized %d kept %d, summary %d tokens, kept est %d (%s)",
					filepath.Base(fx), strategy, res.TokensBefore, res.TokensAfter, res.SummarizedMessages, res.KeptMessages,
					res.SummaryTokens, res.KeptTokensEstimated, res.Estimator)
				_ = r
			})
		}
	}
}

// A previous compaction's kept region must be summarised or kept again.
func TestPreviousKeptRegionIsNotLost(t *testing.T) {
	oracle.Require(t)
	fx := oracle.Fixture("pi-v1-before-compaction.jsonl")
	s := testkit.Load(t, fx)
	p, err := Prepare(s, Settings{Force: true})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if p.PrevCompaction == nil {
		t.Fatal("expected a previous compaction")
	}
	first := p.Path[p.BoundaryStart]
	if first.ID() != p.PrevCompaction.FirstKeptEntryID() {
		t.Fatalf("boundary starts at line %d, previous compaction kept from %s", first.Line, p.PrevCompaction.FirstKeptEntryID())
	}
	// every message of the current context is either summarised or kept
	covered := map[*transcript.Entry]bool{}
	for _, e := range append(append(append([]*transcript.Entry{}, p.Summarize...), p.TurnPrefix...), p.Kept...) {
		covered[e] = true
	}
	for _, m := range p.Before.Messages {
		if m.Role == "compactionSummary" {
			continue
		}
		if !covered[m.Entry] {
			t.Fatalf("line %d (%s) is in the context but neither summarised nor kept", m.Entry.Line, m.Role)
		}
	}
	if p.PreviousSummary == "" {
		t.Fatal("previous summary not carried")
	}
}
