package estimate

import (
	"math"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Calibrating a path needs to know which usage records are sound, which
// the audit decides after its own walk of the path; the calibration's walk
// (pathSpans) then came after it, twice, on one core: 140 ms of a 1 GB
// calibrated estimate that the heuristic does not pay. recordSegs is that
// walk taken without the verdicts, so that it runs beside the audit on the
// other core (auditAndCalibrate): per usage record it keeps the features
// of the messages since the record before it, and the spans and overheads
// are then summed from the records alone once the audit has judged them.
//
// The sums are the same as pathSpans' whatever the grouping: every feature
// of a message is a whole number of quarters (chars/4, counts), so sums of
// them are exact in float64 and do not depend on the order they are added
// in. A segment that does not fit its compact form makes the fit fall back
// to pathSpans.

// segment is the features of the messages of a path after one usage
// record (or the last compaction) up to and including the next record:
// prose and thinking in quarters (chars), the rest as counts. 20 bytes per
// record where features are 48: a 1 GB session has ~370k records.
type segment struct {
	prose, wide, thinking, image int32
	messages, toolCalls          uint16
}

// restartAt is the context a compaction restarts (its summary and kept
// entries) before record: the last compaction between record and the one
// before it.
type restartAt struct {
	record int
	active features
}

// recordSegs is a path's usage records' segments, in path order (the order
// of UsageAudit.Records), and the compactions' restarts between them.
type recordSegs struct {
	segs     []segment
	restarts []restartAt
	fits     bool // every segment fitted its compact form
}

// walkRecordSegs walks path (its compactions' kept starts are kept,
// transcript.KeptStarts) and returns the segments of its usage records:
// the records are the assistant messages, as UsageAudit.collect finds them.
func walkRecordSegs(path []*transcript.Entry, kept map[int]int, feat func(*transcript.Entry) features) *recordSegs {
	n := 0
	for _, e := range path {
		if isRecord(e) {
			n++
		}
	}
	rs := &recordSegs{segs: make([]segment, 0, n), fits: true}
	walk := newContextSum[features](kept)
	var acc features // the messages since the last record or compaction
	restart := -1    // the restart's index in rs.restarts when a compaction came since the last record
	for i, e := range path {
		f, message := walk.step(i, e, feat)
		if e.Type() == "compaction" {
			acc = features{}
			if restart < 0 {
				restart = len(rs.restarts)
				rs.restarts = append(rs.restarts, restartAt{record: len(rs.segs)})
			}
			rs.restarts[restart].active = walk.active
			continue
		}
		if !message {
			continue
		}
		acc = acc.plus(f)
		if isRecord(e) {
			seg, ok := compact(acc)
			rs.fits = rs.fits && ok
			rs.segs = append(rs.segs, seg)
			acc, restart = features{}, -1
		}
	}
	return rs
}

// isRecord reports whether e is a usage record (an assistant message).
func isRecord(e *transcript.Entry) bool { return e.Type() == "message" && e.Role() == "assistant" }

// compact is f as a segment; ok is false when a feature is not a whole
// number of its unit or does not fit.
func compact(f features) (segment, bool) {
	var ok [numFeatures]bool
	var v [numFeatures]int64
	for k, unit := range segmentUnits {
		x := f[k] / unit
		limit := float64(math.MaxInt32)
		if k == fMessage || k == fToolCall {
			limit = math.MaxUint16
		}
		if ok[k] = x == math.Trunc(x) && x >= 0 && x <= limit; ok[k] {
			v[k] = int64(x)
		}
	}
	s := segment{prose: int32(v[fProse]), wide: int32(v[fWide]), thinking: int32(v[fThinking]), image: int32(v[fImage]),
		messages: uint16(v[fMessage]), toolCalls: uint16(v[fToolCall])}
	return s, ok == [numFeatures]bool{true, true, true, true, true, true}
}

// segmentUnits is the unit each feature is kept in: a quarter for the
// chars/4 ones.
var segmentUnits = [numFeatures]float64{fProse: 0.25, fWide: 1, fThinking: 0.25, fImage: 1, fMessage: 1, fToolCall: 1}

// features is the segment's features back.
func (s segment) features() features {
	return features{fProse: float64(s.prose) * 0.25, fWide: float64(s.wide), fThinking: float64(s.thinking) * 0.25,
		fImage: float64(s.image), fMessage: float64(s.messages), fToolCall: float64(s.toolCalls)}
}

// spans walks the audited records with their segments, as pathSpans walks
// the path, and returns the sums of the spans between consecutive sound
// records and the count of each sound record, in order.
func (rs *recordSegs) spans(audit *UsageAudit) (spanSums, []int) {
	r := spanRecorder{prev: -1}
	n := 0
	for k := range audit.Records {
		if audit.Records[k].Sound() {
			n++
		}
	}
	counts := make([]int, 0, n)
	rs.walk(audit, func(acc features, k int, _ features) {
		r.acc = acc
		u := audit.Records[k].Tokens()
		r.record(u, features{})
		counts = append(counts, u)
	}, r.restart)
	return r.spans, counts
}

// overheads turns the counts of the sound records (spans) into their
// overheads under c, in place: what each carries beyond its context's
// messages. It reads no entry again: the counts were read once by spans
// (reading each record's usage off its entry was half of a walk of the
// records).
func (rs *recordSegs) overheads(audit *UsageAudit, c *Calibration, counts []int) []int {
	j := 0
	rs.walk(audit, func(_ features, _ int, active features) {
		counts[j] -= int(math.Round(c.apply(active)))
		j++
	}, func() {})
	return counts
}

// walk goes through the audited records with their segments and calls
// sound with each sound record's index k, the features of the messages
// since the previous sound record or compaction (acc) and of the context
// the record was sent with (active); restart at each compaction between
// records.
func (rs *recordSegs) walk(audit *UsageAudit, sound func(acc features, k int, active features), restart func()) {
	var acc, active features
	next := 0 // the next restart
	for k := range audit.Records {
		if next < len(rs.restarts) && rs.restarts[next].record == k {
			restart()
			acc, active = features{}, rs.restarts[next].active
			next++
		}
		x := rs.segs[k].features()
		active = active.plus(x)
		acc = acc.plus(x)
		if audit.Records[k].Sound() {
			sound(acc, k, active)
			acc = features{}
		}
	}
}

// calibrate is calibrate(path, feat, audit) for the path the segments were
// walked on: the fit, then the overhead.
func (rs *recordSegs) calibrate(audit *UsageAudit) *Calibration {
	spans, counts := rs.spans(audit)
	c := fit(spans)
	c.Overhead = medianOverhead(rs.overheads(audit, c, counts))
	return c
}

// auditAndCalibrate is the audit of ctx (AuditContext) and the calibration
// of its path on that audit (calibrate), the calibration's walk run beside
// the audit's. ctx.Path must be the root→leaf path the counter calibrates
// on.
func auditAndCalibrate(ctx *transcript.Context, window int, feat func(*transcript.Entry) features) (*UsageAudit, *Calibration) {
	kept := transcript.KeptStarts(ctx.Path)
	done := make(chan *recordSegs, 1)
	go func() { done <- walkRecordSegs(ctx.Path, kept, feat) }()
	audit := auditContext(ctx, window, kept)
	rs := <-done
	if !rs.fits || len(rs.segs) != len(audit.Records) {
		return audit, calibrate(ctx.Path, feat, audit)
	}
	return audit, rs.calibrate(audit)
}
