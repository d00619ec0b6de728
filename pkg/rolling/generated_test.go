package rolling

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/models"
)

// generatedShapes are the session shapes the issue asks for, from the
// deterministic generator: tool-dense, CJK, earlier compactions (and
// branches), v1 files, plus the damaged-file edge cases.
func generatedShapes(t *testing.T) map[string]sessiongen.Options {
	t.Helper()
	shapes := map[string]sessiongen.Options{
		"cjk":                 {Seed: 21, Turns: 30, ToolCallsPerTurn: 4, ToolResultBytes: 1500, CJKShare: 0.9},
		"earlier-compactions": {Seed: 22, Turns: 40, ToolCallsPerTurn: 5, Compactions: 3, KeepTurns: 3, Branches: 2, BashExecutions: 3, CustomMessages: 2, ModelChanges: 1},
		"v1":                  {Seed: 23, Version: 1, Turns: 30, ToolCallsPerTurn: 5, Thinking: true, Compactions: 2, BashExecutions: 2, AbortedAssistants: 2},
		"v2":                  {Seed: 24, Version: 2, Turns: 20, ToolCallsPerTurn: 4, Compactions: 1},
	}
	for _, p := range []string{"tool-dense", "sample-v3", "sample-v1", "edge-glued", "edge-truncated", "edge-images", "edge-trailing-toolcall"} {
		o, err := sessiongen.PresetOptions(p)
		if err != nil {
			t.Fatal(err)
		}
		shapes[p] = o
	}
	return shapes
}

func TestRollGeneratedSessions(t *testing.T) {
	oracle.Require(t)
	for name, o := range generatedShapes(t) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name+".jsonl")
			sessiongen.Write(t, path, o)
			orig, _ := os.ReadFile(path)
			before := oracle.CheckOne(t, path)
			if !before.Loads {
				t.Fatalf("generated file does not load: %s", before.Error)
			}
			// Heuristic estimator: pi's own count must equal ours to the token.
			opts := Options{TargetUtilization: 0.5, MinKeepMessages: 10, EvictionNote: true, Force: true}
			rep := inWindow(newRoller(opts), before.HeuristicTokens).Roll(context.Background(), path)
			if !rep.Rolled && before.ContextMessages <= 2*opts.MinKeepMessages {
				t.Skipf("too small to roll: %+v", rep)
			}
			checkRolled(t, path, orig, before, rep, opts)

			// Then the best estimator on top, at a smaller target, twice.
			mid, _ := os.ReadFile(path)
			midCheck := oracle.CheckOne(t, path)
			r := newRoller(Options{TargetUtilization: 0.3, MinKeepMessages: 10, EvictionNote: true, Force: true})
			r.Size = estimate.Options{Window: models.Settings{ContextWindow: before.HeuristicTokens}}
			rep2 := r.Roll(context.Background(), path)
			if rep2.Error != "" {
				t.Fatal(rep2.Error)
			}
			if rep2.Rolled {
				checkRolled(t, path, mid, midCheck, rep2, r.Options)
			}
			again := r.Roll(context.Background(), path)
			if again.Rolled || again.Error != "" {
				t.Fatalf("third run rolled again: %+v", again)
			}
			t.Logf("%s v%d: heuristic %d → %d (evicted %d, kept %d); %s %d → %d (evicted %d, kept %d)", name, before.Version,
				rep.TokensBefore, rep.KeptTokens, rep.EvictedCount, rep.KeptMessages,
				rep2.Method, rep2.TokensBefore, rep2.KeptTokens, rep2.EvictedCount, rep2.KeptMessages)
		})
	}
}
