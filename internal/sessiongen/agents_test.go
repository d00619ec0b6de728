package sessiongen

import (
	"bytes"
	"io"
	"testing"
)

// With a target size, an agent file's compactions are spread over its
// bytes as pi's are (bench/formats.sh compares the formats at one cadence):
// all of them written, one per TargetBytes/Compactions within a turn or so.
func TestAgentCompactionsSpreadOverBytes(t *testing.T) {
	const size, n = 4 << 20, 8
	for _, tc := range []struct {
		name, marker string
		gen          func(io.Writer, AgentOptions) (*AgentResult, error)
	}{
		{"claude-code", `"subtype":"compact_boundary"`, GenerateClaudeCode},
		{"codex", `"type":"compacted"`, GenerateCodex},
	} {
		var b bytes.Buffer
		if _, err := tc.gen(&b, AgentOptions{Seed: 5, TargetBytes: size, Thinking: true, Compactions: n}); err != nil {
			t.Fatal(err)
		}
		var at []int
		for off, src := 0, b.Bytes(); ; {
			i := bytes.Index(src[off:], []byte(tc.marker))
			if i < 0 {
				break
			}
			at = append(at, off+i)
			off += i + len(tc.marker)
		}
		if len(at) != n {
			t.Fatalf("%s: %d compactions in %d bytes, want %d", tc.name, len(at), b.Len(), n)
		}
		for i, off := range at {
			want := (2*i + 1) * size / (2 * n)
			if off < want || off > want+64<<10 {
				t.Errorf("%s: compaction %d at byte %d, want just after %d", tc.name, i, off, want)
			}
		}
	}
}
