package errwrapcheck

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every fmt.Errorf in the module that formats an error uses %w, so
// errors.Is and errors.As (and the exit codes pkg/exitcode derives from
// error types) see through every wrapper. To fix what this reports, run
// `go run ./internal/errwrapcheck/errwrapfix` from the module root.
func TestErrorsAreWrappedWithW(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	findings, err := Check("../..", "./...")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s", f)
	}
	if len(findings) > 0 {
		t.Logf("fix: go run ./internal/errwrapcheck/errwrapfix (from the module root)")
	}
}

// The checker finds errors (of interface and of concrete error types)
// formatted with any verb but %w, counts '*' operands and "%%", ignores
// non-errors and other functions; the fixer rewrites %v and %s in plain
// literals and leaves the rest, listed.
func TestCheckAndFix(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import (
	"errors"
	"fmt"
	"os"
)

type myErr struct{}

func (*myErr) Error() string { return "mine" }

var err = errors.New("x")

const prefix = "const: "

func f() []error {
	return []error{
		fmt.Errorf("a: %v", err),
		fmt.Errorf("100%% b: %*d %s", 3, 4, err),
		fmt.Errorf("c: %q", err),
		fmt.Errorf("d: %v %v", "not an error", &myErr{}),
		fmt.Errorf(prefix+"%v", err),
		fmt.Errorf("e: %w", err),
		fmt.Errorf("f: %-4v", err),
		fmt.Errorf("g: %[1]v", err),
		errors.New(fmt.Sprintf("h: %v", err)),
		fmt.Errorf(` + "`i: %s`" + `, &os.PathError{Op: "open", Path: "p", Err: err}),
	}
}
`
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module p\n\ngo 1.22\n"), 0o644)
	file := filepath.Join(dir, "p.go")
	os.WriteFile(file, []byte(src), 0o644)
	findings, err := Check(dir, "./...")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, f.Verb+" line "+strconv.Itoa(f.Pos.Line))
	}
	want := "%v line 19, %s line 20, %q line 21, %v line 22, %v line 23, %-4v line 25, %s line 28"
	if strings.Join(got, ", ") != want {
		t.Fatalf("found %s\nwant  %s", strings.Join(got, ", "), want)
	}
	left, err := Fix(findings)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, f := range left {
		kept = append(kept, f.Verb)
	}
	if strings.Join(kept, " ") != "%q %v %-4v" { // %q changes the text; prefix+"%v" is no plain literal; flags
		t.Fatalf("left %v", kept)
	}
	fixed, _ := os.ReadFile(file)
	for _, line := range []string{`fmt.Errorf("a: %w", err)`, `fmt.Errorf("100%% b: %*d %w", 3, 4, err)`,
		`fmt.Errorf("d: %v %w", "not an error", &myErr{})`, "fmt.Errorf(`i: %w`", `fmt.Errorf("c: %q", err)`, `fmt.Sprintf("h: %v", err)`} {
		if !strings.Contains(string(fixed), line) {
			t.Errorf("after the fix, no %s in\n%s", line, fixed)
		}
	}
	if again, err := Check(dir, "./..."); err != nil || len(again) != 3 {
		t.Fatalf("after the fix: %v findings (want the 3 left), %v", again, err)
	}
}
