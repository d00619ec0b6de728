package recalltest

import (
	"bytes"
	"io"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// EveryFormatLines are the pi JSONL lines of generated sessions of every
// format recall reads: pi v1, v2 and v3 (compactions, branches, CJK,
// thinking, bash and custom messages, glued lines, a torn tail), and
// Claude Code and Codex sessions translated line by line as recall
// translates them. An equality test between an old and a new way of
// reading lines runs over them.
func EveryFormatLines(t testing.TB) [][]byte {
	t.Helper()
	var lines [][]byte
	for v := 1; v <= 3; v++ {
		var buf bytes.Buffer
		_, err := sessiongen.Generate(&buf, sessiongen.Options{
			Seed: uint64(70 + v), Version: v, Turns: 60, Compactions: 2, Branches: 2, CJKShare: 0.2,
			Thinking: true, BashExecutions: 3, CustomMessages: 2, GluedLines: 2, TruncatedTail: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(buf.Bytes(), []byte("\n"))...)
	}
	agents := []struct {
		format formats.Format
		gen    func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)
	}{{formats.ClaudeCode, sessiongen.GenerateClaudeCode}, {formats.Codex, sessiongen.GenerateCodex}}
	for _, a := range agents {
		var buf bytes.Buffer
		if _, err := a.gen(&buf, sessiongen.AgentOptions{Seed: 7, Turns: 30, Thinking: true, Compactions: 2}); err != nil {
			t.Fatal(err)
		}
		conv := formats.NewLineConverter(a.format)
		for i, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
			pl, _ := conv.Convert(i+1, l)
			lines = append(lines, pl...)
		}
	}
	return lines
}
