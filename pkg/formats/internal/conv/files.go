package conv

import (
	"os"
	"strings"
	"syscall"
)

// OpenRegular opens path for reading if it is a regular file; (nil, nil)
// for anything else (a FIFO would block the open, a device never ends).
// O_NONBLOCK keeps a file swapped for a FIFO after the stat from blocking.
func OpenRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ShellQuote quotes s for a POSIX shell, for commands an error suggests.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:#@+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
