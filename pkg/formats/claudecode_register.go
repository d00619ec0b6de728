package formats

import "io"

func init() {
	register(ClaudeCode, converter{
		name:    "Claude Code transcript",
		owner:   "Claude Code",
		new:     func(v *view) lineConv { return newCCConv(v) },
		convert: func(c lineConv, _ string, r io.Reader) error { return convertLines(c.(*ccConv), r) },
		lines: func(v *view) lineConv {
			c := newCCConv(v)
			c.linewise = true
			return c
		},
	})
}
