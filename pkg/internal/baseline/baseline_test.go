package baseline

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestLinesNumbersFromOneAndSkipsBlank: error texts cite lines by these
// numbers, so a blank line still counts.
func TestLinesNumbersFromOneAndSkipsBlank(t *testing.T) {
	var got []string
	stop := errors.New("stop")
	err := Lines("b.json", []byte("a\n\n  b  \n\t\nc\nd\n"), 1<<10, func(n int, line []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", n, line))
		if string(line) == "c" {
			return stop
		}
		return nil
	})
	if err != stop || strings.Join(got, " ") != "1:a 3:b 5:c" {
		t.Fatalf("got %q, %v; want 1:a 3:b 5:c and the callback's error", got, err)
	}
	err = Lines("b.json", []byte(strings.Repeat("x", 2<<20)), 1<<20, func(int, []byte) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "--baseline b.json: ") {
		t.Fatalf("a line over the limit: %v", err)
	}
}
