package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/lint"
)

func runLintCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCLI(t, append([]string{"lint"}, args...)...)
}

func jsonFindings(t *testing.T, out string) []lint.Finding {
	t.Helper()
	var fs []lint.Finding
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var f lint.Finding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		fs = append(fs, f)
	}
	return fs
}

func TestLintExitCodesAndFailOn(t *testing.T) {
	truncated := "../testdata/edge-truncated.jsonl"
	trailing := "../testdata/edge-trailing-toolcall.jsonl"
	clean := "../testdata/edge-cjk.jsonl"
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{clean}, 0},
		{[]string{truncated}, 3},                        // errors fail by default
		{[]string{"--fail-on", "never", truncated}, 0},  // report only
		{[]string{trailing}, 0},                         // warnings pass by default
		{[]string{"--fail-on", "warning", trailing}, 3}, // …unless asked
		{[]string{"--disable", "torn-line,malformed-line", truncated}, 0},
		{[]string{"--fail-on", "sometimes", clean}, 2},
		{[]string{"--enable", "no-such-rule", clean}, 2},
		{[]string{"does-not-exist.jsonl"}, 2},
	} {
		_, stderr, code := runLintCmd(t, c.args...)
		if code != c.code {
			t.Errorf("lint %v: exit %d, want %d (%s)", c.args, code, c.code, stderr)
		}
	}
}

func TestLintTableAndJSON(t *testing.T) {
	out, _, code := runLintCmd(t, "../testdata/edge-truncated.jsonl", "../testdata/edge-cjk.jsonl")
	if code != 3 || !strings.Contains(out, "edge-truncated.jsonl\n") || !strings.Contains(out, "  16 ") ||
		!strings.Contains(out, "torn-line") || !strings.Contains(out, "→ torn-line: run `ctxtool lint --fix`") ||
		!strings.Contains(out, "2 files: 2 errors, 0 warnings, 0 notes (1 clean); 1 fixable with --fix") {
		t.Fatalf("table:\n%s", out)
	}
	out, _, _ = runLintCmd(t, "--json", "../testdata/edge-truncated.jsonl")
	fs := jsonFindings(t, out)
	if len(fs) != 2 || fs[0].Line != 16 || fs[0].Rule != "malformed-line" || fs[1].Line != 33 || fs[1].Rule != "torn-line" || !fs[1].Fixable {
		t.Fatalf("json: %+v", fs)
	}
}

// A baseline written by --json (or SARIF) makes only new findings fail.
func TestLintBaseline(t *testing.T) {
	sess := testkit.CopyToTemp(t, "../testdata/edge-glued.jsonl")
	for _, format := range []string{"json", "sarif"} {
		out, _, code := runLintCmd(t, "--format", format, sess)
		if code != 3 {
			t.Fatalf("%s: exit %d", format, code)
		}
		base := filepath.Join(t.TempDir(), "baseline."+format)
		os.WriteFile(base, []byte(out), 0o644)
		if _, stderr, code := runLintCmd(t, "--baseline", base, sess); code != 0 {
			t.Fatalf("%s baseline: unchanged findings failed: exit %d %s", format, code, stderr)
		}
		// The session grows a new defect: only it fails.
		f, _ := os.OpenFile(sess, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("not json at all\n")
		f.Close()
		out, stderr, code := runLintCmd(t, "--json", "--baseline", base, sess)
		fs := jsonFindings(t, out)
		var states []string
		for _, x := range fs {
			states = append(states, x.Rule+":"+x.BaselineState)
		}
		if code != 3 || !strings.Contains(stderr, "1 new findings") ||
			strings.Join(states, " ") != "glued-line:unchanged glued-line:unchanged malformed-line:new" {
			t.Fatalf("%s baseline after growth: exit %d %q %v", format, code, stderr, states)
		}
		sess = testkit.CopyToTemp(t, "../testdata/edge-glued.jsonl")
	}
}

// --fix answers the pending tool call the way pi does in memory, under the
// lock; pi loads the result, and the rule is quiet afterwards.
func TestLintFixPendingToolCall(t *testing.T) {
	sess := testkit.CopyToTemp(t, "../testdata/edge-trailing-toolcall.jsonl")
	before, _ := os.ReadFile(sess)
	out, _, _ := runLintCmd(t, "--fix", "--dry-run", "--idle", "0", sess)
	if after, _ := os.ReadFile(sess); !bytes.Equal(before, after) || !strings.Contains(out, "would fix pending-tool-call") {
		t.Fatalf("dry run wrote or said nothing:\n%s", out)
	}
	// A fresh file is left alone (the tool may still be running).
	out, _, _ = runLintCmd(t, "--fix", sess)
	if after, _ := os.ReadFile(sess); !bytes.Equal(before, after) || !strings.Contains(out, "not fixed: written") {
		t.Fatalf("--fix touched a session written just now:\n%s", out)
	}
	out, _, code := runLintCmd(t, "--fix", "--idle", "0", "--fail-on", "warning", sess)
	after, _ := os.ReadFile(sess)
	if !bytes.HasPrefix(after, before) || bytes.Count(after[len(before):], []byte("\n")) != 1 || code != 0 ||
		!strings.Contains(out, "fixed pending-tool-call") || strings.Contains(out, "pending-tool-call  ") {
		t.Fatalf("--fix: exit %d\n%s\nappended %q", code, out, after[len(before):])
	}
	if _, err := os.Stat(sess + ".lock"); !os.IsNotExist(err) {
		t.Fatal("the lock was not released")
	}
	pi := oracle.CheckOne(t, sess)
	orig := oracle.CheckOne(t, "../testdata/edge-trailing-toolcall.jsonl")
	if !pi.Loads || pi.ContextMessages != orig.ContextMessages+1 || pi.LastRole != "toolResult" || pi.OrphanToolResults != 0 {
		t.Fatalf("pi after the fix: %+v", pi)
	}
}

// --fix ends a torn last line, so the next append (pi checks nothing)
// starts on its own line.
func TestLintFixTornLine(t *testing.T) {
	sess := testkit.CopyToTemp(t, "../testdata/edge-truncated.jsonl")
	before, _ := os.ReadFile(sess)
	out, _, code := runLintCmd(t, "--fix", "--idle", "0", sess)
	after, _ := os.ReadFile(sess)
	if string(after) != string(before)+"\n" || code != 3 || !strings.Contains(out, "fixed torn-line") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// The torn bytes are still reported (as a malformed line now).
	out, _, _ = runLintCmd(t, "--json", sess)
	if fs := jsonFindings(t, out); len(fs) != 2 || fs[1].Rule != "malformed-line" || fs[1].Line != 33 {
		t.Fatalf("after the fix: %+v", fs)
	}
	if pi := oracle.CheckOne(t, sess); !pi.Loads || len(pi.MalformedLines) != 2 {
		t.Fatalf("pi: %+v", pi)
	}
}

func TestLintListRulesAndDirectories(t *testing.T) {
	out, _, code := runLintCmd(t, "--list-rules")
	for _, r := range lint.Rules() {
		if !strings.Contains(out, r.ID) {
			t.Errorf("--list-rules misses %s", r.ID)
		}
	}
	if code != 0 {
		t.Fatal(code)
	}
	// A directory is walked; backups and locks are skipped.
	dir := t.TempDir()
	data, _ := os.ReadFile("../testdata/edge-truncated.jsonl")
	os.WriteFile(filepath.Join(dir, "a.jsonl"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "a.jsonl.bak.2026-03-08T13-03-27.008Z"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "a.jsonl.lock"), []byte(`{"pid":1}`), 0o644)
	out, _, _ = runLintCmd(t, "--json", dir)
	for _, f := range jsonFindings(t, out) {
		if filepath.Base(f.File) != "a.jsonl" {
			t.Errorf("linted %s", f.File)
		}
	}
}

// lint.* config keys set rules, severities and the failing level.
func TestLintConfigKeys(t *testing.T) {
	truncated := "../testdata/edge-truncated.jsonl"
	conf := filepath.Join(t.TempDir(), "ctxtool.yaml")
	os.WriteFile(conf, []byte("lint:\n  disable: malformed-line\n  severity: torn-line=warning\n"), 0o644)
	out, stderr, code := runLintCmd(t, "--config", conf, "--json", truncated)
	fs := jsonFindings(t, out)
	if code != 0 || len(fs) != 1 || fs[0].Rule != "torn-line" || fs[0].Severity != lint.Warning {
		t.Fatalf("exit %d %s: %+v", code, stderr, fs)
	}
	// The flag turns a rule the config disabled back on.
	if _, _, code := runLintCmd(t, "--config", conf, "--enable", "malformed-line", truncated); code != 3 {
		t.Fatalf("--enable over lint.disable: exit %d", code)
	}
	os.WriteFile(conf, []byte("lint:\n  failOn: warning\n"), 0o644)
	if _, _, code := runLintCmd(t, "--config", conf, "../testdata/edge-trailing-toolcall.jsonl"); code != 3 {
		t.Fatalf("lint.failOn warning: exit %d", code)
	}
	os.WriteFile(conf, []byte("lint:\n  severity: torn-line=loud\n"), 0o644)
	if _, stderr, code := runLintCmd(t, "--config", conf, truncated); code != 2 || !strings.Contains(stderr, "lint.severity") {
		t.Fatalf("bad severity: exit %d %s", code, stderr)
	}
}

// docCommands returns the ctxtool command lines of a doc (shell lines and
// workflow `run:` steps), verbatim.
func docCommands(t *testing.T, doc string) []string {
	t.Helper()
	data := testkit.ReadFile(t, doc)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "run: ")
		if strings.HasPrefix(line, "ctxtool ") {
			out = append(out, line)
		}
	}
	return out
}

// runDocLine runs one documented command line: words split on spaces,
// globs expanded, "> FILE" redirected, as a shell would.
func runDocLine(t *testing.T, line string) int {
	t.Helper()
	words := strings.Fields(line)[1:]
	var args []string
	redirect := ""
	for i := 0; i < len(words); i++ {
		switch w := words[i]; {
		case w == ">":
			redirect = words[i+1]
			i++
		case strings.Contains(w, "*"):
			m, _ := filepath.Glob(w)
			args = append(args, m...)
		default:
			args = append(args, w)
		}
	}
	io, _, out, _ := iostreams.Test()
	root, _ := NewRootCmd(io)
	root.SetArgs(args)
	err := root.Execute()
	if redirect != "" {
		testkit.WriteFile(t, redirect, out.Bytes(), 0o644)
	}
	return exitcode.Code(err)
}

// docs/ci-lint.md runs as written: baselines, SARIF for code scanning, the
// gate on new findings and the growth gate — green on the recorded
// transcripts, red once one grows a new defect and 20% more context.
func TestCIDocWorkflowRunsAsWritten(t *testing.T) {
	cmds := docCommands(t, "../docs/ci-lint.md")
	if len(cmds) < 5 {
		t.Fatalf("found %d commands in docs/ci-lint.md", len(cmds))
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "transcripts"), 0o755)
	for _, f := range []string{"sample-v3.jsonl", "edge-glued.jsonl", "edge-trailing-toolcall.jsonl"} {
		data, _ := os.ReadFile(filepath.Join("..", "testdata", f))
		os.WriteFile(filepath.Join(dir, "transcripts", f), data, 0o644)
	}
	t.Chdir(dir)
	os.MkdirAll("ci", 0o755)
	run := func(pred func(string) bool) map[string]int {
		codes := map[string]int{}
		for _, c := range cmds {
			if pred(c) {
				codes[c] = runDocLine(t, c)
			}
		}
		return codes
	}
	isBaseline := func(c string) bool { return strings.Contains(c, "> ci/") }
	for c, code := range run(isBaseline) {
		if code != 0 {
			t.Fatalf("%s: exit %d", c, code)
		}
	}
	for c, code := range run(func(c string) bool { return !isBaseline(c) }) {
		if code != 0 {
			t.Errorf("on the recorded transcripts: %s: exit %d", c, code)
		}
	}
	if data, _ := os.ReadFile("lint.sarif"); !bytes.Contains(data, []byte(`"version":"2.1.0"`)) || !bytes.Contains(data, []byte("edge-glued.jsonl")) {
		t.Fatalf("lint.sarif: %.300s", data)
	}
	// The agent suite records a session that grew: a long new user message
	// (+~10k tokens, 18% of its context) and a glued line (a new defect).
	sess := filepath.Join("transcripts", "sample-v3.jsonl")
	data, _ := os.ReadFile(sess)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var leaf struct{ ID string }
	json.Unmarshal(lines[len(lines)-1], &leaf)
	msg := `{"type":"message","id":"aaaa0001","parentId":"` + leaf.ID + `","timestamp":"2026-03-02T11:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"` +
		strings.Repeat("more context ", 3000) + `"}],"timestamp":1772449200000}}`
	f, _ := os.OpenFile(sess, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(msg + "\n" + `{"type":"custom","customType":"x","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-03-02T11:00:01.000Z"}{"type":"custom"}` + "\n")
	f.Close()
	codes := run(func(c string) bool { return !isBaseline(c) })
	for c, code := range codes {
		want := 0
		if strings.Contains(c, "--baseline") {
			want = 3
		}
		if code != want {
			t.Errorf("after growth: %s: exit %d, want %d", c, code, want)
		}
	}
}

// lint reads "-" as standard input (docs/cli.md: FILE may be "-" where the
// command only reads), with the findings of the file it was fed; --fix on
// standard input is a usage error, since there is nothing to append to.
func TestLintStdin(t *testing.T) {
	testkit.Stdin(t, "../testdata/edge-truncated.jsonl")
	out, errOut, code := runLintCmd(t, "--json", "-")
	fs := jsonFindings(t, out)
	if code != 3 || len(fs) != 2 || fs[0].File != "-" || fs[0].Line != 16 || fs[1].Rule != "torn-line" {
		t.Fatalf("exit %d, findings %+v\n%s", code, fs, errOut)
	}
	if _, errOut, code := runLintCmd(t, "--fix", "-"); code != 2 || !strings.Contains(errOut, "standard input") {
		t.Fatalf("--fix -: exit %d: %s", code, errOut)
	}
}
