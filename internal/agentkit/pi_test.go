package agentkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

var ctxtoolBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentkit-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctxtoolBin = filepath.Join(dir, "ctxtool")
	code := 0
	if out, err := exec.Command("go", "build", "-o", ctxtoolBin, "github.com/ctxtool/ctxtool").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ctxtool: %v\n%s", err, out)
		code = 1
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// needPi returns the pinned pi, or skips: outside CI a missing Node or pi
// install is a skip that says how to enable the test; with CI=true it is a
// failure (and CI installs it).
func needPi(t *testing.T) *PiInstall {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	in, err := FindPi(ci)
	if err != nil {
		if ci {
			t.Fatalf("CI=true needs the real pi: %v", err)
		}
		t.Skipf("skipping the real-pi test: %v", err)
	}
	return in
}

// piRun is one test's pi: its directories and fake model server.
type piRun struct {
	t                        *testing.T
	in                       *PiInstall
	srv                      *llmtest.Server
	home, agentDir, sessions string
	// summarySource is agent.summarySource for the pi it starts ("": the
	// default, auto, which is augment inside pi): these tests are about
	// ctxtool's own summary unless they say otherwise.
	summarySource string
}

func newPiRun(t *testing.T, window int, compaction map[string]any) *piRun {
	in := needPi(t)
	srv := llmtest.New()
	t.Cleanup(srv.Close)
	srv.UsageFromBody = true // prompt_tokens: chars/4 of all pi sent
	srv.Reply = func(r llmtest.Request) string {
		last := ""
		if n := len(r.Messages); n > 0 {
			last = r.Messages[n-1].Content
		}
		if strings.Contains(last, "<conversation>") || strings.Contains(last, "# Conversation") {
			return "## Goal\nSummary from the test model (pi's own compaction)."
		}
		return fmt.Sprintf("Noted (reply %d).", len(r.Messages))
	}
	home := t.TempDir()
	r := &piRun{t: t, in: in, srv: srv, home: home, agentDir: filepath.Join(home, "agent"), sessions: filepath.Join(home, "sessions"), summarySource: "ctxtool"}
	if err := WriteAgentDir(r.agentDir, srv.BaseURL(), window, compaction); err != nil {
		t.Fatal(err)
	}
	return r
}

// ctxtool runs the built binary with pi's agent dir in the environment.
func (r *piRun) ctxtool(args ...string) (string, error) {
	cmd := exec.Command(ctxtoolBin, args...)
	cmd.Env = append(os.Environ(), "PI_CODING_AGENT_DIR="+r.agentDir, "HOME="+r.home, "XDG_CONFIG_HOME="+filepath.Join(r.home, "xdg"),
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "CTXTOOL_LLM_MODEL=") // hermetic: no user config, no LLM
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sourceEnv sets agent.summarySource in pi's environment ("": the
// default).
func (r *piRun) sourceEnv() []string {
	if r.summarySource == "" {
		return nil
	}
	return []string{"CTXTOOL_AGENT_SUMMARYSOURCE=" + r.summarySource}
}

func (r *piRun) start(env ...string) *Pi { return r.startIn(r.sessions, env...) }

// startIn starts pi with its sessions in dir.
func (r *piRun) startIn(dir string, env ...string) *Pi {
	p, err := StartPi(r.in, PiConfig{AgentDir: r.agentDir, SessionDir: dir, Home: r.home, Env: append(env, r.sourceEnv()...)})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { p.Close() })
	return p
}

var prompts = []string{
	"We are migrating the billing service. The database URL is postgres://billing@db-7.internal:5432/ledger and the deadline is 2027-03-14.",
	"Decision: we keep the retry budget at 7 attempts and never touch /etc/billing/secrets.yaml by hand.",
	"Next, write the migration plan for table invoices_v2 in three steps.",
	"Summarize where we are and what is left.",
	"One more fact: the on-call pager alias is ops-pager-42 and the runbook is RB-1193.",
}

// compactionEntries are the compaction entries of a pi session file.
func compactionEntries(t *testing.T, file string) []map[string]any {
	t.Helper()
	es, err := Entries(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range es {
		if e["type"] == "compaction" {
			out = append(out, e)
		}
	}
	return out
}

// ctxtoolLines are pi's stderr lines from the extension.
func ctxtoolLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "[ctxtool]") {
			out = append(out, l)
		}
	}
	return out
}

// TestRecordPiPayload writes the requests pi's extension sends, for two
// compactions (the second with a previous summary), to
// CTXTOOL_RECORD_PI_PAYLOAD/request-PID.json (how testdata/agent/pi-1.6.0-*
// were made, then sanitised); skipped unless that is set.
func TestRecordPiPayload(t *testing.T) {
	out := os.Getenv("CTXTOOL_RECORD_PI_PAYLOAD")
	if out == "" {
		t.Skip("set CTXTOOL_RECORD_PI_PAYLOAD=DIR to record the requests pi 1.6.0 sends")
	}
	r := newPiRun(t, 128000, map[string]any{"keepRecentTokens": 40})
	wrapper := filepath.Join(r.home, "record.sh")
	script := fmt.Sprintf("#!/bin/sh\ntee %q/request-$$.json | exec %q \"$@\"\n", out, ctxtoolBin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if o, err := r.ctxtool("install", "pi", "--binary", wrapper); err != nil {
		t.Fatalf("install: %v\n%s", err, o)
	}
	p := r.start()
	for _, m := range prompts[:3] {
		if err := p.Prompt(m, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := p.Command(map[string]any{"type": "compact"}, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		for _, m := range prompts[3:] {
			if err := p.Prompt(m, 60*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("stderr: %s", p.Stderr())
}
