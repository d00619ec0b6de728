package cmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// Every command that reads a session reports the lines pi drops the way
// estimate does (compact, roll and checkpoint used to pass over them in
// silence, and compact appended after a line hiding a glued compaction).
func TestEveryReaderReportsMalformedLines(t *testing.T) {
	cleanEnv(t)
	src := testkit.ReadFile(t, oracle.Fixture("pi-v1-compact-705ba5d.jsonl"))
	fresh := func() string { return testkit.WriteTemp(t, "s.jsonl", src) }
	state := t.TempDir()
	for _, args := range [][]string{
		{"estimate"},
		{"compact", "--summarizer", "extractive", "--dry-run"},
		{"compact", "--summarizer", "extractive"},
		{"roll", "--trigger", "0", "--dry-run"},
		{"checkpoint", "--force"},
		{"checkpoint", "--capture"},
		{"index"},
	} {
		f := fresh()
		full := append([]string{"--json", "--state-dir", state}, append(args, f)...)
		out, errOut, code := runCLI(t, full...)
		if code != 0 {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
			continue
		}
		want := f + ":1013: malformed line ("
		if !strings.Contains(errOut, want) || !strings.Contains(errOut, "hides a compaction that pi ignores") || !strings.Contains(errOut, "pi drops it") {
			t.Errorf("%v: stderr does not report line 1013 as estimate does:\n%s", args, errOut)
		}
		var rep struct {
			MalformedLines []struct {
				Line    int      `json:"line"`
				Bytes   int      `json:"bytes"`
				Objects []string `json:"objects"`
			} `json:"malformedLines"`
		}
		if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &rep); err != nil {
			t.Errorf("%v: %v: %s", args, err, out)
			continue
		}
		if len(rep.MalformedLines) != 1 || rep.MalformedLines[0].Line != 1013 || rep.MalformedLines[0].Bytes == 0 || len(rep.MalformedLines[0].Objects) < 2 {
			t.Errorf("%v: malformedLines %+v", args, rep.MalformedLines)
		}
	}
}
