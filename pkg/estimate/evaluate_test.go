package estimate

import (
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// SpanCheck compares estimates of one span of messages with what the
// provider counted for it (the growth of usage between two replies).
type SpanCheck struct {
	FromLine, ToLine int
	Real             int
	Calibrated       int
	Heuristic        int
}

// EvaluateSpans cuts the session's path into consecutive, non-overlapping
// spans of at least minReal provider tokens (between trusted usage records,
// never across a compaction; only sound records, see auditUsage) and estimates each with the calibrated counter
// and pi's heuristic. This is the accuracy table of the calibrated method.
func EvaluateSpans(s *transcript.Session, minReal int) ([]SpanCheck, *Calibration, error) {
	c, err := NewCounter(s, Calibrated)
	if err != nil {
		return nil, nil, err
	}
	path := s.Branch()
	return evaluateWith(c, path, minReal, auditUsage(path, 0)), c.calib, nil
}

func evaluateWith(c *Counter, path []*transcript.Entry, minReal int, audit *UsageAudit) []SpanCheck {
	sound := audit.soundAt(path)
	var out []SpanCheck
	start := -1
	var cal, heur float64
	for i, e := range path {
		if e.Type() == "compaction" {
			start, cal, heur = -1, 0, 0
			continue
		}
		if !e.ProducesMessage() {
			continue
		}
		if start >= 0 {
			cal += c.calib.apply(c.features(e))
			heur += float64(e.Tokens())
		}
		if sound[i] {
			if start < 0 {
				start, cal, heur = i, 0, 0
				continue
			}
			real := e.Usage.ContextTokens() - path[start].Usage.ContextTokens()
			if real >= minReal {
				out = append(out, SpanCheck{FromLine: path[start].Line, ToLine: e.Line, Real: real,
					Calibrated: int(cal + 0.5), Heuristic: int(heur)})
				start, cal, heur = i, 0, 0
			} else if real < 0 {
				start, cal, heur = i, 0, 0 // the provider context shrank: restart
			}
		}
	}
	return out
}
