package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/internal/testkit/usagekit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

// runCLI runs the root command with args in a clean environment.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	root, _ := NewRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code := exitcode.Code(err)
	if err != nil {
		var ee *exitcode.Error
		if !(asExit(err, &ee) && ee.Err == nil) {
			fmt.Fprintf(errOut, "ctxtool: %v\n", err)
		}
	}
	return out.String(), errOut.String(), code
}

// runOK is runCLI for a command that must succeed: any other exit fails the
// test with the arguments, the code and stderr.
func runOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("ctxtool %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out, errOut
}

func asExit(err error, target **exitcode.Error) bool {
	e, ok := err.(*exitcode.Error)
	if ok {
		*target = e
	}
	return ok
}

func cleanEnv(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CTXTOOL_LLM_MODEL", "CTXTOOL_LLM_BASEURL", "CTXTOOL_LLM_APIKEY", "CTXTOOL_COMPACTION_MODE"} {
		t.Setenv(k, "")
	}
}

func sampleCopy(t *testing.T) (string, []byte) {
	t.Helper()
	b := testkit.ReadFile(t, "../testdata/sample-v3.jsonl")
	return testkit.WriteTemp(t, "s.jsonl", b), b
}

// compact compacts on request, like pi's /compact (it used to refuse below
// the trigger without --force); --if-needed is the gate for hooks and cron;
// --force is still accepted. Dry runs say wouldCompact either way.
func TestCompactOnRequestAndIfNeeded(t *testing.T) {
	cleanEnv(t)
	f, orig := sampleCopy(t)
	out, _ := runOK(t, "compact", f, "--summarizer", "extractive", "--dry-run")
	for _, want := range []string{"would compact (dry run)", "summarized", "kept", "--- summary that would be written"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code := runCLI(t, "compact", f, "--summarizer", "extractive", "--dry-run", "--if-needed")
	if code != 0 || !strings.Contains(out, "would not compact (dry run)") || !strings.Contains(out, "below the trigger") || !strings.Contains(out, "without --if-needed") {
		t.Fatalf("--if-needed: exit %d:\n%s", code, out)
	}
	dry := func(args ...string) map[string]any {
		t.Helper()
		out, _ := runOK(t, append([]string{"--json", "compact", f, "--summarizer", "extractive", "--dry-run"}, args...)...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		return m
	}
	if m := dry(); m["wouldCompact"] != true || m["compacted"] != false || m["reason"] != nil {
		t.Fatalf("dry run of a compaction that would happen: %v", m)
	}
	if m := dry("--if-needed"); m["wouldCompact"] != false || m["reason"] == nil {
		t.Fatalf("dry run below the trigger with --if-needed: %v", m)
	}
	if now, _ := os.ReadFile(f); string(now) != string(orig) {
		t.Fatal("dry run wrote to the file")
	}
	if _, errOut, code := runCLI(t, "compact", f, "--if-needed", "--force"); code != exitcode.Usage || !strings.Contains(errOut, "leave out --force") {
		t.Fatalf("--if-needed --force: exit %d %s", code, errOut)
	}
	// Below the trigger, --if-needed writes nothing; a plain compact writes.
	out, _, code = runCLI(t, "--json", "compact", f, "--summarizer", "extractive", "--if-needed")
	if now, _ := os.ReadFile(f); code != 0 || string(now) != string(orig) || !strings.Contains(out, `"compacted":false`) {
		t.Fatalf("--if-needed below the trigger: exit %d %s", code, out)
	}
	out, _, code = runCLI(t, "--json", "compact", f, "--summarizer", "extractive")
	if now, _ := os.ReadFile(f); code != 0 || len(now) <= len(orig) || !strings.Contains(out, `"compacted":true`) {
		t.Fatalf("compact on request: exit %d %s", code, out)
	}
	// --force: accepted, same as the default.
	g, _ := sampleCopy(t)
	if out, _, code := runCLI(t, "--json", "compact", g, "--summarizer", "extractive", "--force"); code != 0 || !strings.Contains(out, `"compacted":true`) {
		t.Fatalf("--force: exit %d %s", code, out)
	}
}

func TestCompactJSONFieldsAndPi(t *testing.T) {
	cleanEnv(t)
	f, _ := sampleCopy(t)
	out, errOut := runOK(t, "--json", "compact", f, "--force", "--strategy", "safeguard")
	if !strings.Contains(errOut, "summarizer: extractive (no LLM configured") {
		t.Fatalf("auto did not say which summarizer: %q", errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	for _, k := range []string{"file", "compacted", "strategy", "summarizer", "firstKeptEntryId", "summarizedMessages", "keptMessages",
		"tokensBefore", "tokensAfter", "summaryTokens", "llmCalls", "llmInputTokens", "llmOutputTokens"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("JSON lacks %q: %s", k, out)
		}
	}
	if m["compacted"] != true || m["strategy"] != "safeguard" || m["summarizer"] != "extractive" {
		t.Fatalf("%s", out)
	}
	if oracle.Available() {
		r := oracle.CheckOne(t, f)
		if !r.Loads || r.FirstRole != "compactionSummary" || r.OrphanToolResults != 0 || float64(r.HeuristicTokens) != m["tokensAfter"] {
			t.Fatalf("pi sees %+v", r)
		}
	}
	// again: refused cleanly, exit 0
	out, _, code := runCLI(t, "--json", "compact", f, "--force", "--summarizer", "extractive")
	if code != 0 || !strings.Contains(out, `"compacted":false`) || !strings.Contains(out, "already compacted") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestCompactAutoPicksConfiguredLLM(t *testing.T) {
	cleanEnv(t)
	srv := llmtest.New()
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("CTXTOOL_LLM_MODEL", "env-model")
	f, _ := sampleCopy(t)
	out, errOut := runOK(t, "--json", "compact", f, "--force")
	if !strings.Contains(errOut, "summarizer: llm (env-model at "+srv.BaseURL()) {
		t.Fatalf("stderr %q", errOut)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Auth != "Bearer sk-env" || reqs[0].Model != "env-model" {
		t.Fatalf("requests %+v", reqs)
	}
	if !strings.Contains(out, fmt.Sprintf(`"llmCalls":%d`, len(reqs))) {
		t.Fatalf("%s", out)
	}
}

func TestCompactUsageAndLockErrors(t *testing.T) {
	cleanEnv(t)
	f, orig := sampleCopy(t)
	if _, errOut, code := runCLI(t, "compact", f, "--summarizer", "llm"); code != exitcode.Usage || !strings.Contains(errOut, "--llm-model NAME") || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("llm without config: exit %d %s", code, errOut)
	}
	// The README's LLM example, with a key but no model: the error names --llm-model.
	t.Setenv("OPENAI_API_KEY", "sk-x")
	if _, errOut, code := runCLI(t, "compact", f, "--summarizer", "llm"); code != exitcode.Usage || !strings.Contains(errOut, "--llm-model") || strings.Contains(errOut, "endpoint") {
		t.Fatalf("llm without a model: exit %d %s", code, errOut)
	}
	t.Setenv("OPENAI_API_KEY", "")
	if _, _, code := runCLI(t, "compact", f, "--strategy", "bogus"); code != exitcode.Usage {
		t.Fatalf("bad strategy: exit %d", code)
	}
	// a live lock (our parent, alive) → exit 4, file untouched
	lock := filelock.Path(f)
	testkit.WriteFile(t, lock, []byte(fmt.Sprintf(`{"pid":%d,"createdAt":"%s"}`, os.Getppid(), time.Now().UTC().Format(time.RFC3339))), 0o644)
	if _, errOut, code := runCLI(t, "compact", f, "--summarizer", "extractive", "--force"); code != exitcode.Locked {
		t.Fatalf("locked: exit %d %s", code, errOut)
	}
	os.Remove(lock)
	if now, _ := os.ReadFile(f); string(now) != string(orig) {
		t.Fatal("file changed")
	}
}

// The README's audit, CI-gate and exec examples run as written (on a copy
// of the bundled sample; ./my-summarizer is a small script).
func TestCompactAuditGateAndExecExamples(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "session.jsonl")
	data := testkit.ReadFile(t, filepath.Join("..", "testdata", "sample-v3.jsonl"))
	os.WriteFile(f, data, 0o644)
	script := filepath.Join(dir, "my-summarizer")
	os.WriteFile(script, []byte("#!/bin/sh\ncat > \"$0.in\"\nprintf '## Goal\\n- keep going\\n'\n"), 0o755)

	// the gate: the two-line exec summary drops facts → exit 3, nothing written
	out, errOut, code := runCLI(t, "compact", f, "--fail-on-dropped", "0", "--json", "--summarizer", "exec:"+script)
	if code != exitcode.Threshold || !strings.Contains(errOut, "--fail-on-dropped 0") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var res struct {
		Audit *struct {
			Facts   int `json:"facts"`
			Dropped []struct {
				Class string `json:"class"`
				Line  int    `json:"line"`
			} `json:"dropped"`
		} `json:"audit"`
		Summarizer string `json:"summarizer"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Audit == nil || len(res.Audit.Dropped) == 0 || res.Audit.Dropped[0].Line == 0 || res.Summarizer != "exec" {
		t.Fatalf("json %v: %s", err, out)
	}
	if now, _ := os.ReadFile(f); string(now) != string(data) {
		t.Fatal("a summary over the limit was written")
	}
	var in map[string]any
	if raw, err := os.ReadFile(script + ".in"); err != nil || json.Unmarshal(raw, &in) != nil || in["type"] != "compaction" {
		t.Fatalf("the exec summarizer's stdin: %v", err)
	}

	// the README's dry-run gate (extractive, a budget too small to keep everything)
	t.Setenv("CTXTOOL_COMPACTION_EXTRACTIVE_BUDGETTOKENS", "300")
	if _, errOut, code := runCLI(t, "compact", f, "--dry-run", "--fail-on-dropped", "0"); code != exitcode.Threshold {
		t.Fatalf("dry-run gate: exit %d, %s", code, errOut)
	}
	t.Setenv("CTXTOOL_COMPACTION_EXTRACTIVE_BUDGETTOKENS", "0")

	// --audit lists the dropped facts with their lines
	out, _, code = runCLI(t, "compact", f, "--audit", "--summarizer", "exec:"+script)
	if code != 0 || !strings.Contains(out, "facts the summary dropped") || !strings.Contains(out, "audit ") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	s, _ := os.ReadFile(f)
	if !strings.Contains(string(s), `"audit":{"facts":`) {
		t.Fatal("no details.audit in the written entry")
	}

	// the extractive summarizer through the CLI, with --json: audit always there
	os.WriteFile(f, data, 0o644)
	out, _, code = runCLI(t, "compact", f, "--summarizer", "extractive", "--json")
	if code != 0 || !strings.Contains(out, `"audit":{"facts":`) {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// On a model whose window is not larger than the reserve (gpt-4's 8,192
// against pi's 16,384), pi compacts before every prompt. compact says so in
// words — not "trigger 7,090 of -8,192" — and tells how to fix it; with a
// reserve below the window the trigger is the usual window − reserve.
func TestCompactWindowSmallerThanReserve(t *testing.T) {
	cleanEnv(t)
	cases := usagekit.Write(t)
	var file string
	for _, c := range cases {
		if c.Window == 8192 {
			file = c.File
		}
	}
	if file == "" {
		t.Fatal("usagekit has no 8k-window session")
	}
	out, errOut := runOK(t, "compact", "--dry-run", "--summarizer", "extractive", file)
	if strings.Contains(out, "of -") || !strings.Contains(out, "every prompt: window 8,192 − reserve 16,384") ||
		!strings.Contains(out+errOut, "--reserve-tokens") {
		t.Fatalf("no plain trigger message:\n%s\n%s", out, errOut)
	}
	out, errOut = runOK(t, "compact", "--dry-run", "--summarizer", "extractive", "--reserve-tokens", "2048", file)
	if !strings.Contains(out, "of 6,144 tokens (window 8,192)") || strings.Contains(out+errOut, "every prompt") {
		t.Fatalf("reserve 2048: want trigger 6,144:\n%s\n%s", out, errOut)
	}
}
