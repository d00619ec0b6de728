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
		name:    name,
		owner:   "Codex",
		new:     func(v *view) lineConv { return newCodexConv(v, legacy) },
		convert: func(c lineConv, r io.Reader) error { return convertLines(c.(*cxConv), r) },
		lines:   func(v *view) lineConv { return newCodexConv(v, legacy) },
	})
}
