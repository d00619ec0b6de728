package checkpoint

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/tokenizer"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden/checkpoint")

// goldenNow is the injected clock: no wall-clock time reaches a golden file.
var goldenNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func goldenDir() string {
	return filepath.Join(oracle.ModuleRoot(), "testdata", "golden", "checkpoint")
}

func o200k(t testing.TB) func(string) int {
	tk, err := tokenizer.Get("o200k")
	if err != nil {
		t.Fatalf("o200k tokenizer: %v", err)
	}
	return tk.Count
}

// takeLatest takes a checkpoint with o and the fixed clock and returns what
// o.Store then holds as the latest, failing the test when none was written.
func takeLatest(t *testing.T, o TakeOptions) (*Checkpoint, []string, *TakeResult) {
	t.Helper()
	o.Now = func() time.Time { return goldenNow }
	res, err := Take(o)
	if err != nil {
		t.Fatalf("%s: %v", o.File, err)
	}
	if !res.Written {
		t.Fatalf("%s: not written: %s", o.File, res.Reason)
	}
	cp, warns, err := o.Store.Latest(res.SessionKey)
	if err != nil {
		t.Fatalf("latest: %v", err)
	}
	return cp, warns, res
}

// takeFixture checkpoints a fixture into a fresh store with the fixed clock
// and returns the checkpoint and its YAML with the machine-specific fixture
// directory replaced by "fixtures/".
func takeFixture(t *testing.T, file string) (*Checkpoint, []byte, *TakeResult) {
	t.Helper()
	cp, warns, res := takeLatest(t, TakeOptions{File: file, Store: &Store{StateDir: t.TempDir()}})
	if len(warns) > 0 {
		t.Fatalf("latest: %v", warns)
	}
	cp.Meta.SessionFile = "fixtures/" + filepath.Base(file)
	data, err := Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	return cp, data, res
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir(), name)
	if *update {
		if err := os.MkdirAll(goldenDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, path, got, 0o644)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./pkg/checkpoint -update' to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (go test ./pkg/checkpoint -update, then review the diff):\n%s", name, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n golden: %q\n    got: %q", i+1, x, y)
		}
	}
	return ""
}

// TestGoldenFixtures: the checkpoint YAML and the resume text of every real
// fixture are byte-stable, the YAML round-trips, and the text measured with
// o200k stays within the budget.
func TestGoldenFixtures(t *testing.T) {
	count := o200k(t)
	for _, f := range oracle.Fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			cp, data, res := takeFixture(t, f)
			checkGolden(t, name+".yaml", data)
			text := Render(cp, RenderOptions{})
			checkGolden(t, name+".txt", []byte(text))
			n := count(text)
			t.Logf("%s: restore text %d o200k tokens (%d chars)", name, n, len([]rune(text)))
			if n > MaxTokens {
				t.Errorf("restore text is %d o200k tokens, over %d", n, MaxTokens)
			}
			if n < 400 {
				t.Errorf("restore text is only %d tokens for a long session: the budget is not used", n)
			}
			if res.ResumeTokens != n {
				t.Errorf("reported tokens %d, measured %d", res.ResumeTokens, n)
			}
			// Stable: a second run gives the same bytes.
			_, again, _ := takeFixture(t, f)
			if string(again) != string(data) {
				t.Error("two runs differ")
			}
		})
	}
}

// TestFixtureFacts pins what the builder must find in the fixtures.
func TestFixtureFacts(t *testing.T) {
	byName := map[string]*Checkpoint{}
	for _, f := range oracle.Fixtures(t) {
		cp, _, _ := takeFixture(t, f)
		byName[strings.TrimSuffix(filepath.Base(f), ".jsonl")] = cp
	}
	// d5dde00 ends with a compaction that kept from an assistant message: a
	// split turn, nothing said since.
	if cp := byName["pi-v1-session-d5dde00"]; cp == nil || !cp.Working.Interrupted || cp.Meta.CompactionCount != 1 {
		t.Errorf("d5dde00: %+v", cp)
	}
	// The gauge is estimate's number (estimate.Measure, same options).
	for name, cp := range byName {
		s := testkit.Load(t, oracle.Fixture(name+".jsonl"))
		m, err := estimate.Measure(s, s.Context(), estimate.Options{})
		s.Close()
		if err != nil || cp.Meta.TokenUsage.InputTokens != m.Tokens || cp.Meta.TokenUsage.ContextWindow != m.Window.Tokens {
			t.Errorf("%s: checkpoint says %d/%d, estimate %d/%d (%v)", name, cp.Meta.TokenUsage.InputTokens, cp.Meta.TokenUsage.ContextWindow, m.Tokens, m.Window.Tokens, err)
		}
	}
	// before-compaction: two compactions.
	if cp := byName["pi-v1-before-compaction"]; cp == nil || cp.Meta.CompactionCount != 2 {
		t.Errorf("before-compaction meta: %+v", cp.Meta)
	}
	// large-session: anchored on its last usage record, 177,657 of 200k,
	// plus the short reply after it.
	if cp := byName["pi-v1-large-session"]; cp == nil || cp.Meta.TokenUsage.InputTokens < 177657 || cp.Meta.TokenUsage.InputTokens > 177657+100 {
		t.Errorf("large-session meta: %+v", cp.Meta)
	}
	for name, cp := range byName {
		if len(cp.Resources.ToolsUsed) == 0 || len(cp.Resources.FilesRead) == 0 || len(cp.Thread.KeyExchanges) == 0 || cp.Working.Topic == "" {
			t.Errorf("%s: empty sections: %+v", name, cp)
		}
	}
}

// TestRestoreBudgetOn1000Turns: a generated 1,000-turn session (tool-heavy,
// with compactions, errors and some CJK turns) renders within 800 o200k
// tokens.
func TestRestoreBudgetOn1000Turns(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a large session")
	}
	count := o200k(t)
	file := filepath.Join(t.TempDir(), "long.jsonl")
	sessiongen.Write(t, file, sessiongen.Options{
		Seed: 1000, Turns: 1000, Compactions: 3, ToolErrors: 40, CJKShare: 0.2, TrailingToolCall: true,
		AbortedAssistants: 5, NoLineIndex: true,
	})
	cp, _, _ := takeLatest(t, TakeOptions{File: file, Store: &Store{StateDir: t.TempDir()}})
	text := Render(cp, RenderOptions{})
	n := count(text)
	t.Logf("1000-turn session: restore text %d o200k tokens; %d decisions, %d exchanges, %d files read, %d modified, %d tools, interrupted=%v",
		n, len(cp.Decisions), len(cp.Thread.KeyExchanges), len(cp.Resources.FilesRead), len(cp.Resources.FilesModified), len(cp.Resources.ToolsUsed), cp.Working.Interrupted)
	if n > MaxTokens || n < 400 {
		t.Fatalf("restore text %d tokens, want 400..%d", n, MaxTokens)
	}
	if !cp.Working.Interrupted || cp.Meta.CompactionCount != 3 {
		t.Errorf("trailing tool call / compactions not seen: %+v %d", cp.Working, cp.Meta.CompactionCount)
	}
	if len(cp.Decisions) > MaxDecisions || len(cp.Thread.KeyExchanges) > MaxExchanges || len(cp.Resources.FilesRead) > MaxFiles {
		t.Errorf("caps exceeded")
	}
}

// TestRenderNeverExceedsMax: worst-case content (every section full of CJK,
// emoji and code) with the o200k counter, and with the conservative counter
// used as a stand-in, stays within 800 o200k tokens.
func TestRenderNeverExceedsMax(t *testing.T) {
	count := o200k(t)
	cjk := strings.Repeat("東京で会議の準備をしています🙂", 20)
	code := strings.Repeat(`{"k":[1,2,3],"x":"\u00e9"};`, 20)
	cp := sampleCheckpoint()
	cp.Meta.CompactionCount = 9
	cp.Working.Topic, cp.Working.NextAction = cjk, code+cjk
	cp.Working.LastToolCall = &ToolCallRef{Name: cjk, ParamsSummary: code}
	cp.Thread.Summary = cjk + " ... " + cjk
	for i := 0; i < MaxDecisions; i++ {
		cp.Decisions = append(cp.Decisions, Decision{ID: fmt.Sprintf("d%d", i+1), What: cjk, When: "2026-02-24T14:15:00Z"})
	}
	for i := 0; i < MaxExchanges; i++ {
		cp.Thread.KeyExchanges = append(cp.Thread.KeyExchanges, Exchange{Role: "user", Gist: cjk})
	}
	for i := 0; i < MaxFiles; i++ {
		cp.Resources.FilesRead = append(cp.Resources.FilesRead, fmt.Sprintf("/very/deep/%s/%d/%s.go", cjk[:30], i, code[:20]))
		cp.Resources.FilesModified = append(cp.Resources.FilesModified, fmt.Sprintf("/x%d/%s", i, code))
		cp.Resources.ToolsUsed = append(cp.Resources.ToolsUsed, fmt.Sprintf("tool_%d_%s", i, cjk[:12]))
	}
	for i := 0; i < MaxOpenItems; i++ {
		cp.OpenItems = append(cp.OpenItems, code+cjk)
		cp.Learnings = append(cp.Learnings, cjk+code)
	}
	for name, c := range map[string]func(string) int{"o200k": count, "conservative": conservativeCount} {
		text := Render(cp, RenderOptions{Count: c})
		if n := count(text); n > MaxTokens {
			t.Errorf("%s counter: %d o200k tokens", name, n)
		} else {
			t.Logf("%s counter: %d o200k tokens", name, n)
		}
	}
	// A tiny budget forces the final cut, still within it.
	text := Render(cp, RenderOptions{Count: count, Max: 100, Target: 100})
	if n := count(text); n > 100 || !strings.Contains(text, "cut to fit") {
		t.Errorf("cut text: %d tokens\n%s", n, text)
	}
}
