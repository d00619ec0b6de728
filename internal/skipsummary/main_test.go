package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

const stream = `{"Action":"run","Package":"x/internal/oracle","Test":"TestPiLoadsIt"}
{"Action":"output","Package":"x/internal/oracle","Test":"TestPiLoadsIt","Output":"=== RUN   TestPiLoadsIt\n"}
{"Action":"output","Package":"x/internal/oracle","Test":"TestPiLoadsIt","Output":"    pi_test.go:12: pi oracle not installed: run internal/oracle/js/install.sh\n"}
{"Action":"output","Package":"x/internal/oracle","Test":"TestPiLoadsIt","Output":"--- SKIP: TestPiLoadsIt (0.00s)\n"}
{"Action":"skip","Package":"x/internal/oracle","Test":"TestPiLoadsIt"}
{"Action":"output","Package":"x/internal/oracle","Output":"ok  \tx/internal/oracle\t0.01s\n"}
{"Action":"pass","Package":"x/internal/oracle"}
{"Action":"run","Package":"x/cmd","Test":"TestFine"}
{"Action":"output","Package":"x/cmd","Test":"TestFine","Output":"secret noise\n"}
{"Action":"pass","Package":"x/cmd","Test":"TestFine"}
`

// The summary names each skipped test with its reason; a conformance skip
// fails under CI=true only; passing tests' output is not echoed.
func TestSummary(t *testing.T) {
	var out bytes.Buffer
	code, err := run(strings.NewReader(stream), &out, false)
	if err != nil || code != 0 {
		t.Fatalf("code %d, %v", code, err)
	}
	s := out.String()
	if !strings.Contains(s, "skipped: 1 tests") || !strings.Contains(s, "TestPiLoadsIt: pi_test.go:12: pi oracle not installed: run internal/oracle/js/install.sh") {
		t.Errorf("summary:\n%s", s)
	}
	if !strings.Contains(s, "ok  \tx/internal/oracle") || strings.Contains(s, "secret noise") {
		t.Errorf("package lines / passing output:\n%s", s)
	}
	out.Reset()
	if code, _ := run(strings.NewReader(stream), &out, true); code != 1 || !strings.Contains(out.String(), "CI must run them") {
		t.Errorf("CI=true with a conformance skip: code %d\n%s", code, out.String())
	}
	optIn := strings.ReplaceAll(stream, "pi oracle not installed: run internal/oracle/js/install.sh", "set CTXTOOL_RECORD_PI_PAYLOAD=DIR to record")
	out.Reset()
	if code, _ := run(strings.NewReader(optIn), &out, true); code != 0 {
		t.Errorf("CI=true with an opt-in skip: code %d\n%s", code, out.String())
	}
	fail := stream + `{"Action":"output","Package":"x/cmd","Test":"TestBad","Output":"bad.go:1: wrong\n"}
{"Action":"fail","Package":"x/cmd","Test":"TestBad"}
`
	out.Reset()
	if code, _ := run(strings.NewReader(fail), &out, false); code != 1 || !strings.Contains(out.String(), "bad.go:1: wrong") {
		t.Errorf("a failure: code %d\n%s", code, out.String())
	}
	if code, err := run(strings.NewReader(""), &out, false); code != 1 || err == nil {
		t.Errorf("empty stream: code %d, %v", code, err)
	}
}

// A package killed by go test's -timeout: the panic and "running tests:"
// are filed under the running test, which never gets a fail event. The
// summary must still show them, naming the hung test.
func TestTimedOutPackageShowsTheHungTest(t *testing.T) {
	in, err := os.ReadFile("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := run(bytes.NewReader(in), &out, false)
	if err != nil || code != 1 {
		t.Fatalf("code %d, %v", code, err)
	}
	s := out.String()
	for _, want := range []string{"hang TestHangs did not finish", "panic: test timed out after 2s", "running tests:", "TestHangs (2s)", "waiting on lock"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "TestQuick did not finish") {
		t.Errorf("a passed test reported as unfinished:\n%s", s)
	}
}
