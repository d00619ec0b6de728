package formats_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// BenchmarkDecode reads an 8 MB Claude Code transcript and an 8 MB Codex
// rollout (internal/sessiongen, with thinking and 8 compactions) into pi
// lines, as estimate does: the per-field decoders of claudecode/ and
// codex/ over conv.Dec, the converters, and the JSON writer, end to end.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name string
		gen  func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)
	}{
		{"cc.jsonl", sessiongen.GenerateClaudeCode},
		{"codex.jsonl", sessiongen.GenerateCodex},
	} {
		var src bytes.Buffer
		if _, err := c.gen(&src, sessiongen.AgentOptions{Seed: 3, TargetBytes: 8 << 20, Thinking: true, Compactions: 8}); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(src.Len()))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				v, err := formats.OpenReader(c.name, bytes.NewReader(src.Bytes()), func(*formats.Produced) {})
				if err != nil {
					b.Fatal(err)
				}
				v.Close()
			}
		})
	}
}
