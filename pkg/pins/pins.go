// Package pins keeps the facts a user pins for a project: short lines that
// are handed back to the agent after every compaction (the SessionStart
// hook of pkg/hooks), whatever the agent's summary kept.
//
// A project's pins are one plain text file, one pin a line, at
// <state>/pins/<project>-<hash>.txt (the project is the git root of the
// working directory, else the directory itself). A project may also check
// in .ctxtool/pins.md: its "- " lines are pins too (read-only here).
package pins

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// MaxPin bounds one pin (bytes); MaxPins the pins of a project. Pins go
// into every post-compaction context: they must stay short.
const (
	MaxPin  = 500
	MaxPins = 50
)

// ProjectFile is the checked-in pins file of a project, relative to its root.
const ProjectFile = ".ctxtool/pins.md"

// Pin is one pin; N is its 1-based number in `pin --list` (0 for the
// project's checked-in pins, which `pin --rm` does not remove).
type Pin struct {
	N    int    `json:"n,omitempty"`
	Text string `json:"text"`
	// From is the file the pin is in.
	From string `json:"from"`
}

// Root is the project of dir: the nearest directory up with .git, else dir.
func Root(dir string) string {
	dir = filepath.Clean(dir)
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// File is the pins file of the project of dir under stateDir.
func File(stateDir, dir string) string {
	root := Root(dir)
	sum := sha256.Sum256([]byte(root))
	name := checkpoint.SanitizeKey(filepath.Base(root)) + "-" + hex.EncodeToString(sum[:4]) + ".txt"
	return filepath.Join(stateDir, "pins", name)
}

// Load returns the pins of the project of dir: the pins file's, numbered,
// then the checked-in ones.
func Load(stateDir, dir string) ([]Pin, error) {
	file := File(stateDir, dir)
	lines, err := readLines(file)
	var out []Pin
	for i, l := range lines {
		out = append(out, Pin{N: i + 1, Text: l, From: file})
	}
	proj := filepath.Join(Root(dir), ProjectFile)
	if data, perr := os.ReadFile(proj); perr == nil {
		for _, l := range strings.Split(string(data), "\n") {
			l = strings.TrimSpace(l)
			if t, ok := strings.CutPrefix(l, "- "); ok && strings.TrimSpace(t) != "" {
				out = append(out, Pin{Text: clip(strings.TrimSpace(t)), From: proj})
			}
		}
	}
	return out, err
}

func readLines(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// clip bounds a checked-in pin the way Add refuses a long one.
func clip(s string) string {
	if len(s) <= MaxPin {
		return s
	}
	s = s[:MaxPin]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// Add pins text for the project of dir and returns its number.
func Add(stateDir, dir, text string) (int, error) {
	text = strings.Join(strings.Fields(text), " ")
	switch {
	case text == "":
		return 0, fmt.Errorf("nothing to pin: give the text, e.g. ctxtool pin \"never push to main\"")
	case len(text) > MaxPin:
		return 0, fmt.Errorf("a pin is at most %d bytes (this one is %d): pins go into every context after a compaction, keep them short", MaxPin, len(text))
	case !utf8.ValidString(text):
		return 0, fmt.Errorf("the pin is not valid UTF-8")
	}
	file := File(stateDir, dir)
	lines, err := readLines(file)
	if err != nil {
		return 0, err
	}
	for i, l := range lines {
		if l == text {
			return i + 1, nil
		}
	}
	if len(lines) >= MaxPins {
		return 0, fmt.Errorf("%s has %d pins already: remove one with ctxtool pin --rm N", file, len(lines))
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	if _, err := f.WriteString(text + "\n"); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return len(lines) + 1, nil
}

// Remove removes pin n of the project of dir and returns its text.
func Remove(stateDir, dir string, n int) (string, error) {
	file := File(stateDir, dir)
	lines, err := readLines(file)
	if err != nil {
		return "", err
	}
	if n < 1 || n > len(lines) {
		return "", fmt.Errorf("no pin %d in %s (it has %d; see ctxtool pin --list)", n, file, len(lines))
	}
	gone := lines[n-1]
	rest := append(lines[:n-1:n-1], lines[n:]...)
	var buf bytes.Buffer
	for _, l := range rest {
		buf.WriteString(l + "\n")
	}
	return gone, safefile.WriteFile(file, buf.Bytes(), 0o600)
}
