package testkit

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// fatalTB records what a helper fails with and stops its goroutine the way
// testing.T's Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs fn against a fatalTB and returns what it failed with ("" if
// it did not fail).
func failure(fn func(t testing.TB)) string {
	f := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

// A kit helper (here and sessiongen's Write) that cannot read or load its file fails the test and names
// the file, instead of handing the test nothing to go on with.
func TestHelpersFailNamingTheFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	for name, fn := range map[string]func(t testing.TB){
		"ReadFile": func(tb testing.TB) { ReadFile(tb, missing) },
		"Load":     func(tb testing.TB) { Load(tb, missing) },
		"WriteFile": func(tb testing.TB) {
			WriteFile(tb, filepath.Join(missing, "s.jsonl"), nil, 0o644)
		},
		"sessiongen.Write": func(tb testing.TB) {
			sessiongen.Write(tb, filepath.Join(missing, "s.jsonl"), sessiongen.Options{})
		},
	} {
		if msg := failure(fn); !strings.Contains(msg, missing) {
			t.Errorf("%s on a missing file: failed with %q, want the file named", name, msg)
		}
	}
	good := WriteTemp(t, "s.jsonl", []byte("{}\n"))
	if msg := failure(func(tb testing.TB) { ReadFile(tb, good) }); msg != "" {
		t.Errorf("ReadFile on a readable file failed: %s", msg)
	}
}
