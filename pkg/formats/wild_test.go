package formats_test

import (
	"os"
	"path/filepath"
	"strconv"
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
				t.Errorf("%s: entry %s cites line %d of %d", f, e.ID(), e.Line, lines)
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
	if ctx.Messages[0].Role != "compactionSummary" || ctx.Compaction.TokensBefore() != 170251 {
		t.Errorf("first message %s, tokensBefore %d; want compactionSummary, 170251 (preTokens)", ctx.Messages[0].Role, ctx.Compaction.TokensBefore())
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
		if e.ParentID() != "" && s.ByID(e.ParentID()) == nil {
			t.Errorf("entry at line %d has parent %s, which is not in the file", e.Line, e.ParentID())
		}
	}
	if p := s.Branch(); len(p) != 3 || p[0].Line != 3 || p[0].ParentID() != "" {
		t.Errorf("path of %d entries from line %d, want 3 from the root at line 3", len(p), p[0].Line)
	}
}

// A tool result written between two blocks of one message (Claude Code runs
// a tool while the model streams the next block): lines 34 and 37 share a
// message.id with result 36 between them. They are one assistant message
// with both calls and line 37's usage, followed by both results in order,
// as the next request sends them — not two replies of which the second
// looks "flat" (same prompt although a result was added).
func TestClaudeCodeResultBetweenBlocksOfOneMessage(t *testing.T) {
	s := loadWild(t, "claude-code/spotter-tool-heavy.jsonl")
	checkInterleavedMerge(t, s, 34, 37, 36, 38)
}

func checkInterleavedMerge(t *testing.T, s *transcript.Session, first, second, resA, resB int) {
	t.Helper()
	ctx := s.Context()
	var order []int
	for _, m := range ctx.Messages {
		order = append(order, m.Entry.Line)
		if m.Entry.Line == second {
			t.Fatalf("line %d is a message of its own: %v", second, order)
		}
	}
	for i, l := range order {
		if l != first {
			continue
		}
		m := ctx.Messages[i].Entry
		if len(m.ToolCallIDs) != 2 || i+2 >= len(order) || order[i+1] != resA || order[i+2] != resB {
			t.Fatalf("message %d has calls %v, followed by lines %v; want 2 calls then results %d, %d", first, m.ToolCallIDs, order[i+1:min(len(order), i+3)], resA, resB)
		}
		return
	}
	t.Fatalf("no message from line %d in %v", first, order)
}

// The same shape, written here, checked without ../shared.
func TestClaudeCodeResultBetweenBlocksGenerated(t *testing.T) {
	line := func(typ, uuid, parent, body string) string {
		p := `null`
		if parent != "" {
			p = `"` + parent + `"`
		}
		return `{"type":"` + typ + `","uuid":"` + uuid + `","parentUuid":` + p + `,"sessionId":"s1","cwd":"/w","timestamp":"2026-03-02T09:00:00.000Z","isSidechain":false,` + body + "}\n"
	}
	usage := func(out int) string {
		return `"usage":{"input_tokens":5,"cache_read_input_tokens":1000,"cache_creation_input_tokens":0,"output_tokens":` + strconv.Itoa(out) + `}`
	}
	src := line("user", "u1", "", `"message":{"role":"user","content":"list both dirs"}`) +
		line("assistant", "a1", "u1", `"message":{"id":"msg_X","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls a"}}],`+usage(10)+`}`) +
		line("progress", "p1", "a1", `"data":{}`) +
		line("user", "r1", "p1", `"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x.go"}]}`) +
		line("assistant", "a2", "r1", `"message":{"id":"msg_X","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls b"}}],`+usage(30)+`}`) +
		line("user", "r2", "a2", `"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"y.go"}]}`) +
		line("assistant", "a3", "r2", `"message":{"id":"msg_Y","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"x.go and y.go"}],`+usage(8)+`}`)
	p := filepath.Join(t.TempDir(), "cc.jsonl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := transcript.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Format() != formats.ClaudeCode {
		t.Fatalf("read as %v", s.Format())
	}
	checkInterleavedMerge(t, s, 2, 5, 4, 6)
	for _, m := range s.Context().Messages {
		if m.Entry.Line == 2 && (m.Entry.Usage == nil || m.Entry.Usage.Output != 30) {
			t.Errorf("merged message usage %+v, want the last block's (output 30)", m.Entry.Usage)
		}
	}
}
