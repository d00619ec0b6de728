package budget_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/budget"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

type fakeSearch struct {
	hits  []recall.Hit
	query string
	opts  recall.SearchOptions
	err   error
}

func (f *fakeSearch) Search(_ context.Context, q string, o recall.SearchOptions) (*recall.Result, error) {
	f.query, f.opts = q, o
	if f.err != nil {
		return nil, f.err
	}
	return &recall.Result{Hits: f.hits}, nil
}

func TestFormatChunksSeedExample(t *testing.T) {
	got := budget.FormatChunks([]budget.Chunk{{Source: "memory/2024-01-15.md", Score: 0.85, Snippet: "User discussed project architecture decisions..."}})
	want := "<relevant-prior-context>\n<context source=\"memory/2024-01-15.md\" score=\"0.85\">\nUser discussed project architecture decisions...\n</context>\n</relevant-prior-context>"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if budget.FormatChunks(nil) != "" {
		t.Fatal("no chunks must give no block")
	}
}

func TestSelectChunksBudgetAndScores(t *testing.T) {
	long := strings.Repeat("The ledger moved to PostgreSQL 16. ", 200) // ~7,000 chars
	hits := []recall.Hit{
		{Path: "/s/a.jsonl", Citation: "a.jsonl#L3-L4", Score: 0.91, Snippet: "chose PostgreSQL 16 for the ledger"},
		{Path: "/s/b.jsonl", Citation: "b.jsonl#L9", Score: 0.42, Snippet: "low score, dropped"},
		{Path: "/s/c.jsonl", Citation: "c.jsonl#L1-L2", Score: 0.75, Snippet: long},
		{Path: "/s/d.jsonl", Citation: "d.jsonl#L5", Score: 0.70, Snippet: "never reached: the truncated chunk ends the block"},
	}
	for _, budgetTokens := range []int{50, 150, 600, 5000} {
		chunks := budget.SelectChunks(hits, 5, 0.6, budgetTokens)
		block := budget.FormatChunks(chunks)
		if ceil4(u16(block)) > budgetTokens {
			t.Fatalf("budget %d: block is %d tokens", budgetTokens, ceil4(u16(block)))
		}
		for _, c := range chunks {
			if c.Score < 0.6 {
				t.Fatalf("budget %d: chunk below minRelevanceScore: %+v", budgetTokens, c)
			}
		}
		switch budgetTokens {
		case 50: // the first hit fits; too little room left to cut the long one
			if len(chunks) != 1 {
				t.Fatalf("budget 50: %d chunks", len(chunks))
			}
		case 150, 600: // the long one is cut at a sentence end and ends the block
			sn := chunks[len(chunks)-1].Snippet
			if len(chunks) != 2 || !chunks[1].Truncated || !strings.HasSuffix(sn, " ...") || len(sn) < len(long)/20 {
				t.Fatalf("budget %d: %+v", budgetTokens, chunks)
			}
		case 5000:
			if len(chunks) != 3 || chunks[1].Truncated || chunks[2].Source != "d.jsonl#L5" {
				t.Fatalf("budget 5000: %+v", chunks)
			}
		}
	}
	if n := len(budget.SelectChunks(hits, 1, 0.6, 5000)); n != 1 {
		t.Fatalf("maxRetrievedChunks 1 gave %d chunks", n)
	}
}

// TestPlanSemanticHistory: the block is searched for the last user prompt,
// sized to 30% of the bootstrap budget, injected into the system prompt
// and counted there; hits made only of the preserved turns are skipped.
func TestPlanSemanticHistory(t *testing.T) {
	path, gen := generate(t, sessiongen.Options{Seed: 3, Turns: 12})
	s := testkit.Load(t, path)
	defer s.Close()
	lastUser := ""
	for i := len(gen.Context.Lines) - 1; i >= 0; i-- {
		if l := gen.Context.Lines[i]; gen.Lines[l-1].Role == "user" {
			m, _ := s.Message(s.Entries[indexOfLine(s, l)])
			lastUser = m.Text()
			break
		}
	}
	ownLast := gen.Context.Entries[len(gen.Context.Entries)-1]
	fs := &fakeSearch{hits: []recall.Hit{
		{Path: path, Citation: "s.jsonl#L99", Score: 0.99, Snippet: "already in the context", EntryIDs: []string{ownLast}},
		{Path: "/other.jsonl", Citation: "other.jsonl#L4-L6", Score: 0.8, Snippet: "Decision: use PostgreSQL 16 for the ledger."},
	}}
	const window = 40000
	r, err := budget.Plan(context.Background(), budget.Input{Session: s, Window: window, Config: budget.DefaultConfig(),
		SystemPrompt: "You are a coding agent.", HaveSystemPrompt: true, Searcher: fs, SessionPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if fs.query != lastUser || fs.opts.MaxResults != 10 {
		t.Fatalf("searched %q (max %d), want the last user prompt %q with 2×5 results", fs.query, fs.opts.MaxResults, lastUser)
	}
	_, bs, _, _, _ := seedAllocation(window)
	if r.Semantic.BudgetTokens != bs*3/10 {
		t.Fatalf("semantic budget %d, want 30%% of %d", r.Semantic.BudgetTokens, bs)
	}
	if len(r.Semantic.Chunks) != 1 || r.Semantic.Chunks[0].Source != "other.jsonl#L4-L6" {
		t.Fatalf("chunks %+v: the own preserved-turn hit must be skipped", r.Semantic.Chunks)
	}
	var sys string
	contentOf(t, r.Messages[0].Message, &sys)
	block := budget.FormatChunks(r.Semantic.Chunks)
	if sys != "You are a coding agent.\n\n"+block {
		t.Fatalf("system message:\n%s", sys)
	}
	if r.Actual.SemanticHistory != ceil4(u16(block)) || r.Actual.SystemPrompt != ceil4(u16(sys)) {
		t.Fatalf("actual %+v", r.Actual)
	}

	// A failing search is a warning, not an error.
	fs.err = fmt.Errorf("database is locked")
	r, err = budget.Plan(context.Background(), budget.Input{Session: s, Window: window, Config: budget.DefaultConfig(), Searcher: fs})
	if err != nil || len(r.Semantic.Chunks) != 0 || !strings.Contains(r.Semantic.Note, "database is locked") {
		t.Fatalf("failing search: %v %+v", err, r.Semantic)
	}
}

// TestPlanSemanticRealIndex searches a real recall index: an older session
// that talked about the same thing as the current prompt is recalled.
func TestPlanSemanticRealIndex(t *testing.T) {
	dir := t.TempDir()
	old, cur := recalltest.WritePriorDecision(t, dir)
	ix, err := recall.Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	// The older session is indexed; then (second pass) the current one
	// too, as after a cron 'ctxtool index': the prompt matches itself with
	// every keyword, which must not hide the older history the single-word
	// search finds.
	if _, err := ix.Index(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	for _, indexCurrent := range []bool{false, true} {
		if indexCurrent {
			if _, err := ix.Index(context.Background(), cur); err != nil {
				t.Fatal(err)
			}
		}
		planRecallsOld(t, ix, cur, old)
	}
}

func planRecallsOld(t *testing.T, ix *recall.Index, cur, old string) {
	t.Helper()
	s := testkit.Load(t, cur)
	defer s.Close()
	cfg := budget.DefaultConfig()
	cfg.SemanticHistory.MinRelevanceScore = 0.3
	r, err := budget.Plan(context.Background(), budget.Input{Session: s, Window: 200000, Config: cfg, Searcher: ix, SessionPath: cur})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range r.Semantic.Chunks {
		found = found || (c.Path == old && strings.Contains(c.Snippet, "PostgreSQL 16"))
		if c.Path == cur {
			t.Fatalf("the current prompt recalled itself: %+v", c)
		}
	}
	if !found {
		t.Fatalf("the older decision was not recalled: %+v", r.Semantic)
	}
}

func indexOfLine(s *transcript.Session, line int) int {
	for i, e := range s.Entries {
		if e.Line == line {
			return i
		}
	}
	return -1
}
