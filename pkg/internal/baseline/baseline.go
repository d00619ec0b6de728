// Package baseline reads a --baseline file: the output of an earlier
// `ctxtool <command> --json` run that a gate (estimate's growth, lint's
// new findings) compares this run with. It owns what the gates share: the
// error that says how to write one, and the walk over its JSON lines, each
// decoded into the gate's record type; each gate words its own error for a
// line that is not one of its records, and keeps what it needs of them.
package baseline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Load reads the baseline file at path, written by `ctxtool command
// --json`, and hands each line that is not blank to each, decoded as JSON
// into a fresh R, with its number (from 1) and the decoding's error (a
// line that is not JSON of that form: the gate says what it expected). It
// stops at the first error each returns. A line over maxLine bytes is an
// error. doc, when not nil, is offered the whole file first (spaces
// trimmed, not empty) and takes it instead of the lines when it returns
// true: lint's SARIF log is one JSON document.
func Load[R any](path, command string, maxLine int, doc func(data []byte) bool, each func(n int, r *R, err error) error) error {
	data, err := read(path, command)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(data); doc != nil && len(t) > 0 && doc(t) {
		return nil
	}
	return lines(path, data, maxLine, func(n int, line []byte) error {
		var r R
		err := json.Unmarshal(line, &r)
		return each(n, &r, err)
	})
}

// read reads the baseline file at path, written by `ctxtool command --json`.
func read(path, command string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %w (write one with `ctxtool %s --json FILES > %s`)", path, safefile.PathCause(err), command, path)
	}
	return data, nil
}

// lines calls each with every line of data that is not blank, spaces
// trimmed, and its number (from 1), and stops at the first error it
// returns. A line over maxLine bytes is an error.
func lines(path string, data []byte, maxLine int, each func(n int, line []byte) error) error {
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
		return fmt.Errorf("--baseline %s: %w", path, err)
	}
	return nil
}
