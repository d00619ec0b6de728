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

// warnFile prints the warnings a command got about one file (an estimator
// that did not trust a usage record, …), one line each, the same way in
// every command; the JSON output carries them as warnings.
func warnFile(w io.Writer, file string, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintf(w, "warning: %s: %s\n", file, m)
	}
}
