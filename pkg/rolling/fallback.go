package rolling

import (
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/compaction"
)

// FallbackReport puts the result of the safeguard compaction a
// FallbackFunc ran in a roll report's terms: the summarised messages count
// as evicted, the kept tail as kept; Rolled stays false and the reason says
// what was done instead of rolling.
func FallbackReport(res *compaction.Result) *Report {
	rep := &Report{
		Compacted: res.Compacted && !res.DryRun, DryRun: res.DryRun, TokensBefore: res.TokensBefore,
		KeptTokens: res.TokensAfter, EvictedCount: res.SummarizedMessages, KeptMessages: res.KeptMessages,
		FirstKeptEntryID: res.FirstKeptEntryID, FirstKeptLine: res.FirstKeptLine, ContextWindow: res.ContextWindow,
		Method: res.Estimator,
	}
	if res.Compacted {
		rep.Reason = fmt.Sprintf("summarised %d messages with the safeguard strategy (%s summary) instead of rolling", res.SummarizedMessages, res.Summarizer)
	} else {
		rep.Reason = "safeguard compaction did nothing: " + res.Reason
	}
	return rep
}
