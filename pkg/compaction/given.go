package compaction

import (
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// PrepareCut plans a compaction whose cut another program chose: an
// agent's own preparation (pi's session_before_compact hands over what it
// summarises and where it cuts, and only that cut keeps pi's session whole).
// The session's context path, after the compaction in force if there is
// one, is taken as summarize entries of history, then prefix entries of a
// split turn's prefix, then the kept entries. The previous compaction's
// summary and file lists are read as Prepare reads them, so Compact carries
// them forward.
func PrepareCut(s *transcript.Session, set Settings, summarize, prefix int) (*Preparation, error) {
	set = set.withDefaults()
	count := set.Count
	if count == nil {
		count = heuristic
	}
	ctx := s.Context()
	p := &Preparation{Strategy: set.Strategy, Path: ctx.Path, Before: ctx, TurnStart: -1, Cut: -1, keepCount: count}
	p.measure(set)
	if err := p.findBoundary(s); err != nil {
		return nil, err
	}
	// the entries after the previous compaction (its kept ones, if any,
	// belong to what is summarised again, as Prepare does)
	start := p.BoundaryStart
	if summarize < 0 || prefix < 0 || start+summarize+prefix > len(p.Path) {
		return nil, fmt.Errorf("%s: the cut (%d entries to summarise, %d of a turn prefix) does not fit the %d entries after the previous compaction",
			s.File, summarize, prefix, len(p.Path)-start)
	}
	p.Summarize = p.Path[start : start+summarize]
	p.TurnPrefix = p.Path[start+summarize : start+summarize+prefix]
	p.Cut = start + summarize + prefix
	p.Kept = p.Path[p.Cut:]
	if p.Cut < len(p.Path) {
		p.FirstKept = p.Path[p.Cut]
	}
	if prefix > 0 {
		p.SplitTurn, p.TurnStart = true, start+summarize
	}
	if summarize+prefix == 0 {
		p.Reason = "nothing to compact: no messages to summarise"
	}
	return p, nil
}
