// Command errwrapfix rewrites every fmt.Errorf in the module that formats
// an error with %v or %s to use %w, and lists the calls it cannot rewrite
// (other verbs, flags, formats that are not one string literal). Run it
// from the module root, after merging branches for instance:
//
//	go run ./internal/errwrapcheck/errwrapfix [-n] [packages]
//
// -n lists the calls without rewriting anything.
// Then `go test ./internal/errwrapcheck` must pass. It exits 1 when calls
// are left to fix by hand.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ctxtool/ctxtool/internal/errwrapcheck"
)

func main() {
	dryRun := flag.Bool("n", false, "list the calls, rewrite nothing")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	findings, err := errwrapcheck.Check(".", patterns...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "errwrapfix:", err)
		os.Exit(2)
	}
	if *dryRun {
		for _, f := range findings {
			fmt.Println(f)
		}
		fmt.Printf("errwrapfix: %d calls found\n", len(findings))
		return
	}
	left, err := errwrapcheck.Fix(findings)
	if err != nil {
		fmt.Fprintln(os.Stderr, "errwrapfix:", err)
		os.Exit(2)
	}
	fmt.Printf("errwrapfix: %d calls found, %d rewritten to %%w, %d left\n", len(findings), len(findings)-len(left), len(left))
	for _, f := range left {
		fmt.Println(f)
	}
	if len(left) > 0 {
		os.Exit(1)
	}
}
