package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// runTerm runs ctxtool with stdout as a terminal of the given width (tty
// false: a pipe).
func runTerm(t *testing.T, tty bool, width int, args ...string) string {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	io.SetTTY(tty, false)
	io.SetWidth(width)
	root, _ := NewRootCmd(io)
	root.SetArgs(args)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("ctxtool %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out.String()
}

// Tables are colored on a terminal only, never with NO_COLOR or into a
// pipe; on an 80-column terminal no row is wider than 80 columns (paths
// shortened from the middle keep their file name).
func TestTablesColorAndWidth(t *testing.T) {
	discoveryHome(t)
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	for _, args := range [][]string{{"sessions"}, {"estimate", "--tokenizer", "heuristic"}} {
		colored := runTerm(t, true, 80, args...)
		if !ansiEscape.MatchString(colored) {
			t.Errorf("%v on a terminal: no color\n%s", args, colored)
		}
		for _, line := range strings.Split(strings.TrimRight(colored, "\n"), "\n") {
			plain := ansiEscape.ReplaceAllString(line, "")
			if n := utf8.RuneCountInString(plain); n > 80 {
				t.Errorf("%v: a %d-column row on an 80-column terminal: %q", args, n, plain)
			}
		}
		if strings.Contains(colored, ".jsonl") && !strings.Contains(colored, "…") {
			t.Errorf("%v: long paths not shortened:\n%s", args, colored)
		}
		if piped := runTerm(t, false, 0, args...); ansiEscape.MatchString(piped) {
			t.Errorf("%v into a pipe: color escapes\n%q", args, piped)
		}
		t.Setenv("NO_COLOR", "1")
		if plain := runTerm(t, true, 80, args...); ansiEscape.MatchString(plain) {
			t.Errorf("%v with NO_COLOR: color escapes\n%q", args, plain)
		}
		t.Setenv("NO_COLOR", "")
	}
}

// The same in a real pseudo-terminal of 80 columns (util-linux's script),
// through the built binary: color, and no row wider than the terminal.
func TestTablesInPseudoTerminal(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("script (util-linux) is needed for the pseudo-terminal test under CI=true")
		}
		t.Skip("no script(1): install util-linux to run the pseudo-terminal test")
	}
	// Built before HOME moves: the build cache lives under the real one.
	bin := filepath.Join(t.TempDir(), "ctxtool")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	discoveryHome(t)
	run := func(env ...string) string {
		c := exec.Command(script, "-qec", "stty cols 80 rows 50; "+bin+" sessions 2>/dev/null", "/dev/null")
		c.Env = append(os.Environ(), append([]string{"TERM=xterm-256color", "NO_COLOR="}, env...)...)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("script: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	if !ansiEscape.MatchString(out) {
		t.Errorf("no color in a terminal:\n%q", out)
	}
	rows := 0
	for _, line := range strings.Split(strings.TrimRight(out, "\r\n"), "\n") {
		plain := strings.TrimRight(ansiEscape.ReplaceAllString(line, ""), "\r")
		if n := utf8.RuneCountInString(plain); n > 80 {
			t.Errorf("a %d-column row in an 80-column terminal: %q", n, plain)
		}
		rows++
	}
	if rows < 10 {
		t.Errorf("only %d rows:\n%s", rows, out)
	}
	if out := run("NO_COLOR=1"); ansiEscape.MatchString(out) {
		t.Errorf("NO_COLOR in a terminal: color\n%q", out)
	}
}
