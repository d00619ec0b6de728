package formats_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Every real transcript in ../shared/fixtures/wild loads through the
// transcript core with its own format, no malformed line, a context, and
// entry lines that point at lines of the source file.
func TestWildFilesLoad(t *testing.T) {
	dir := oracle.WildDir(t)
	want := map[string]formats.Format{"claude-code": formats.ClaudeCode, "codex": formats.Codex,
		"openclaw": formats.Pi, "pi": formats.Pi}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	if len(files) < 13 {
		t.Fatalf("found %d wild files, want 13", len(files))
	}
	for _, f := range files {
		s, err := transcript.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		wf := want[filepath.Base(filepath.Dir(f))]
		if strings.Contains(f, "oldformat") {
			wf = formats.CodexLegacy
		}
		if s.Format() != wf {
			t.Errorf("%s: format %s, want %s", f, s.Format(), wf)
		}
		if len(s.Malformed) != 0 {
			t.Errorf("%s: %d malformed lines, e.g. %+v", f, len(s.Malformed), s.Malformed[0])
		}
		ctx := s.Context()
		if len(ctx.Messages) == 0 || ctx.HeuristicTokens() == 0 {
			t.Errorf("%s: empty context", f)
		}
		data, _ := os.ReadFile(f)
		lines := strings.Count(string(data), "\n")
		for _, e := range s.Entries {
			if e.Line < 1 || e.Line > lines {
				t.Errorf("%s: entry %s cites line %d of %d", f, e.ID, e.Line, lines)
				break
			}
		}
		s.Close()
	}
}

func loadWild(t *testing.T, rel string) *transcript.Session {
	t.Helper()
	s, err := transcript.Load(filepath.Join(oracle.WildDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Claude Code: the compact boundary + isCompactSummary line start the
// context; the summary is the compaction; the usage anchor is the last
// reply's input + cache_creation + cache_read.
func TestClaudeCodeCompactedSession(t *testing.T) {
	s := loadWild(t, "claude-code/spotter-4d5611e5-compact.jsonl")
	ctx := s.Context()
	if ctx.Compaction == nil || ctx.Compaction.Line != 755 {
		t.Fatalf("compaction in force: %+v, want the isCompactSummary line 755", ctx.Compaction)
	}
	if ctx.Messages[0].Role != "compactionSummary" || ctx.Compaction.TokensBefore != 170251 {
		t.Errorf("first message %s, tokensBefore %d; want compactionSummary, 170251 (preTokens)", ctx.Messages[0].Role, ctx.Compaction.TokensBefore)
	}
	for _, m := range ctx.Messages[1:] {
		if m.Entry.Line < 755 {
			t.Fatalf("message from line %d is before the compaction", m.Entry.Line)
		}
	}
	u := ctx.EstimateContextTokens()
	// Last assistant reply in the file (line 1508): input 1, cache_creation 1034, cache_read 105025.
	last := lastAssistant(ctx)
	if last == nil || u.UsageTokens != last.Usage.Input+last.Usage.CacheWrite+last.Usage.CacheRead {
		t.Fatalf("usage anchor %d, last reply %+v", u.UsageTokens, last)
	}
	if u.UsageTokens != 106060 {
		t.Errorf("usage anchor %d, want 106060 (1 + 1034 + 105025 on the last reply)", u.UsageTokens)
	}
}

func lastAssistant(ctx *transcript.Context) *transcript.Entry {
	for i := len(ctx.Messages) - 1; i >= 0; i-- {
		if ctx.Messages[i].Role == "assistant" {
			return ctx.Messages[i].Entry
		}
	}
	return nil
}

// Parallel tool calls: lines 29/30 are two tool_use blocks of one message;
// their results (32, 33) hang off different blocks. Both results and both
// calls are in the context, as one assistant message.
func TestClaudeCodeParallelToolResults(t *testing.T) {
	s := loadWild(t, "claude-code/spotter-tool-heavy.jsonl")
	ctx := s.Context()
	lines := map[int]string{}
	for _, m := range ctx.Messages {
		lines[m.Entry.Line] = m.Role
	}
	if lines[27] != "assistant" || lines[32] != "toolResult" || lines[33] != "toolResult" {
		t.Fatalf("context lines %v: want the merged assistant (27) and both parallel results (32, 33)", lines)
	}
	for _, l := range []int{28, 29, 30} {
		if _, ok := lines[l]; ok {
			t.Errorf("block line %d should be merged into line 27's message", l)
		}
	}
	for _, m := range ctx.Messages {
		if m.Entry.Line == 27 && len(m.Entry.ToolCallIDs) != 2 {
			t.Errorf("merged message has tool calls %v, want 2", m.Entry.ToolCallIDs)
		}
	}
}

// Codex: the compacted line replaces the history; usage is
// last_token_usage.total_tokens of the last token_count; the window is
// model_context_window.
func TestCodexCompactedRollout(t *testing.T) {
	s := loadWild(t, "codex/quelklef-shellws-rollout-compacted.jsonl")
	ctx := s.Context()
	if ctx.Compaction == nil || ctx.Compaction.Line != 1821 {
		t.Fatalf("compaction %+v, want line 1821", ctx.Compaction)
	}
	for _, m := range ctx.Messages {
		if m.Entry.Line < 1821 {
			t.Fatalf("message from line %d precedes the compacted line", m.Entry.Line)
		}
	}
	if u := ctx.EstimateContextTokens(); u.UsageTokens != 95164 {
		t.Errorf("usage anchor %d, want 95164 (last_token_usage.total_tokens, line 2310)", u.UsageTokens)
	}
	if s.Header.ContextWindow != 258400 {
		t.Errorf("window %d, want 258400", s.Header.ContextWindow)
	}
}

// Codex 0.3x writes token_count before the reply it measures.
func TestCodexEarlyTokenCount(t *testing.T) {
	s := loadWild(t, "codex/monotoba-openprintkit-rollout-2025-10-31.jsonl")
	u := s.Context().EstimateContextTokens()
	if u.UsageTokens != 271458 {
		t.Errorf("usage anchor %d, want 271458 (token_count of line 1607, for the reply at 1608)", u.UsageTokens)
	}
}

func TestCodexLegacyShape(t *testing.T) {
	s := loadWild(t, "codex/jaydenxsoe-ocodex-rollout-2025-08-26-oldformat.jsonl")
	if s.Format() != formats.CodexLegacy || s.Header.ID != "41237214-385b-4ac4-8b13-728d2bf57441" {
		t.Fatalf("format %s header %+v", s.Format(), s.Header)
	}
	roles := map[string]int{}
	for _, m := range s.Context().Messages {
		roles[m.Role]++
	}
	if roles["toolResult"] != 111 || roles["user"] != 14 {
		t.Errorf("roles %v, want 111 tool results and 14 user messages", roles)
	}
}

// A subagent transcript's first lines point at the main session's uuids
// (here lines 1–3, each at a different one): they are roots, so nothing
// reports a broken parent, and the path runs from line 3 to the leaf.
func TestClaudeCodeSubagentStartsAtItsFirstLine(t *testing.T) {
	s := loadWild(t, "claude-code/spotter-4d5611e5-agent-acompact.jsonl")
	for _, e := range s.Entries {
		if e.ParentID != "" && s.ByID(e.ParentID) == nil {
			t.Errorf("entry at line %d has parent %s, which is not in the file", e.Line, e.ParentID)
		}
	}
	if p := s.Branch(); len(p) != 3 || p[0].Line != 3 || p[0].ParentID != "" {
		t.Errorf("path of %d entries from line %d, want 3 from the root at line 3", len(p), p[0].Line)
	}
}
