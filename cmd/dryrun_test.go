package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dry run writes nothing at all: not the session, and not the state
// directory or a recall index either (roll --dry-run used to create
// state/recall/index.sqlite, flush --dry-run state/memflush/). The report
// still says what the real run would do.
func TestDryRunCreatesNoState(t *testing.T) {
	cleanEnv(t)
	f, before := sampleCopy(t)
	ws := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"roll", "--dry-run", "--trigger", "0", "--target-utilization", "0.1", f}, "1 would roll"},
		{[]string{"flush", "--dry-run", "--force", "--workspace", ws, f}, "Identifier"},
		{[]string{"compact", "--dry-run", "--summarizer", "extractive", "--truncate", f}, ""},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			out, errOut := runOK(t, append([]string{"--state-dir", state}, c.args...)...)
			if !strings.Contains(out+errOut, c.says) {
				t.Errorf("%v does not say %q:\n%s%s", c.args, c.says, out, errOut)
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("%v created the state directory %s", c.args, state)
			}
			if after, _ := os.ReadFile(f); string(after) != string(before) {
				t.Errorf("%v changed the session", c.args)
			}
			if entries, _ := os.ReadDir(ws); len(entries) != 0 {
				t.Errorf("%v wrote into the workspace: %v", c.args, entries)
			}
		})
	}
}
