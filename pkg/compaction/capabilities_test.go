package compaction

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxtool/ctxtool/internal/factgen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// declared is a summariser added the way ARCHITECTURE.md says (a type and
// its Capabilities), under any name: compaction must treat it by what it
// declares, never by what it is called.
type declared struct {
	name string
	caps Capabilities
	// answer writes the summary of a request (nil: a short fixed note).
	answer func(*Request) (string, error)

	mu   sync.Mutex
	reqs []*Request
}

func (d *declared) Name() string               { return d.name }
func (d *declared) Capabilities() Capabilities { return d.caps }
func (d *declared) Summarize(_ context.Context, r *Request) (string, error) {
	d.mu.Lock()
	d.reqs = append(d.reqs, r)
	d.mu.Unlock()
	if d.answer != nil {
		return d.answer(r)
	}
	return "## Goal\n- continue the work", nil
}

func (d *declared) calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.reqs)
}

// The names the built-in summarisers answer to, and one nobody knows: a
// fake that borrows a built-in's name must not borrow its treatment.
var borrowedNames = []string{"llm", "extractive", "exec", "agent", "my-agent"}

func filler(t *testing.T, tasks int) string {
	g := newGen(3)
	g.turns(0, tasks, 6, 300)
	return g.write(t, "s.jsonl")
}

// A dry run calls an Offline summariser (it shows the real summary) and
// leaves any other one alone, saying so.
func TestCapabilityOfflineDecidesTheDryRun(t *testing.T) {
	for _, name := range borrowedNames {
		for _, offline := range []bool{false, true} {
			sum := &declared{name: name, caps: Capabilities{Offline: offline}}
			res, err := CompactFile(context.Background(), filler(t, 8), Options{Settings: Settings{Force: true, KeepRecentTokens: 1000},
				Summarizer: sum, DryRun: true})
			if err != nil {
				t.Fatalf("%s offline=%v: %v", name, offline, err)
			}
			warned := false
			for _, w := range res.Warnings {
				warned = warned || strings.Contains(w, "summariser was not called")
			}
			if offline && (sum.calls() == 0 || warned || !strings.Contains(res.Summary, "continue the work")) {
				t.Errorf("%s, Offline: %d calls, warned %v, summary %q", name, sum.calls(), warned, res.Summary)
			}
			if !offline && (sum.calls() != 0 || !warned) {
				t.Errorf("%s, not Offline: %d calls, warned %v (want none, and the warning)", name, sum.calls(), warned)
			}
		}
	}
}

// The identifier guard asks again only a summariser that Retries.
func TestCapabilityRetriesDecidesTheIdentifierRetry(t *testing.T) {
	for _, name := range borrowedNames {
		for _, retries := range []bool{false, true} {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			factgen.Write(t, path, factgen.Options{Seed: 5, Turns: 24, FactsWithin: 0.5})
			sum := &declared{name: name, caps: Capabilities{Retries: retries}}
			res, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 8000, IdentifierRetry: true},
				Summarizer: sum})
			if err != nil {
				t.Fatalf("%s retries=%v: %v", name, retries, err)
			}
			asked := 0
			for _, r := range sum.reqs {
				if strings.Contains(r.Instructions, "dropped identifiers the agent needs") {
					asked++
				}
			}
			// one retry: a request per part (history, split-turn prefix)
			if retries && (res.QualityRetries != 1 || asked == 0 || asked*2 != len(sum.reqs)) {
				t.Errorf("%s, Retries: %d retries, %d of %d requests listing identifiers; want 1 retry, half", name, res.QualityRetries, asked, len(sum.reqs))
			}
			if !retries && (res.QualityRetries != 0 || asked != 0) {
				t.Errorf("%s, no Retries: %d retries, %d requests listing identifiers; want none", name, res.QualityRetries, asked)
			}
		}
	}
}

// The default strategy cuts pi's file lists to the summary budget for a
// Budgeted summariser and appends them whole for any other.
func TestCapabilityBudgetedDecidesTheFileLists(t *testing.T) {
	file := filler(t, 30)
	set := Settings{Force: true, KeepRecentTokens: 1000, ExtractiveBudgetTokens: 100}
	for _, name := range borrowedNames {
		for _, budgeted := range []bool{false, true} {
			s, err := transcript.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Prepare(s, set)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Compact(context.Background(), s, p, set, &declared{name: name, caps: Capabilities{Budgeted: budgeted}})
			s.Close()
			if err != nil {
				t.Fatalf("%s budgeted=%v: %v", name, budgeted, err)
			}
			if len(out.ReadFiles) < 20 {
				t.Fatalf("the session reads only %d files", len(out.ReadFiles))
			}
			last := out.ReadFiles[len(out.ReadFiles)-1]
			cut := strings.Contains(out.Summary, "more\n</read-files>") || strings.Contains(out.Summary, "[file lists truncated]")
			if budgeted && (!cut || strings.Contains(out.Summary, last)) {
				t.Errorf("%s, Budgeted: file lists not cut to the budget:\n%s", name, out.Summary)
			}
			if !budgeted && (cut || !strings.Contains(out.Summary, last)) {
				t.Errorf("%s, not Budgeted: file lists cut (last read file %s missing)", name, last)
			}
		}
	}
}

// When a summariser fails, the summarize strategy falls back to the trim
// extract unless the summariser is Offline.
func TestCapabilityOfflineDecidesTheTrimFallback(t *testing.T) {
	for _, name := range borrowedNames {
		for _, offline := range []bool{false, true} {
			sum := &declared{name: name, caps: Capabilities{Offline: offline},
				answer: func(*Request) (string, error) { return "", errors.New("the fake is down") }}
			res, err := CompactFile(context.Background(), filler(t, 8), Options{Settings: Settings{Strategy: StrategySummarize, Force: true},
				Summarizer: sum})
			if offline && (err == nil || !strings.Contains(err.Error(), "the fake is down")) {
				t.Errorf("%s, Offline: want the summariser's error, got %v (result %+v)", name, err, res)
			}
			if !offline && (err != nil || res.Fallback == "" || !res.Compacted) {
				t.Errorf("%s, not Offline: want the trim fallback, got %v (result %+v)", name, err, res)
			}
		}
	}
}

// A summariser with Whole gets the preparation in one call instead of the
// strategy's requests, and its declared Usage is what the result reports.
func TestCapabilityWholeAndUsage(t *testing.T) {
	for _, name := range borrowedNames {
		var mu sync.Mutex
		wholeCalls, spent := 0, Usage{Model: "fake-model", Calls: 7, InputTokens: 100, OutputTokens: 10}
		sum := &declared{name: name}
		sum.caps = Capabilities{
			Whole: func(_ context.Context, s *transcript.Session, p *Preparation, set Settings, msgs, prefix []*Msg, ops *FileOps) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				wholeCalls++
				spent.Calls, spent.InputTokens, spent.OutputTokens = spent.Calls+1, spent.InputTokens+len(msgs)*10, spent.OutputTokens+5
				return "## Goal\n- the whole preparation, summarised at once", nil
			},
			Usage: func() Usage { mu.Lock(); defer mu.Unlock(); return spent },
		}
		file := filler(t, 8)
		res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Force: true, KeepRecentTokens: 1000}, Summarizer: sum})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if wholeCalls != 1 || sum.calls() != 0 {
			t.Errorf("%s: %d whole calls, %d requests; want 1 and 0", name, wholeCalls, sum.calls())
		}
		if res.LLMCalls != 1 || res.LLMOutputTokens != 5 || res.LLMInputTokens <= 0 {
			t.Errorf("%s: usage reported %d calls, %d in, %d out; want the difference 1 call, >0 in, 5 out",
				name, res.LLMCalls, res.LLMInputTokens, res.LLMOutputTokens)
		}
		data, _ := os.ReadFile(file)
		if !strings.Contains(string(data), "summarised at once") || !strings.Contains(string(data), "<read-files>") {
			t.Errorf("%s: the written compaction lacks the summary or pi's file lists", name)
		}
	}
}

// No file of the package branches on a summariser's name: a comparison
// with the result of a Name() call, or a switch on one, fails the test.
// Names are for reports; behaviour comes from Capabilities.
func TestNothingBranchesOnASummarizerName(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	isName := func(e ast.Expr) bool {
		c, ok := e.(*ast.CallExpr)
		if !ok || len(c.Args) != 0 {
			return false
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Name"
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
					t.Errorf("%s: branches on a summariser's name; declare a Capabilities field instead", fset.Position(n.Pos()))
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isName(n.Tag) {
					t.Errorf("%s: switches on a summariser's name; declare a Capabilities field instead", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}
