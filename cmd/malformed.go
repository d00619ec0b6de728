package cmd

import (
	"fmt"
	"io"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// warnMalformed reports the lines pi's loader drops, one warning each, the
// same way in every command that reads sessions: file:line, what the line is
// (size, parse error, records glued on it, a hidden compaction, a torn
// write), and what this command does about it (doing, e.g. "counts without
// it"). The JSON output carries the same lines as malformedLines.
func warnMalformed(w io.Writer, file string, lines []transcript.Malformed, doing string) {
	for _, m := range lines {
		fmt.Fprintf(w, "warning: %s:%d: %s; pi drops it — ctxtool leaves it in place and %s\n", file, m.Line, m.Describe(), doing)
	}
}
