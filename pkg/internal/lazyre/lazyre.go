// Package lazyre compiles a package's regular expressions the first time
// they are used rather than at package init.
//
// Every ctxtool command pays for the init of every package linked into the
// binary, so a regexp.MustCompile in a package-level var costs each
// process, `ctxtool --version` and each `ctxtool search` included, even
// when the command never matches that pattern. Before this package the
// patterns cost about 2 ms of the 4.5 ms that init took (GODEBUG=inittrace=1);
// pkg/facts' alone took 1.0 ms.
//
// A pattern stays defined in one place, as before:
//
//	var reURL = lazyre.New(`https?://\S+`)
//	...
//	reURL().FindAllString(s, -1)
//
// An invalid pattern would panic on its first use rather than at init:
// TestPatternsCompile compiles every lazyre.New of the tree (its argument
// must be a constant), and TestNoRegexpAtInit keeps regexp compilation out
// of package-level vars and init functions in pkg/ and cmd/.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns
// the same *regexp.Regexp on every call. It is safe for concurrent use.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
