package recall_test

import (
	"context"
	"os"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// Ranking quality on the labelled query set (recalltest.WriteEvalCorpus:
// 12 pi sessions, 4 Claude Code, 4 Codex; identifier, exact-phrase and
// paraphrased queries about planted facts): hit@1 ≥ 0.8 and MRR@10 ≥ 0.9
// on both backends. The table goes to the log (-v); RECALL_QUALITY_OUT
// appends it to a file.
func TestRecallQuality(t *testing.T) { eachBackend(t, testRecallQuality) }

func testRecallQuality(t *testing.T, k kit) {
	dir := t.TempDir()
	qs := recalltest.WriteEvalCorpus(t, dir, 12, 4)
	ix := k.open(t)
	files := sessionFiles(t, dir)
	if len(files) != 20 {
		t.Fatalf("%d session files, want 20", len(files))
	}
	indexAll(t, ix, files...)
	ms, err := recalltest.Evaluate(qs, func(q string) ([]recalltest.Ranked, error) {
		res, err := ix.Search(context.Background(), q, recall.SearchOptions{MaxResults: 10})
		if err != nil {
			return nil, err
		}
		var out []recalltest.Ranked
		for _, h := range res.Hits {
			out = append(out, recalltest.Ranked{File: h.Path, Start: h.StartLine, End: h.EndLine})
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	table := recalltest.MetricsTable(k.name, ms)
	t.Logf("\n| backend | queries | n | hit@1 | MRR@10 | nDCG@10 |\n|---|---|---|---|---|---|\n%s", table)
	if p := os.Getenv("RECALL_QUALITY_OUT"); p != "" {
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.WriteString(table)
			f.Close()
		}
	}
	if all := ms["all"]; all.Hit1 < 0.8 || all.MRR10 < 0.9 {
		t.Errorf("hit@1 %.3f, MRR@10 %.3f over %d queries: want ≥ 0.8 and ≥ 0.9", all.Hit1, all.MRR10, all.Queries)
	}
}
