package transcript_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A Claude Code transcript as 2.1.1xx–2.1.3xx write it (testdata/current,
// hand-made to the shapes in shared/docs/agents-offline.md): a
// permission-mode first line, the new record types, tool results written
// before their tool calls, two compactions. The context is what Claude
// Code sends next: the second summary and the turn after it, each result
// after its call — no stale results, no orphan at the head.
func TestClaudeCodeCurrentShape(t *testing.T) {
	s, err := transcript.Load("../../testdata/current/claude-code-2.1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	checkCurrentCC(t, s)
	// One unknown record type, reported once, by name.
	var unknown []string
	for _, n := range s.Notes() {
		if strings.Contains(n, "future-record") {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) != 1 || !strings.Contains(unknown[0], "1 record") {
		t.Errorf("notes %q: want one note counting the 1 future-record line", s.Notes())
	}
	for _, n := range s.Notes() {
		for _, known := range []string{"permission-mode", "ai-title", "last-prompt", "agent-name", "api-request-blob", "attachment"} {
			if strings.Contains(n, known) {
				t.Errorf("note %q names a record type Claude Code writes and ctxtool knows", n)
			}
		}
	}

	// The same file without its first line reads the same.
	b, err := os.ReadFile("../../testdata/current/claude-code-2.1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, b[strings.IndexByte(string(b), '\n')+1:], 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := transcript.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	checkCurrentCC(t, s2)
}

func checkCurrentCC(t *testing.T, s *transcript.Session) {
	t.Helper()
	c := s.Context()
	var got []string
	for _, m := range c.Messages {
		msg, err := s.Message(m.Entry)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Role+":"+firstWords(msg.Text()))
	}
	want := []string{"compactionSummary:This session is being continued from a previous conversation. Summary two",
		"user:Run the tests", "assistant:", "toolResult:FAIL: TestParse", "assistant:The tests fail in TestParse."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("context\n got %q\nwant %q", got, want)
	}
	if c.Compaction == nil || c.Compaction.TokensBefore() != 176480 {
		t.Errorf("compaction %v: want the second one, tokensBefore 176480 (compactMetadata.preTokens)", c.Compaction)
	}
}

func firstWords(s string) string {
	if i := strings.Index(s, ": a.txt"); i > 0 {
		s = s[:i]
	}
	if i := strings.Index(s, " (0.01s)"); i > 0 {
		s = s[:i]
	}
	return s
}

// A Codex 0.171 rollout (hand-made, testdata/current): token_count
// records come twice (one per rate-limit bucket). A repeat measured no
// new call: it is nobody's usage — not the next reply's, not an
// interrupted reply's. The window is the file's model_context_window.
func TestCodexCurrentShape(t *testing.T) {
	s, err := transcript.Load("../../testdata/current/codex-0.171.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var totals []int
	for _, e := range s.Entries {
		if e.Type() == "message" && e.Role() == "assistant" {
			n := -1
			if e.Usage != nil {
				n = e.Usage.TotalTokens
			}
			totals = append(totals, n)
		}
	}
	// The interrupted last reply has no record of its own: no usage (the
	// pi view writes zeros, which pi and ctxtool read as none).
	if fmt.Sprint(totals) != "[1000 1200 1300 0]" && fmt.Sprint(totals) != "[1000 1200 1300 -1]" {
		t.Errorf("assistant usage totals %v, want [1000 1200 1300 none]", totals)
	}
	if s.Header.ContextWindow != 258400 || s.Header.WindowSource != "Codex model_context_window" {
		t.Errorf("window %d from %q, want 258400 from Codex model_context_window", s.Header.ContextWindow, s.Header.WindowSource)
	}
}

// Claude Code's automatic compactions are evidence of the window it ran
// with: claude-opus-4-6 is 1M in the model table, but Claude Code
// compacted at 171,204 tokens, so its window was 200k.
func TestClaudeCodeWindowFromCompactions(t *testing.T) {
	s, err := transcript.Load("../../testdata/current/claude-code-2.1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Header.ContextWindow != 200000 || !strings.Contains(s.Header.WindowSource, "auto-compaction at 171204") {
		t.Errorf("window %d from %q, want 200000 from the auto-compaction at 171204", s.Header.ContextWindow, s.Header.WindowSource)
	}
}
