package baseline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinesNumbersFromOneAndSkipsBlank: error texts cite lines by these
// numbers, so a blank line still counts.
func TestLinesNumbersFromOneAndSkipsBlank(t *testing.T) {
	var got []string
	stop := errors.New("stop")
	err := lines("b.json", []byte("a\n\n  b  \n\t\nc\nd\n"), 1<<10, func(n int, line []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", n, line))
		if string(line) == "c" {
			return stop
		}
		return nil
	})
	if err != stop || strings.Join(got, " ") != "1:a 3:b 5:c" {
		t.Fatalf("got %q, %v; want 1:a 3:b 5:c and the callback's error", got, err)
	}
	err = lines("b.json", []byte(strings.Repeat("x", 2<<20)), 1<<20, func(int, []byte) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "--baseline b.json: ") {
		t.Fatalf("a line over the limit: %v", err)
	}
}

// TestLoadDecodesEachLineOrHandsTheDocument: every line that is not blank
// comes decoded, a line that is not JSON of the record's form comes with
// its error (the gate words it), and doc, when it takes the file, is all
// that reads it.
func TestLoadDecodesEachLineOrHandsTheDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "base.json")
	if err := os.WriteFile(path, []byte("{\"n\":1}\n\n{\"n\":\"x\"}\n{\"n\":3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		N int `json:"n"`
	}
	var got []string
	err := Load(path, "estimate", 1<<10, nil, func(n int, r *rec, err error) error {
		got = append(got, fmt.Sprintf("%d:%d:%v", n, r.N, err != nil))
		return nil
	})
	if err != nil || strings.Join(got, " ") != "1:1:false 3:0:true 4:3:false" {
		t.Fatalf("got %q, %v; want lines 1 and 4 decoded, line 3 with its error", got, err)
	}
	var doc []byte
	err = Load(path, "estimate", 1<<10, func(d []byte) bool { doc = d; return true }, func(int, *rec, error) error {
		t.Fatal("doc took the file, yet a line was handed over")
		return nil
	})
	if err != nil || !strings.HasPrefix(string(doc), `{"n":1}`) {
		t.Fatalf("doc saw %q, %v", doc, err)
	}
	err = Load(filepath.Join(t.TempDir(), "none.json"), "lint", 1<<10, nil, func(int, *rec, error) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "ctxtool lint --json") {
		t.Fatalf("a missing baseline: %v; want how to write one", err)
	}
}
