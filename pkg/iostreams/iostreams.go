// Package iostreams carries the standard streams of one command run, so that
// commands never touch os.Stdout directly and tests can capture everything a
// command prints (the gh cli pattern).
//
// It must not hold command logic: only streams, terminal facts and progress
// bars.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// IOStreams is what a command reads from and writes to.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// outTTY/errTTY are decided once at construction; tests force them.
	outTTY bool
	errTTY bool
	// width is stdout's terminal width in columns (0: not a terminal, or
	// unknown: tables are not narrowed).
	width int
}

// System returns streams bound to the process's stdin, stdout and stderr.
func System() *IOStreams {
	return &IOStreams{
		In:     os.Stdin,
		Out:    os.Stdout,
		ErrOut: os.Stderr,
		outTTY: isTerminal(os.Stdout),
		errTTY: isTerminal(os.Stderr),
		width:  terminalWidth(os.Stdout),
	}
}

// terminalWidth is f's width when it is a terminal; $COLUMNS when the size
// cannot be read (some CI consoles); 0 otherwise.
func terminalWidth(f *os.File) int {
	if !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		return w
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// Width is stdout's terminal width (0: do not narrow output).
func (s *IOStreams) Width() int { return s.width }

// SetWidth forces the terminal width; for tests.
func (s *IOStreams) SetWidth(n int) { s.width = n }

// Test returns streams backed by buffers: stdin, stdout, stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// ColorEnabled says whether stdout gets color: only on a terminal, and
// never when NO_COLOR is set (https://no-color.org) or TERM is "dumb". A
// pipe or a file gets plain text.
func (s *IOStreams) ColorEnabled() bool {
	return s.outTTY && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// IsStderrTTY reports whether stderr is a terminal (progress bars go there).
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// SetTTY forces the terminal flags; for tests.
func (s *IOStreams) SetTTY(stdout, stderr bool) { s.outTTY, s.errTTY = stdout, stderr }

func isTerminal(f *os.File) bool {
	if os.Getenv("CTXTOOL_FORCE_TTY") == "1" {
		return true
	}
	return term.IsTerminal(int(f.Fd()))
}
