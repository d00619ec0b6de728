package prune

import (
	"testing"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/sources"
)

// A converted format's agent comes from its registration; prune and
// recall file a session by it when the path does not name the agent, so it
// must be one of sources' agent ids.
func TestFormatAgentsAreSourceAgents(t *testing.T) {
	for f, want := range map[formats.Format]sources.Agent{
		formats.ClaudeCode: sources.ClaudeCode, formats.Codex: sources.Codex, formats.CodexLegacy: sources.Codex,
		formats.Pi: "", formats.OpenClawSQLite: "", formats.Zstd: "", formats.Unknown: "",
	} {
		if got := sources.Agent(f.Agent()); got != want {
			t.Errorf("%s.Agent() = %q, want %q", f, got, want)
		}
	}
}
