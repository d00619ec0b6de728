package lint

import (
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/estimate"
)

// suspectUsage are the usage classes of estimate.AuditContext that say a
// record does not measure the context it sits in. (Errored replies and
// OpenClaw's transcript-only replies carry no usage by design; stale
// records were sound when written.)
var suspectUsage = []estimate.UsageClass{estimate.UsagePinned, estimate.UsageFlat, estimate.UsageZero, estimate.UsageImplausible}

// usage reports usage records that cannot be trusted, with the
// classification every command uses (estimate.AuditContext): one finding per
// class, at its first record, counting the others.
func (c *checker) usage() {
	if !c.enabled(RuleUsageSuspect) {
		return
	}
	audit := estimate.AuditContext(c.ctx, c.window().Tokens)
	rejected := audit.Rejected()
	for _, class := range suspectUsage {
		var first *estimate.UsageRecord
		n, last := 0, 0
		piAnchor := false
		for k := range audit.Records {
			r := &audit.Records[k]
			if r.Class() != class || c.replayed(r.Entry) {
				continue
			}
			if first == nil {
				first = r
			}
			n++
			last = r.Line()
			if rejected != nil && r == rejected {
				piAnchor = true
			}
		}
		if first == nil {
			continue
		}
		what := fmt.Sprintf("the usage record on line %d is %s: %s", first.Line(), class, audit.Reason(first))
		if n > 1 {
			what = fmt.Sprintf("%d usage records (lines %d–%d) are %s; the first: %s", n, first.Line(), last, class, audit.Reason(first))
		}
		if piAnchor {
			what += fmt.Sprintf(" — pi's usage-based estimate anchors on line %d and is wrong", rejected.Line())
		}
		f := c.report(RuleUsageSuspect, first.Line(), "usage:"+string(class), "%s", what)
		setEntry(f, first.Entry)
	}
}
