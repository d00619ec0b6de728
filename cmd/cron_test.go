package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// The crontab lines of docs/roll-cron.md run verbatim on a fresh machine:
// cron's minimal PATH, no log directory, an OpenClaw-only home (no ~/.pi).
// They used to fail on all three counts.
func TestCronRecipeRunsVerbatim(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	doc := testkit.ReadFile(t, "../docs/roll-cron.md")
	var lines []string
	for _, block := range regexp.MustCompile("(?s)```cron\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		for _, l := range strings.Split(block[1], "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) < 2 {
		t.Fatalf("found %d crontab lines in docs/roll-cron.md", len(lines))
	}
	home := t.TempDir()
	bin := filepath.Join(home, "go", "bin", "ctxtool")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sess := filepath.Join(home, ".openclaw", "agents", "main", "sessions", "abc.jsonl")
	os.MkdirAll(filepath.Dir(sess), 0o755)
	sessiongen.Write(t, sess, sessiongen.Options{Seed: 9, Turns: 4})
	old := "2020-01-01T00:00:00Z"
	exec.Command("touch", "-d", old, sess).Run()
	for _, l := range lines {
		fields := strings.Fields(l)
		command := strings.Join(fields[5:], " ") // drop the five schedule fields
		c := exec.Command("/bin/sh", "-c", command)
		c.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SHELL=/bin/sh", "LOGNAME=u"}
		if out, err := c.CombinedOutput(); err != nil {
			errs, _ := os.ReadFile(filepath.Join(home, ".local", "state", "ctxtool", "roll.err"))
			t.Fatalf("%s\n%v %s\nroll.err: %s", command, err, out, errs)
		}
	}
	state := filepath.Join(home, ".local", "state", "ctxtool")
	log, err := os.ReadFile(filepath.Join(state, "roll.jsonl"))
	if err != nil || !strings.Contains(string(log), `"file":"`+sess+`"`) {
		t.Fatalf("roll.jsonl: %v %s", err, log)
	}
	errs, _ := os.ReadFile(filepath.Join(state, "roll.err"))
	if !strings.Contains(string(errs), ".pi/agent/sessions: no such file or directory; skipped") {
		t.Errorf("the missing ~/.pi root must be a warning: %s", errs)
	}
}
