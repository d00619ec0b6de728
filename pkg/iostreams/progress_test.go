package iostreams

import (
	"strings"
	"testing"
	"time"
)

func TestProgressOnlyOnTerminalAfterOneSecond(t *testing.T) {
	io, _, _, errOut := Test()
	p := io.NewProgress("rolling", "sessions", 10)
	p.Backdate(2 * time.Second)
	p.Update(5, "")
	if errOut.Len() != 0 {
		t.Fatal("progress on a non-terminal")
	}
	io.SetTTY(false, true)
	p = io.NewProgress("rolling", "sessions", 10)
	p.Update(1, "")
	if errOut.Len() != 0 {
		t.Fatal("progress shown before a second passed")
	}
	p.Backdate(2 * time.Second)
	p.Update(5, "1.0/2.0 MB")
	p.Clear()
	s := errOut.String()
	if !strings.Contains(s, "rolling [###############...............] 5/10 sessions") || !strings.Contains(s, "1.0/2.0 MB") || !strings.HasSuffix(s, "\r\033[K") {
		t.Fatalf("progress bar %q", s)
	}
}

// Backdate pretends the work started d ago; for tests of the one-second rule.
func (p *Progress) Backdate(d time.Duration) { p.start = p.start.Add(-d) }
