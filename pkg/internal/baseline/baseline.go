// Package baseline reads a --baseline file: the output of an earlier
// `ctxtool <command> --json` run that a gate (estimate's growth, lint's
// new findings) compares this run with. It owns what the gates share: the
// error that says how to write one, and the walk over its JSON lines; each
// gate decodes its own records.
package baseline

import (
	"bufio"
	"bytes"
	"fmt"
	"os"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Read reads the baseline file at path, written by `ctxtool command --json`.
func Read(path, command string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %v (write one with `ctxtool %s --json FILES > %s`)", path, safefile.PathCause(err), command, path)
	}
	return data, nil
}

// Lines calls each with every line of data that is not blank, spaces
// trimmed, and its number (from 1), and stops at the first error it
// returns. A line over maxLine bytes is an error.
func Lines(path string, data []byte, maxLine int, each func(n int, line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := each(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--baseline %s: %v", path, err)
	}
	return nil
}
