package claudecode

import (
	"io"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
)

// Format is a Claude Code transcript (~/.claude/projects/…).
const Format conv.Format = "claude-code"

func init() {
	conv.Register(Format, conv.Converter{
		Name:    "Claude Code transcript",
		Owner:   "Claude Code",
		Agent:   "claude-code",
		New:     func(v *conv.Emitter) conv.LineConv { return newCCConv(v) },
		Convert: func(c conv.LineConv, _ string, r io.Reader) error { return conv.ConvertLines(c.(*ccConv), r) },
		Lines: func(v *conv.Emitter) conv.LineConv {
			c := newCCConv(v)
			c.linewise = true
			return c
		},
	})
}
