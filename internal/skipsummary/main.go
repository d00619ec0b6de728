// Command skipsummary reads `go test -json` on stdin and prints what a
// plain `go test` prints (package results, the output of failed tests),
// then one list of every skipped test and why, so a run that passed
// without running its conformance suites says so:
//
//	go test -json ./... | go run ./internal/skipsummary
//
// It exits 1 when a test failed or the stream is not test2json, and, under
// CI=true, when a conformance test skipped (see conformance): those are
// what "pi loads what we write" rests on, and CI has what they need.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

// skip is one skipped test and the reason it gave.
type skip struct {
	pkg, test, why string
}

func main() {
	code, err := run(os.Stdin, os.Stdout, os.Getenv("CI") == "true")
	if err != nil {
		fmt.Fprintf(os.Stderr, "skipsummary: %v\n", err)
	}
	os.Exit(code)
}

// conformance says whether a skipped test is one CI must run: a test of
// pi's loader or the real agents (its reason names the oracle harness,
// install.sh, the real pi or the shared wild fixtures) or one named
// *Conformance*. A test that runs only when asked ("set CTXTOOL_…") is not.
func conformance(test, why string) bool {
	if strings.HasPrefix(why, "set ") || strings.Contains(why, ": set ") {
		return false
	}
	if strings.Contains(test, "Conformance") {
		return true
	}
	for _, w := range []string{"oracle", "install.sh", "install-pi", "real-pi", "real pi", "../shared", "fixtures/wild"} {
		if strings.Contains(why, w) {
			return true
		}
	}
	return false
}

func run(in io.Reader, out io.Writer, ci bool) (int, error) {
	outputs := map[key][]string{}
	var skips []skip
	failed, events := false, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// go test prints build errors as plain text.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		events++
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			if e.Test == "" {
				fmt.Fprint(out, e.Output)
			} else {
				outputs[k] = append(outputs[k], e.Output)
			}
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{e.Package, e.Test, reason(outputs[k])})
			}
			delete(outputs, k)
		case "fail":
			failed = true
			if e.Test != "" {
				fmt.Fprint(out, strings.Join(outputs[k], ""))
			} else {
				unfinished(out, outputs, e.Package)
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		return 1, err
	}
	if events == 0 {
		return 1, fmt.Errorf("no go test -json events on stdin")
	}
	code := 0
	if failed {
		code = 1
	}
	if len(skips) == 0 {
		fmt.Fprintln(out, "skipped: none")
		return code, nil
	}
	slices.SortFunc(skips, func(a, b skip) int { return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test) })
	fmt.Fprintf(out, "\nskipped: %d tests (these did not run):\n", len(skips))
	var must []skip
	for _, s := range skips {
		fmt.Fprintf(out, "  %s %s: %s\n", s.pkg, s.test, s.why)
		if conformance(s.test, s.why) {
			must = append(must, s)
		}
	}
	if ci && len(must) > 0 {
		fmt.Fprintf(out, "skipsummary: %d conformance tests skipped under CI=true (see above): CI must run them\n", len(must))
		code = 1
	}
	return code, nil
}

// unfinished prints the output of pkg's tests that never ended: when a test
// binary dies (go test's -timeout panic, a crash in another goroutine),
// test2json files the panic — "test timed out", "running tests:", the
// goroutine dump — under the test that was running, and that test gets no
// pass or fail of its own. Without this a hang shows as a bare "FAIL pkg".
func unfinished(out io.Writer, outputs map[key][]string, pkg string) {
	var open []key
	for k := range outputs {
		if k.pkg == pkg && k.test != "" {
			open = append(open, k)
		}
	}
	slices.SortFunc(open, func(a, b key) int { return strings.Compare(a.test, b.test) })
	for _, k := range open {
		fmt.Fprintf(out, "=== %s %s did not finish; its output:\n", k.pkg, k.test)
		fmt.Fprint(out, strings.Join(outputs[k], ""))
		delete(outputs, k)
	}
}

// reason is the message a skipped test gave: its last output line that is
// not the "--- SKIP" or "=== RUN" marker.
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		return l
	}
	return "(no reason given)"
}
