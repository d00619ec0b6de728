package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/usagekit"
	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/rolling"
)

// sizes is what one command's JSON says about a session's context.
type sizes struct {
	cmd         string
	tokens      int
	window      int
	utilization float64
}

func jsonLine(t *testing.T, out string, v any) {
	t.Helper()
	line := strings.TrimSpace(out)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		t.Fatalf("want one JSON line, got %q", out)
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
}

// measureAll runs estimate, compact --dry-run, roll --dry-run and
// checkpoint --trigger auto-80pct --dry-run on one file with the same flags
// and returns what each reports, estimate's report first.
func measureAll(t *testing.T, file string, flags ...string) (EstimateReport, []sizes) {
	t.Helper()
	state := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, _ := runOK(t, append(args, append(flags, file)...)...)
		return out
	}
	var est EstimateReport
	jsonLine(t, run("estimate", "--json"), &est)
	var comp compaction.Result
	jsonLine(t, run("compact", "--dry-run", "--json", "--summarizer", "extractive"), &comp)
	var roll rolling.Report
	jsonLine(t, run("roll", "--dry-run", "--json", "--state-dir", state), &roll)
	var cp checkpoint.TakeResult
	jsonLine(t, run("checkpoint", "--trigger", "auto-80pct", "--dry-run", "--json", "--state-dir", state), &cp)
	if entries, _ := os.ReadDir(filepath.Join(state, "context")); len(entries) != 0 {
		t.Fatalf("checkpoint --dry-run wrote %v", entries)
	}
	return est, []sizes{
		{"estimate", est.Tokens, est.ContextWindow, est.Utilization},
		{"compact", comp.ContextTokens, comp.ContextWindow, comp.Utilization},
		{"roll", roll.TokensBefore, roll.ContextWindow, roll.Utilization},
		{"checkpoint", cp.InputTokens, cp.ContextWindow, cp.Utilization},
	}
}

// Issue 9: on sessions whose usage records lie (pinned at 4096, flat at a
// larger value, zero-usage mirror replies, a model only in the header,
// usage that outgrows the window), every command reports the same tokens
// and utilization (±0.5%) for the same file and flags, the window of the
// session's real model, and which usage record it did not trust.
func TestCommandsAgreeOnContextSize(t *testing.T) {
	cleanEnv(t)
	cases := usagekit.Write(t)
	for _, c := range cases {
		for _, tok := range []string{"auto", "usage", "heuristic"} {
			t.Run(c.Name+"/"+tok, func(t *testing.T) {
				est, got := measureAll(t, c.File, "--tokenizer", tok)
				if est.ContextWindow != c.Window || est.Model != c.Model {
					t.Fatalf("window %d (%s) model %q, want %d %q", est.ContextWindow, est.WindowSource, est.Model, c.Window, c.Model)
				}
				for _, g := range got {
					if math.Abs(float64(g.tokens-est.Tokens)) > 0.005*float64(est.Tokens) || g.window != est.ContextWindow ||
						math.Abs(g.utilization-est.Utilization) > 0.005*est.Utilization {
						t.Errorf("%s says %d tokens, %.4f of %d; estimate %d, %.4f of %d", g.cmd, g.tokens, g.utilization, g.window,
							est.Tokens, est.Utilization, est.ContextWindow)
					}
				}
				if tok == "heuristic" {
					return
				}
				rej := est.UsageRejected
				if c.PiAnchorClass == "fresh" {
					if rej != nil {
						t.Fatalf("rejected a real anchor: %+v", rej)
					}
				} else if rej == nil || string(rej.Class) != c.PiAnchorClass {
					t.Fatalf("usageRejected %+v, want class %s", rej, c.PiAnchorClass)
				}
				// Against the ground truth: with trustworthy evidence the
				// auto estimate is within 3% of what the provider would
				// count (usage is pi's rule: chars/4 after the anchor).
				if tok == "auto" && c.Name != "pinned-4096" && math.Abs(float64(est.Tokens-c.TrueTokens)) > 0.03*float64(c.TrueTokens) {
					t.Errorf("estimate %d, ground truth %d", est.Tokens, c.TrueTokens)
				}
			})
		}
	}
}

// The real sessions of ../shared/fixtures/wild (pi, OpenClaw, and the
// Claude Code and Codex transcripts issue 14's readers open) give the same
// figures in every command too.
func TestCommandsAgreeOnWildSessions(t *testing.T) {
	cleanEnv(t)
	dir := oracle.WildDir(t)
	var files []string
	for _, kind := range []string{"openclaw", "pi", "claude-code", "codex"} {
		fs, _ := filepath.Glob(filepath.Join(dir, kind, "*.jsonl"))
		files = append(files, fs...)
	}
	if len(files) < 13 {
		t.Fatalf("only %d wild files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src := testkit.ReadFile(t, f)
			file := filepath.Join(t.TempDir(), filepath.Base(f)) // the fixtures are read-only; roll wants a lock beside the file
			testkit.WriteFile(t, file, src, 0o644)
			est, got := measureAll(t, file)
			for _, g := range got {
				if math.Abs(float64(g.tokens-est.Tokens)) > 0.005*float64(est.Tokens) || g.window != est.ContextWindow {
					t.Errorf("%s says %d of %d; estimate %d of %d", g.cmd, g.tokens, g.window, est.Tokens, est.ContextWindow)
				}
			}
		})
	}
}

// Issue 9: roll's arithmetic is closed — tokensBefore = evictedTokens +
// replacedTokens + keptTokens − noteTokens (±2%), keptTokens is what
// estimate measures afterwards, it lands within ±5% of the target or says
// why — and pi's own loader rebuilds the kept context we report.
func TestRollClosesOnUsageKit(t *testing.T) {
	cleanEnv(t)
	oracle.Require(t)
	cases := usagekit.Write(t)
	for _, c := range cases {
		for _, tok := range []string{"auto", "heuristic"} {
			t.Run(c.Name+"/"+tok, func(t *testing.T) {
				src, _ := os.ReadFile(c.File)
				file := filepath.Join(t.TempDir(), filepath.Base(c.File))
				testkit.WriteFile(t, file, src, 0o644)
				out, errOut, code := runCLI(t, "roll", "--json", "--trigger", "0", "--target-utilization", "0.35",
					"--state-dir", t.TempDir(), "--tokenizer", tok, file)
				if code != 0 {
					t.Fatalf("roll: exit %d %s", code, errOut)
				}
				var r rolling.Report
				jsonLine(t, out, &r)
				if !r.Rolled {
					t.Fatalf("not rolled: %+v", r)
				}
				sum := r.EvictedTokens + r.ReplacedTokens + r.KeptTokens - r.NoteTokens
				if d := math.Abs(float64(sum - r.TokensBefore)); d > 0.02*float64(r.TokensBefore) {
					t.Errorf("not closed: before %d, evicted %d + replaced %d + kept %d − note %d = %d", r.TokensBefore,
						r.EvictedTokens, r.ReplacedTokens, r.KeptTokens, r.NoteTokens, sum)
				}
				if d := math.Abs(float64(r.KeptTokens - r.TargetTokens)); d > 0.05*float64(r.TargetTokens) && r.Reason == "" {
					t.Errorf("kept %d, target %d, and no reason given", r.KeptTokens, r.TargetTokens)
				}
				var est EstimateReport
				eo, _, _ := runCLI(t, "estimate", "--json", "--tokenizer", tok, file)
				jsonLine(t, eo, &est)
				if est.Tokens != r.KeptTokens {
					t.Errorf("estimate after the roll %d ≠ keptTokens %d", est.Tokens, r.KeptTokens)
				}
				pi := oracle.CheckOne(t, file)
				if !pi.Loads || pi.ContextMessages != r.KeptMessages+1 || pi.FirstRole != "compactionSummary" {
					t.Fatalf("pi rebuilds %d messages (first %s), we kept %d + the note", pi.ContextMessages, pi.FirstRole, r.KeptMessages)
				}
				var heur EstimateReport
				ho, _, _ := runCLI(t, "estimate", "--json", "--tokenizer", "heuristic", file)
				jsonLine(t, ho, &heur)
				if heur.Tokens != pi.HeuristicTokens {
					t.Errorf("pi counts %d chars/4 tokens in the rolled context, we %d", pi.HeuristicTokens, heur.Tokens)
				}
				if tok == "heuristic" && r.KeptTokens != pi.HeuristicTokens {
					t.Errorf("heuristic roll kept %d, pi's loader counts %d", r.KeptTokens, pi.HeuristicTokens)
				}
				t.Logf("before %d → kept %d (target %d, %+.1f%%), evicted %d, note %d; pi: %d messages, %d chars/4 tokens %s",
					r.TokensBefore, r.KeptTokens, r.TargetTokens, 100*(float64(r.KeptTokens)/float64(r.TargetTokens)-1), r.EvictedTokens, r.NoteTokens,
					pi.ContextMessages, pi.HeuristicTokens, r.Reason)
			})
		}
	}
}

// Issue 9: compact reports the messages pi will rebuild (tokensAfter, pi's
// rule, checked against pi's loader) and the next request with system
// prompt and tools (nextRequestTokens), which the estimate that follows
// reports within 2%.
func TestCompactNextRequestIsTheNextEstimate(t *testing.T) {
	cleanEnv(t)
	oracle.Require(t)
	cases := usagekit.Write(t)
	files := []string{oracle.Fixture("pi-v1-large-session.jsonl")}
	for _, c := range cases {
		files = append(files, c.File)
	}
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			data, _ := os.ReadFile(src)
			file := filepath.Join(t.TempDir(), filepath.Base(src))
			testkit.WriteFile(t, file, data, 0o644)
			out, _ := runOK(t, "compact", "--json", "--summarizer", "extractive", "--keep-recent-tokens", "2000", file)
			var r compaction.Result
			jsonLine(t, out, &r)
			if !r.Compacted || r.NextRequestTokens <= r.TokensAfter/2 || r.NextRequestTokens >= r.ContextTokens {
				t.Fatalf("compacted %v: tokensAfter %d nextRequest %d context %d", r.Compacted, r.TokensAfter, r.NextRequestTokens, r.ContextTokens)
			}
			var est EstimateReport
			eo, _, _ := runCLI(t, "estimate", "--json", file)
			jsonLine(t, eo, &est)
			if d := math.Abs(float64(est.Tokens - r.NextRequestTokens)); d > 0.02*float64(r.NextRequestTokens) {
				t.Errorf("estimate after compact %d, compact said the next request is %d", est.Tokens, r.NextRequestTokens)
			}
			if pi := oracle.CheckOne(t, file); pi.HeuristicTokens != r.TokensAfter {
				t.Errorf("pi's loader counts %d, compact said tokensAfter %d", pi.HeuristicTokens, r.TokensAfter)
			}
			// Nothing left to do: nothing written, and no "→ 0".
			out, _, _ = runCLI(t, "compact", file)
			if strings.Contains(out, "→ 0") || !strings.Contains(out, "unchanged: nothing written") {
				t.Errorf("second compact:\n%s", out)
			}
		})
	}
}

// Issue 9: a user reading the human output (no --json) of any command learns
// that a usage record was not trusted and which line it is — not only the
// JSON consumer. Each command names the rejected record's line on stderr or
// stdout.
func TestEveryCommandSaysWhichUsageItDistrusted(t *testing.T) {
	cleanEnv(t)
	cases := usagekit.Write(t)
	for _, c := range cases {
		if c.PiAnchorClass == "fresh" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			var est EstimateReport
			out, _ := runOK(t, "estimate", "--json", c.File)
			jsonLine(t, out, &est)
			if est.UsageRejected == nil {
				t.Fatalf("estimate rejected nothing on %s", c.Name)
			}
			want := fmt.Sprintf("usage at line %d not used", est.UsageRejected.Line)
			state := t.TempDir()
			for _, args := range [][]string{
				{"estimate"},
				{"compact", "--dry-run", "--summarizer", "extractive"},
				{"roll", "--dry-run", "--state-dir", state},
				{"checkpoint", "--trigger", "auto-80pct", "--dry-run", "--state-dir", state},
			} {
				out, errOut := runOK(t, append(args, c.File)...)
				if !strings.Contains(out+errOut, want) {
					t.Errorf("ctxtool %v does not say %q:\nstdout:\n%s\nstderr:\n%s", args, want, out, errOut)
				}
			}
		})
	}
}

// lint's context-over-budget rule measures the context as estimate does
// with the same flags (window overrides included): the limit equal to
// estimate's figure passes, one token less fails and names that figure.
func TestLintBudgetAgreesWithEstimate(t *testing.T) {
	cleanEnv(t)
	cases := usagekit.Write(t)
	for _, c := range cases {
		flagSets := [][]string{nil, {"--context-window", "100000"}, {"--model", "gpt-4"}, {"--tokenizer", "heuristic"}}
		for _, flags := range flagSets {
			t.Run(c.Name+strings.Join(flags, "="), func(t *testing.T) {
				var est EstimateReport
				out, _ := runOK(t, append(append([]string{"estimate", "--json"}, flags...), c.File)...)
				jsonLine(t, out, &est)
				budget := func(limit int) []string {
					args := append([]string{"lint", "--json", "--max-tokens", fmt.Sprint(limit)}, flags...)
					out, errOut, _ := runCLI(t, append(args, c.File)...)
					var msgs []string
					for _, f := range jsonFindings(t, out) {
						if f.Rule == "context-over-budget" {
							msgs = append(msgs, f.Message)
						}
					}
					if errOut != "" && len(msgs) == 0 && out == "" {
						t.Fatalf("lint: %s", errOut)
					}
					return msgs
				}
				if msgs := budget(est.Tokens); len(msgs) != 0 {
					t.Fatalf("--max-tokens %d (estimate's figure) fires: %q", est.Tokens, msgs)
				}
				msgs := budget(est.Tokens - 1)
				if len(msgs) != 1 || !strings.Contains(msgs[0], fmt.Sprintf("the active context is %d tokens", est.Tokens)) {
					t.Fatalf("--max-tokens %d: want one finding naming %d tokens, got %q", est.Tokens-1, est.Tokens, msgs)
				}
			})
		}
	}
}

// How the file was read (here a clamped out-of-range number) is reported
// by every command that reads it, in the same words.
func TestEveryCommandReportsReadWarnings(t *testing.T) {
	cleanEnv(t)
	src := testkit.ReadFile(t, "../testdata/sample-v3.jsonl")
	lines := strings.SplitAfter(string(src), "\n")
	n := -1
	for i, l := range lines {
		if strings.Contains(l, `"totalTokens":4616`) {
			lines[i], n = strings.Replace(l, `"output":355`, `"output":1e300`, 1), i+1
		}
	}
	if n < 0 {
		t.Fatal("sample changed: no usage record with totalTokens 4616")
	}
	file := filepath.Join(t.TempDir(), "clamped.jsonl")
	testkit.WriteFile(t, file, []byte(strings.Join(lines, "")), 0o644)
	want := fmt.Sprintf("line %d: usage.output 1e300 is out of range", n)
	est, got := measureAllWarnings(t, file)
	if !slices.ContainsFunc(est, func(w string) bool { return strings.Contains(w, want) }) {
		t.Fatalf("estimate's warnings %q lack %q", est, want)
	}
	for cmd, ws := range got {
		if !slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("%s's warnings %q lack %q", cmd, ws, want)
		}
	}
}

// measureAllWarnings returns the warnings of estimate, then of compact,
// roll and checkpoint (dry runs, --json).
func measureAllWarnings(t *testing.T, file string) ([]string, map[string][]string) {
	t.Helper()
	state := t.TempDir()
	run := func(v any, args ...string) {
		t.Helper()
		out, _ := runOK(t, append(args, "--json", file)...)
		jsonLine(t, out, v)
	}
	var est EstimateReport
	run(&est, "estimate")
	var comp compaction.Result
	run(&comp, "compact", "--dry-run", "--summarizer", "extractive")
	var roll rolling.Report
	run(&roll, "roll", "--dry-run", "--state-dir", state)
	var cp checkpoint.TakeResult
	run(&cp, "checkpoint", "--trigger", "auto-80pct", "--dry-run", "--state-dir", state)
	return est.Warnings, map[string][]string{"compact": comp.Warnings, "roll": roll.Warnings, "checkpoint": cp.Warnings}
}

// Every command that measures a context takes its window from the same
// settings: OpenClaw's window cap (config contextTokens) caps it in
// estimate, compact, roll and checkpoint, and in lint's budget rule and
// budget too, which used to resolve the window on their own without the
// cap (a 200k window where estimate said 40k).
func TestEveryCommandCapsTheWindow(t *testing.T) {
	cleanEnv(t)
	const window = 40000
	cfg := testkit.WriteTemp(t, "c.yaml", []byte(fmt.Sprintf("contextTokens: %d\n", window)))
	file, _ := sampleCopy(t)
	est, got := measureAll(t, file, "--config", cfg)
	if est.ContextWindow != window {
		t.Fatalf("estimate: window %d (%s), want the cap %d", est.ContextWindow, est.WindowSource, window)
	}
	for _, g := range got {
		if g.window != window {
			t.Errorf("%s: window %d, want the cap %d", g.cmd, g.window, window)
		}
	}
	var b struct {
		ContextWindow int `json:"contextWindow"`
	}
	out, _ := runOK(t, "budget", file, "--config", cfg, "--state-dir", t.TempDir(), "--json")
	jsonLine(t, out, &b)
	if b.ContextWindow != window {
		t.Errorf("budget: window %d, want the cap %d", b.ContextWindow, window)
	}
	out, errOut, _ := runCLI(t, "lint", file, "--config", cfg, "--max-utilization", "0.01%", "--json")
	if want := fmt.Sprintf("of the window of %d tokens", window); !strings.Contains(out, want) {
		t.Errorf("lint's budget finding does not say %q:\n%s%s", want, out, errOut)
	}
}
