package rolling

import (
	"testing"

	"github.com/ctxtool/ctxtool/pkg/compaction"
)

// A safeguard compaction's result reads as a roll report: summarised
// messages are the evicted ones, a dry run never counts as compacted, and
// the reason says the session was summarised rather than rolled (or why
// nothing was done).
func TestFallbackReport(t *testing.T) {
	res := &compaction.Result{Compacted: true, TokensBefore: 90000, TokensAfter: 21000, SummarizedMessages: 40,
		KeptMessages: 12, FirstKeptEntryID: "a1b2c3d4", FirstKeptLine: 77, ContextWindow: 128000, Estimator: "calibrated",
		Summarizer: "extractive"}
	rep := FallbackReport(res)
	want := Report{Compacted: true, TokensBefore: 90000, KeptTokens: 21000, EvictedCount: 40, KeptMessages: 12,
		FirstKeptEntryID: "a1b2c3d4", FirstKeptLine: 77, ContextWindow: 128000, Method: "calibrated",
		Reason: "summarised 40 messages with the safeguard strategy (extractive summary) instead of rolling"}
	if rep.Rolled || rep.Compacted != want.Compacted || rep.TokensBefore != want.TokensBefore || rep.KeptTokens != want.KeptTokens ||
		rep.EvictedCount != want.EvictedCount || rep.KeptMessages != want.KeptMessages || rep.FirstKeptEntryID != want.FirstKeptEntryID ||
		rep.FirstKeptLine != want.FirstKeptLine || rep.ContextWindow != want.ContextWindow || rep.Method != want.Method || rep.Reason != want.Reason {
		t.Errorf("report %+v\nwant   %+v", *rep, want)
	}

	res.DryRun = true
	if rep := FallbackReport(res); rep.Compacted || !rep.DryRun {
		t.Errorf("dry run: compacted %v, dryRun %v; want false, true", rep.Compacted, rep.DryRun)
	}

	none := FallbackReport(&compaction.Result{Reason: "nothing to summarise"})
	if none.Compacted || none.Reason != "safeguard compaction did nothing: nothing to summarise" {
		t.Errorf("nothing done: compacted %v, reason %q", none.Compacted, none.Reason)
	}
}
