package compaction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/estimate"
)

// The kept tail must really be about keepRecentTokens provider tokens,
// measured from the usage records (pi's chars/4 cut keeps ~1.3–1.5×).
func TestKeptTailMatchesAskedTokens(t *testing.T) {
	var ratios []float64
	for _, name := range []string{fixture("pi-v1-before-compaction.jsonl"), fixture("pi-v1-compact-705ba5d.jsonl"),
		fixture("pi-v1-large-session.jsonl"), filepath.Join(oracle.ModuleRoot(), "testdata", "sample-v3.jsonl")} {
		s := testkit.Load(t, name)
		m, _ := measureFor(s, s.Context(), estimate.Options{})
		for _, keep := range []int{10000, 20000, 40000} {
			p, err := Prepare(s, Settings{KeepRecentTokens: keep, Count: m.Count})
			if err != nil {
				t.Fatal(err)
			}
			real, ok := RealKeptTokens(p, m.Count)
			if !ok {
				// e.g. the last message alone is larger than keep: no
				// usage record lies inside the kept tail
				t.Logf("%s keep=%d: not measurable", name, keep)
				continue
			}
			r := float64(real) / float64(keep)
			ratios = append(ratios, r)
			if r < 0.7 || r > 1.3 {
				t.Errorf("%s keep=%d: kept %d real tokens (%.2f× asked)", name, keep, real, r)
			}
		}
		s.Close()
	}
	if len(ratios) < 6 {
		t.Fatalf("only %d measurable cuts", len(ratios))
	}
	sort.Float64s(ratios)
	t.Logf("real/asked: %v", ratios)
	med := ratios[len(ratios)/2]
	if med < 0.85 || med > 1.15 {
		t.Fatalf("median real/asked %.2f outside 0.85–1.15 (%v)", med, ratios)
	}
}

// TestMeasurementTable prints the table of the note
// (CTXTOOL_MEASURE=1 go test ./pkg/compaction -run MeasurementTable -v).
func TestMeasurementTable(t *testing.T) {
	if os.Getenv("CTXTOOL_MEASURE") == "" {
		t.Skip("set CTXTOOL_MEASURE=1")
	}
	oracle.Require(t)
	files := map[string]string{}
	for _, fx := range oracle.Fixtures(t) {
		files[filepath.Base(fx)] = fx
	}
	samples, _ := filepath.Glob(filepath.Join(oracle.ModuleRoot(), "testdata", "*.jsonl"))
	for _, f := range samples {
		files["testdata/"+filepath.Base(f)] = f
	}
	for n, f := range scenarios(t) {
		files["gen:"+n] = f
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| session | strategy | tokensBefore → tokensAfter (extractive) | tokensAfter (llm) | LLM calls | LLM input tokens | kept real / asked |\n|---|---|---|---|---|---|---|\n")
	for _, n := range names {
		keep := 20000
		if strings.HasPrefix(n, "gen:") || strings.HasPrefix(n, "testdata/edge-") || n == "testdata/sample-v1.jsonl" {
			keep = 3000
		}
		for _, st := range strategies {
			set := Settings{Strategy: st, Force: true, KeepRecentTokens: keep}
			f1 := testkit.CopyToTemp(t, files[n])
			ex, err := CompactFile(context.Background(), f1, Options{Settings: set, Summarizer: Extractive{}})
			if err != nil || !ex.Compacted {
				fmt.Fprintf(&b, "| %s | %s | %s | | | | |\n", n, st, ex.Reason)
				continue
			}
			srv := llmtest.New()
			f2 := testkit.CopyToTemp(t, files[n])
			lr, err := CompactFile(context.Background(), f2, Options{Settings: set, Summarizer: llmSummarizer(t, srv, nil)})
			srv.Close()
			if err != nil {
				t.Fatal(err)
			}
			kept := "n/a"
			if strings.HasPrefix(n, "gen:") {
				kept = "n/a (synthetic usage)"
			} else if real, ok := RealKeptTokens(ex.Preparation(), ex.Preparation().keepCount); ok {
				asked := keep
				if st == StrategySummarize {
					kept = fmt.Sprintf("%d (last 6 msgs)", real)
				} else {
					kept = fmt.Sprintf("%d / %d = %.2f", real, asked, float64(real)/float64(asked))
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %d → %d | %d | %d | %d | %s |\n", n, st, ex.TokensBefore, ex.TokensAfter, lr.TokensAfter, lr.LLMCalls, lr.LLMInputTokens, kept)
		}
	}
	fmt.Println(b.String())
}
