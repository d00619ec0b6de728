package codex

import (
	"io"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
)

const (
	// Format is a Codex CLI rollout with {timestamp,type,payload} lines.
	Format conv.Format = "codex"
	// Legacy is the 2025 Codex rollout shape without the envelope.
	Legacy conv.Format = "codex-legacy"
)

func init() {
	registerCodex(Format, "Codex rollout", false)
	registerCodex(Legacy, "Codex rollout (2025 shape)", true)
}

// registerCodex registers one of the two Codex rollout shapes: one
// converter, told which shape it reads.
func registerCodex(f conv.Format, name string, legacy bool) {
	conv.Register(f, conv.Converter{
		Name:  name,
		Owner: "Codex",
		Agent: "codex",
		New:   func(v *conv.Emitter) conv.LineConv { return newCodexConv(v, legacy) },
		Convert: func(c conv.LineConv, file string, r io.Reader) error {
			cx := c.(*cxConv)
			cx.file = file // a fork's parent is found beside it
			return conv.ConvertLines(cx, r)
		},
		Lines: func(v *conv.Emitter) conv.LineConv { return newCodexConv(v, legacy) },
	})
}
