package budget_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/budget"
)

// realSessions are the vendored pi sessions and the real pi and OpenClaw
// transcripts of ../shared (skipped outside CI when absent).
func realSessions(t *testing.T) []string {
	files := oracle.Fixtures(t)
	wild := oracle.WildDir(t)
	for _, d := range []string{"pi", "openclaw"} {
		m, _ := filepath.Glob(filepath.Join(wild, d, "*.jsonl"))
		files = append(files, m...)
	}
	return files
}

// TestPlanRealSessions: on real transcripts (compactions, branches, tool
// loops, OpenClaw's own entries) the assembled request is a suffix of pi's
// context, no kept tool result lacks its call, and the emitted messages add
// up to the reported total.
func TestPlanRealSessions(t *testing.T) {
	for _, f := range realSessions(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := testkit.Load(t, f)
			defer s.Close()
			for _, w := range []int{16000, 200000} {
				r, err := budget.Plan(context.Background(), budget.Input{Session: s, Window: w, Config: budget.DefaultConfig(),
					SystemPrompt: "You are a coding agent.", HaveSystemPrompt: true, Workspace: "../../testdata/workspace"})
				if err != nil {
					t.Fatal(err)
				}
				ctx := s.Context()
				hist := r.Messages[2:]
				start := len(ctx.Messages) - len(hist)
				calls, dropped := map[string]bool{}, map[string]bool{}
				for _, m := range ctx.Messages[:start] {
					for _, id := range m.Entry.ToolCallIDs {
						dropped[id] = true
					}
				}
				sum := 0
				for i, m := range hist {
					e := ctx.Messages[start+i].Entry
					if m.EntryID != e.ID() || m.Line != e.Line {
						t.Fatalf("window %d: history message %d is line %d, context has line %d", w, i, m.Line, e.Line)
					}
					for _, id := range e.ToolCallIDs {
						calls[id] = true
					}
					if e.Role() == "toolResult" && !calls[e.ToolCallID] && dropped[e.ToolCallID] {
						t.Fatalf("window %d: the cut separated the tool result on line %d from its call", w, e.Line)
					}
					sum += m.Tokens
				}
				for _, m := range r.Messages {
					if m.Region != budget.RegionHistory {
						sum += m.Tokens
					}
				}
				if sum != r.TotalTokens || r.EmittedTokens != r.TotalTokens {
					t.Fatalf("window %d: messages %d, total %d, emitted %d", w, sum, r.TotalTokens, r.EmittedTokens)
				}
				if r.History.TokensOut > r.History.Budget && !r.History.RecentCut {
					t.Fatalf("window %d: kept %d tokens over the budget %d", w, r.History.TokensOut, r.History.Budget)
				}
			}
		})
	}
}
