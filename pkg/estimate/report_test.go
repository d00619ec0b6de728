package estimate

import (
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// MeasureFile reports what Measure gives on the fully loaded session, for
// every method (the lazy loader must not change a figure), and the
// session's shape: compactions planted, one token count per context
// message with perMessage.
func TestMeasureFileIsMeasureOnTheSession(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.jsonl")
	sessiongen.Write(t, file, sessiongen.Options{Seed: 5, Turns: 120, Compactions: 3, ToolResultBytes: 200})
	s := testkit.Load(t, file)
	defer s.Close()
	ctx := s.Context()
	for _, method := range Methods() {
		want, err := Measure(s, ctx, Options{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		got, err := MeasureFile(file, Options{Method: method}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got.Tokens != want.Tokens || got.Method != want.Method || got.ContextWindow != want.Window.Tokens || got.AnchorLine != want.AnchorLine {
			t.Errorf("%s: MeasureFile %d tokens (%s, window %d, anchor %d), Measure %d (%s, %d, %d)", method,
				got.Tokens, got.Method, got.ContextWindow, got.AnchorLine, want.Tokens, want.Method, want.Window.Tokens, want.AnchorLine)
		}
		if got.Compactions != 3 || got.Entries != len(s.Entries) || got.ContextMessages != len(ctx.Messages) || len(got.Messages) != len(ctx.Messages) {
			t.Errorf("%s: %d compactions, %d entries, %d context messages, %d per message; want 3, %d, %d, %d", method,
				got.Compactions, got.Entries, got.ContextMessages, len(got.Messages), len(s.Entries), len(ctx.Messages), len(ctx.Messages))
		}
	}
}
