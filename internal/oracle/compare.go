package oracle

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// CompareWithPi loads files with ctxtool and with pi's own loader and demands
// the same context, message by message: count, roles, lines, per-message
// heuristic tokens, the usage-anchored total, malformed lines, model and
// thinking level.
func CompareWithPi(t *testing.T, files []string) {
	t.Helper()
	results := Check(t, true, false, files...)
	for i, f := range files {
		pi := results[i]
		name := filepath.Base(f)
		if !pi.Loads {
			t.Errorf("%s: pi does not load it: %s", name, pi.Error)
			continue
		}
		s, err := transcript.Load(f)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ctx := s.Context()
		if len(ctx.Messages) != pi.ContextMessages {
			t.Errorf("%s: %d context messages, pi %d", name, len(ctx.Messages), pi.ContextMessages)
		}
		if got := ctx.HeuristicTokens(); got != pi.HeuristicTokens {
			t.Errorf("%s: heuristic %d, pi %d", name, got, pi.HeuristicTokens)
		}
		if got := ctx.EstimateContextTokens().Tokens; got != pi.UsageTokens {
			t.Errorf("%s: usage estimate %d, pi %d", name, got, pi.UsageTokens)
		}
		var mal []int
		for _, m := range s.Malformed {
			mal = append(mal, m.Line)
		}
		if fmt.Sprint(mal) != fmt.Sprint(pi.MalformedLines) && !(len(mal) == 0 && len(pi.MalformedLines) == 0) {
			t.Errorf("%s: malformed %v, pi %v", name, mal, pi.MalformedLines)
		}
		if len(s.Entries) != pi.Entries {
			t.Errorf("%s: %d entries, pi %d", name, len(s.Entries), pi.Entries)
		}
		if ctx.ThinkingLevel != pi.ThinkingLevel {
			t.Errorf("%s: thinking level %q, pi %q", name, ctx.ThinkingLevel, pi.ThinkingLevel)
		}
		if (ctx.Model == nil) != (pi.Model == nil) || (ctx.Model != nil && (ctx.Model.ModelID != pi.Model.ModelID || ctx.Model.Provider != pi.Model.Provider)) {
			t.Errorf("%s: model %+v, pi %+v", name, ctx.Model, pi.Model)
		}
		if len(pi.Messages) == len(ctx.Messages) {
			for j, m := range ctx.Messages {
				pm := pi.Messages[j]
				if m.Role != pm.Role || m.Tokens() != pm.Tokens || (pm.Line != 0 && m.Entry.Line != pm.Line) {
					t.Errorf("%s: message %d: ctxtool line %d %s %d tokens, pi line %d %s %d", name, j,
						m.Entry.Line, m.Role, m.Tokens(), pm.Line, pm.Role, pm.Tokens)
					break
				}
			}
		}
		s.Close()
	}
}
