// Package usagekit writes the sessions whose usage records lie: the set on
// which every command must report the same context size (issue 9). Each
// session is built with sessiongen's Builder, so its ground truth (what a
// provider would really count for the next request) is known exactly.
//
//   - pinned-4096: OpenClaw + Ollama qwen3:8b (32k window); every reply
//     reports input 4096 (num_ctx truncation) while the context grows past
//     it; the first assistant is a zero-usage delivery-mirror.
//   - flat-large: Anthropic Sonnet 4.5 (200k); real usage until ~60k, then
//     the same prompt count (61,440) on every reply while the context grows
//     to ~170k.
//   - mirror-zero: OpenClaw with glm-5-turbo through a custom provider
//     (204,800-token window); real usage, zero-usage delivery-mirror and
//     gateway-injected replies interleaved, and one as the last assistant.
//   - header-only: a v1 file whose model (gpt-4, 8,192 tokens) is only in
//     the header; assistants name no model; real usage.
//   - outgrows-window: gpt-4o (128k) with real usage that grows past the
//     window (~150k): the session overflowed, every command must say so
//     alike.
package usagekit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// Case is one generated session and what is known about it.
type Case struct {
	Name string
	File string
	// Window is the context window the session's model has in the model
	// table (what the one resolution must find).
	Window int
	// Model is the model id the resolution must name (provider/id).
	Model string
	// TrueTokens is the ground truth of the next request (system prompt +
	// provider-visible tokens of the context).
	TrueTokens int
	// PiAnchorClass is the class the usage audit must give the record pi
	// anchors on ("fresh" when pi's anchor is trustworthy).
	PiAnchorClass string
	// Lines is the number of lines written.
	Lines int
}

type plan struct {
	name, wantModel string
	cfg             sessiongen.Config
	window, target  int
	piClass         string
	// usage returns the record of the n-th assistant reply (nil: ground
	// truth); prompt is the true prompt size of the request.
	usage func(n, prompt int, b *sessiongen.Builder) *sessiongen.Usage
	// mirrorEvery > 0 adds a zero-usage OpenClaw reply after every
	// mirrorEvery-th turn, and one at the end.
	mirrorEvery int
	noModel     bool
	modelChange *sessiongen.ModelChange
	first       func(b *sessiongen.Builder)
}

func zeroUsage() *sessiongen.Usage { return &sessiongen.Usage{} }

func plans() []plan {
	return []plan{
		{
			name: "pinned-4096", window: 32768, target: 28000, piClass: "pinned", wantModel: "ollama/qwen3:8b",
			cfg:         sessiongen.Config{Seed: 41, Provider: "ollama", Model: "qwen3:8b", SystemTokens: 3800},
			modelChange: &sessiongen.ModelChange{Provider: "ollama", ModelID: "qwen3:8b"},
			first: func(b *sessiongen.Builder) {
				b.Assistant(sessiongen.Assistant{Provider: "openclaw", Model: "delivery-mirror", API: "openai-responses",
					Usage: zeroUsage(), Content: []sessiongen.Block{sessiongen.Text("✅ New session started · model: ollama/qwen3:8b")}})
			},
			usage: func(n, prompt int, b *sessiongen.Builder) *sessiongen.Usage {
				out := 120 + b.Rand().IntN(800)
				return &sessiongen.Usage{Input: 4096, Output: out, TotalTokens: 4096 + out}
			},
		},
		{
			name: "flat-large", window: 200000, target: 170000, piClass: "flat", wantModel: "anthropic/claude-sonnet-4-5",
			cfg: sessiongen.Config{Seed: 42, Provider: "anthropic", Model: "claude-sonnet-4-5", SystemTokens: 9000},
			usage: func(n, prompt int, b *sessiongen.Builder) *sessiongen.Usage {
				if prompt < 61440 {
					return nil
				}
				out := 80 + b.Rand().IntN(600)
				return &sessiongen.Usage{Input: 3, CacheRead: 61437, Output: out, TotalTokens: 61440 + out}
			},
		},
		{
			name: "mirror-zero", window: 204800, target: 120000, piClass: "pseudo", mirrorEvery: 3, wantModel: "custom-customb2/glm-5-turbo",
			cfg:         sessiongen.Config{Seed: 43, Provider: "custom-customb2", Model: "glm-5-turbo", SystemTokens: 12000},
			modelChange: &sessiongen.ModelChange{Provider: "custom-customb2", ModelID: "glm-5-turbo"},
		},
		{
			name: "header-only", window: 8192, target: 6900, piClass: "fresh", noModel: true, wantModel: "openai/gpt-4",
			cfg: sessiongen.Config{Version: 1, Seed: 44, Provider: "openai", Model: "gpt-4", SystemTokens: 900},
		},
		{
			name: "outgrows-window", window: 128000, target: 150000, piClass: "fresh", wantModel: "openai/gpt-4o",
			cfg: sessiongen.Config{Seed: 45, Provider: "openai", Model: "gpt-4o", SystemTokens: 6000},
		},
	}
}

// Write generates every case into a new t.TempDir(); a case it cannot
// write fails the test.
func Write(t testing.TB) []Case {
	t.Helper()
	dir := t.TempDir()
	var out []Case
	for _, p := range plans() {
		c, err := write(dir, p)
		if err != nil {
			t.Fatalf("usagekit %s: %v", p.name, err)
		}
		out = append(out, c)
	}
	return out
}

func write(dir string, p plan) (Case, error) {
	file := filepath.Join(dir, p.name+".jsonl")
	f, err := os.Create(file)
	if err != nil {
		return Case{}, err
	}
	defer f.Close()
	b := sessiongen.NewBuilder(f, p.cfg)
	if p.modelChange != nil {
		b.ModelChange(*p.modelChange)
	}
	if p.first != nil {
		p.first(b)
	}
	replies := 0
	reply := func(a sessiongen.Assistant) {
		a.NoModel = p.noModel
		if p.usage != nil {
			a.Usage = p.usage(replies, b.ContextTokens(), b)
		}
		replies++
		b.Assistant(a)
	}
	mirror := func(i int) {
		model := "delivery-mirror"
		if i%2 == 1 {
			model = "gateway-injected"
		}
		b.Assistant(sessiongen.Assistant{Provider: "openclaw", Model: model, API: "openai-responses", Usage: zeroUsage(),
			Content: []sessiongen.Block{sessiongen.Text(words(b, 12))}})
	}
	for turn := 0; b.ContextTokens() < p.target; turn++ {
		if b.Err() != nil {
			break
		}
		b.UserText(words(b, 30+b.Rand().IntN(60)))
		// Tool turns sized to a few percent of the target so the last turn
		// does not overshoot it by much.
		calls := 1 + b.Rand().IntN(2)
		for c := 0; c < calls && b.ContextTokens() < p.target; c++ {
			id := b.ToolCallID()
			path := fmt.Sprintf("pkg/mod%d/file%d.go", turn%7, c)
			reply(sessiongen.Assistant{Content: []sessiongen.Block{
				sessiongen.Text(words(b, 8)),
				sessiongen.ToolCall(id, "read", sessiongen.Obj{{K: "path", V: path}})}})
			size := p.target / 60
			if size > 6000 {
				size = 6000
			}
			b.ToolResultText(id, "read", code(b, size/2+b.Rand().IntN(size)))
		}
		reply(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text(words(b, 40+b.Rand().IntN(80)))}})
		if p.mirrorEvery > 0 && turn%p.mirrorEvery == p.mirrorEvery-1 {
			mirror(turn)
		}
	}
	if p.mirrorEvery > 0 {
		mirror(0)
	}
	truth := b.ContextTokens()
	res, err := b.Close()
	if err != nil {
		return Case{}, err
	}
	return Case{Name: p.name, File: file, Window: p.window, Model: p.wantModel, TrueTokens: truth,
		PiAnchorClass: p.piClass, Lines: res.LineCount}, f.Close()
}

var vocabulary = strings.Fields(`the session context window tokens usage provider model reply tool result
compaction summary kept evicted note estimate window budget message user assistant file path
function error value config flag table line entry branch cache prompt system request`)

func words(b *sessiongen.Builder, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(vocabulary[b.Rand().IntN(len(vocabulary))])
	}
	sb.WriteByte('.')
	return sb.String()
}

// code writes about chars characters of Go-like source.
func code(b *sessiongen.Builder, chars int) string {
	var sb strings.Builder
	for sb.Len() < chars {
		v := vocabulary[b.Rand().IntN(len(vocabulary))]
		fmt.Fprintf(&sb, "func %s%d(ctx context.Context, n int) (int, error) {\n\treturn %s(n * %d), nil\n}\n", v, b.Rand().IntN(1000), v, b.Rand().IntN(97))
	}
	return sb.String()
}
