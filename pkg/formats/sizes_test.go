package formats_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf16"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// The length a converter hands with a content block (Block.Sized, which
// spares the transcript core reading the block) is the UTF-16 length of
// the text the line holds, decoded here with encoding/json, and the text
// holds no wide character (no byte >= 0x80): on generated sessions of each
// format, where most texts are measured so, and on the wild transcripts.
// (pkg/transcript's TestProducedEqualsParsed checks whole sessions.)
func TestBlockSizesAreTheWrittenText(t *testing.T) {
	gens := map[string]func(*bytes.Buffer, sessiongen.AgentOptions) error{
		"claude-code": func(b *bytes.Buffer, o sessiongen.AgentOptions) error {
			_, err := sessiongen.GenerateClaudeCode(b, o)
			return err
		},
		"codex": func(b *bytes.Buffer, o sessiongen.AgentOptions) error {
			_, err := sessiongen.GenerateCodex(b, o)
			return err
		},
		"codex-legacy": func(b *bytes.Buffer, o sessiongen.AgentOptions) error {
			o.Legacy = true
			_, err := sessiongen.GenerateCodex(b, o)
			return err
		},
	}
	for name, gen := range gens {
		var src bytes.Buffer
		o := sessiongen.AgentOptions{Seed: 5, TargetBytes: 1 << 20, Thinking: true, Compactions: 1, ParallelToolCalls: 2}
		if err := gen(&src, o); err != nil {
			t.Fatal(err)
		}
		sized, texts := checkBlockSizes(t, name, src.Bytes())
		if sized*10 < texts*9 {
			t.Errorf("%s: %d of %d texts measured by the converter, want most", name, sized, texts)
		}
	}
	t.Run("wild", func(t *testing.T) {
		for _, f := range oracle.WildAgentTranscripts(t) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkBlockSizes(t, f, b)
		}
	})
}

// checkBlockSizes converts src and checks every measured block; it returns
// how many texts (and thinkings) were measured, of how many.
func checkBlockSizes(t *testing.T, name string, src []byte) (sized, texts int) {
	t.Helper()
	sink := func(p *formats.Produced) {
		for _, b := range p.Blocks {
			if b.Kind != "text" && b.Kind != "thinking" {
				continue
			}
			texts++
			if !b.Sized {
				continue
			}
			sized++
			raw := p.Line[b.Span[0]:b.Span[1]]
			var s string
			if raw[0] == '"' {
				s = decodeJSON[string](t, raw)
			} else {
				v := decodeJSON[struct{ Type, Text, Thinking string }](t, raw)
				s = v.Text
				if v.Type == "thinking" {
					s = v.Thinking
				}
			}
			if n := len(utf16.Encode([]rune(s))); n != b.Chars {
				t.Errorf("%s: row %d: %s block %s: %d chars handed, the text has %d", name, p.Row, b.Kind, raw, b.Chars, n)
			}
			if bytes.ContainsFunc(raw, func(r rune) bool { return r >= 0x80 }) {
				t.Errorf("%s: row %d: measured block %s is not ASCII", name, p.Row, raw)
			}
		}
	}
	v, err := formats.OpenReader(name, bytes.NewReader(src), sink)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	v.Close()
	return sized, texts
}

func decodeJSON[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}
