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
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/transcript"
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
	b, err := os.ReadFile("../testdata/sample-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// compact compacts on request, like pi's /compact (it used to refuse below
// the trigger without --force); --if-needed is the gate for hooks and cron;
// --force is still accepted. Dry runs say wouldCompact either way.
func TestCompactOnRequestAndIfNeeded(t *testing.T) {
	cleanEnv(t)
	f, orig := sampleCopy(t)
	out, errOut, code := runCLI(t, "compact", f, "--summarizer", "extractive", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"would compact (dry run)", "summarized", "kept", "--- summary that would be written"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runCLI(t, "compact", f, "--summarizer", "extractive", "--dry-run", "--if-needed")
	if code != 0 || !strings.Contains(out, "would not compact (dry run)") || !strings.Contains(out, "below the trigger") || !strings.Contains(out, "without --if-needed") {
		t.Fatalf("--if-needed: exit %d:\n%s", code, out)
	}
	dry := func(args ...string) map[string]any {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"--json", "compact", f, "--summarizer", "extractive", "--dry-run"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
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
	out, errOut, code := runCLI(t, "--json", "compact", f, "--force", "--strategy", "safeguard")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
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
	out, _, code = runCLI(t, "--json", "compact", f, "--force", "--summarizer", "extractive")
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
	out, errOut, code := runCLI(t, "--json", "compact", f, "--force")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
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
	lock := transcript.LockPath(f)
	if err := os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"createdAt":"%s"}`, os.Getppid(), time.Now().UTC().Format(time.RFC3339))), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "compact", f, "--summarizer", "extractive", "--force"); code != exitcode.Locked {
		t.Fatalf("locked: exit %d %s", code, errOut)
	}
	os.Remove(lock)
	if now, _ := os.ReadFile(f); string(now) != string(orig) {
		t.Fatal("file changed")
	}
}
