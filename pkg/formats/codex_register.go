package formats

import "io"

func init() {
	registerCodex(Codex, "Codex rollout", false)
	registerCodex(CodexLegacy, "Codex rollout (2025 shape)", true)
}

// registerCodex registers one of the two Codex rollout shapes: one
// converter, told which shape it reads.
func registerCodex(f Format, name string, legacy bool) {
	register(f, converter{
		name:  name,
		owner: "Codex",
		new:   func(v *view) lineConv { return newCodexConv(v, legacy) },
		convert: func(c lineConv, file string, r io.Reader) error {
			cx := c.(*cxConv)
			cx.file = file // a fork's parent is found beside it
			return convertLines(cx, r)
		},
		lines: func(v *view) lineConv { return newCodexConv(v, legacy) },
	})
}
