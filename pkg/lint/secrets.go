package lint

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// The secret rule reports what the one detector, pkg/secrets, finds in
// the raw bytes of the file (malformed lines included): the redaction of
// every other output uses the same rules and fingerprints.

// contentResult is what the streaming pass found.
type contentResult struct {
	err     error
	lines   int
	secrets []secrets.Hit
}

// scanContent streams r once and returns the secrets and the line count.
func scanContent(r io.Reader) contentResult {
	res := secrets.Scan(r)
	return contentResult{err: res.Err, lines: res.Lines, secrets: res.Hits}
}

// content turns the scan into findings.
func (c *checker) content(scan *contentResult) {
	for _, h := range scan.secrets {
		what := ""
		if e := c.entryAtLine(h.Line); e != nil {
			what = " in " + articled(entryKind(e))
		}
		f := c.report(RuleSecret, h.Line, fmt.Sprintf("secret:%s@%d", h.Fingerprint, h.Line),
			"%s (%s, fingerprint %s)%s: anyone with this file can use it", articled(h.Kind), h.Masked, h.Fingerprint, what)
		if f != nil {
			f.Column = h.Col
			if e := c.entryAtLine(h.Line); e != nil {
				setEntry(f, e)
			}
		}
	}
}

func articled(s string) string {
	if s != "" && strings.ContainsRune("AEIOUaeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}
