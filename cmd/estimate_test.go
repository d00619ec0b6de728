package cmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

func runEstimateJSON(t *testing.T, opts *EstimateOptions) ([]EstimateReport, string, error) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	opts.IO = io
	opts.JSON = true
	err := runEstimate(opts)
	var reports []EstimateReport
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var r EstimateReport
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		reports = append(reports, r)
	}
	return reports, errOut.String(), err
}

func edgeFiles(t *testing.T) []string {
	files, _ := filepath.Glob("../pkg/transcript/testdata/*.jsonl")
	more, _ := filepath.Glob("../testdata/*.jsonl")
	return append(append(oracle.Fixtures(t), files...), more...)
}

// `estimate --tokenizer heuristic` equals pi's own numbers on every fixture
// and test session: tokens, context message count, and each message.
func TestEstimateHeuristicEqualsPi(t *testing.T) {
	files := edgeFiles(t)
	pis := oracle.Check(t, true, false, files...)
	reports, _, err := runEstimateJSON(t, &EstimateOptions{Files: files, Size: estimate.Options{Method: "heuristic"}, PerMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reports {
		pi := pis[i]
		if r.Tokens != pi.HeuristicTokens || r.ContextMessages != pi.ContextMessages {
			t.Errorf("%s: tokens %d msgs %d; pi %d / %d", r.File, r.Tokens, r.ContextMessages, pi.HeuristicTokens, pi.ContextMessages)
			continue
		}
		for j, m := range r.Messages {
			if m.Tokens != pi.Messages[j].Tokens || m.Role != pi.Messages[j].Role {
				t.Errorf("%s: message %d (line %d): %s %d; pi %s %d", r.File, j, m.Line, m.Role, m.Tokens, pi.Messages[j].Role, pi.Messages[j].Tokens)
				break
			}
		}
		if len(r.MalformedLines) != len(pi.MalformedLines) {
			t.Errorf("%s: malformedLines %v, pi %v", r.File, r.MalformedLines, pi.MalformedLines)
		}
	}
}

func TestEstimateUsageNeverReportsStaleAnchor(t *testing.T) {
	for _, f := range oracle.Fixtures(t) {
		if !strings.Contains(f, "d5dde00") {
			continue
		}
		reports, stderr, err := runEstimateJSON(t, &EstimateOptions{Files: []string{f}, Size: estimate.Options{Method: "usage"}})
		if err != nil {
			t.Fatal(err)
		}
		r := reports[0]
		// pi's naive anchor is 186,045 (the pre-compaction size); the
		// context is 21,265 by chars/4, plus the system prompt and tools the
		// stale record measured (a few thousand), scaled like that record.
		rej := r.UsageRejected
		if !r.UsageStale || r.Tokens < 21265 || r.Tokens > 40000 || rej == nil || rej.Class != "stale" || rej.Line != 462 ||
			r.UsageTokens != 0 || !strings.Contains(stderr, "usage at line 462 not used (stale: precedes the compaction") {
			t.Fatalf("usage estimate %d stale=%v rejected=%+v stderr=%q", r.Tokens, r.UsageStale, rej, stderr)
		}
	}
}

func TestEstimateFailOver(t *testing.T) {
	f := oracle.Fixtures(t)[0]
	_, _, err := runEstimateJSON(t, &EstimateOptions{Files: []string{f}, Size: estimate.Options{Method: "heuristic"}, FailOver: "50%"})
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != exitcode.Threshold {
		t.Fatalf("fail-over 50%%: %v, want exit 3", err)
	}
	_, _, err = runEstimateJSON(t, &EstimateOptions{Files: []string{f}, Size: estimate.Options{Method: "heuristic"}, FailOver: "99%"})
	if err != nil {
		t.Fatalf("fail-over 99%%: %v", err)
	}
	_, _, err = runEstimateJSON(t, &EstimateOptions{Files: []string{f}, Size: estimate.Options{Method: "heuristic"}, FailOver: "lots"})
	if !errors.As(err, &ee) || ee.Code != exitcode.Usage {
		t.Fatalf("bad --fail-over: %v, want exit 2", err)
	}
}

func TestEstimateBadFileKeepsGoing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"type":"message"}`+"\n"), 0o644)
	good := "../pkg/transcript/testdata/spec-v3.jsonl"
	reports, stderr, err := runEstimateJSON(t, &EstimateOptions{Files: []string{bad, good}, Size: estimate.Options{Method: "heuristic"}})
	if exitcode.Code(err) != exitcode.Runtime || len(reports) != 2 || reports[1].Tokens != 78 || reports[0].Error == "" {
		t.Fatalf("err %v reports %+v", err, reports)
	}
	if !strings.Contains(stderr, "bad.jsonl:1") {
		t.Fatalf("error must name file and line: %q", stderr)
	}
}

// The root command wiring: flags, config file and env precedence.
func TestEstimateThroughRootCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("estimate:\n  tokenizer: heuristic\ncontextWindow: 100000\n"), 0o644)
	run := func(args ...string) (string, error) {
		io, _, out, _ := iostreams.Test()
		root, _ := NewRootCmd(io)
		root.SetArgs(args)
		err := root.Execute()
		return out.String(), err
	}
	out, err := run("estimate", "--config", cfg, "--json", "../pkg/transcript/testdata/spec-v3.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var r EstimateReport
	json.Unmarshal([]byte(out), &r)
	if r.Method != "heuristic" || r.ContextWindow != 100000 || r.Tokens != 78 {
		t.Fatalf("config not applied: %+v", r)
	}
	t.Setenv("CTXTOOL_CONTEXTWINDOW", "50000")
	out, _ = run("estimate", "--config", cfg, "--json", "../pkg/transcript/testdata/spec-v3.jsonl")
	json.Unmarshal([]byte(out), &r)
	if r.ContextWindow != 50000 {
		t.Fatalf("env must beat the config file: %d", r.ContextWindow)
	}
	out, _ = run("estimate", "--config", cfg, "--json", "--context-window", "64000", "../pkg/transcript/testdata/spec-v3.jsonl")
	json.Unmarshal([]byte(out), &r)
	if r.ContextWindow != 64000 {
		t.Fatalf("flag must beat env: %d", r.ContextWindow)
	}
}
