package estimate

import (
	"math"
	"math/bits"
	"slices"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The calibrated estimator learns, from a session's own usage records, how
// many provider tokens each class of content costs. Between two consecutive
// trusted assistant replies on the path (no compaction between them) the
// provider's context grew by usage_j − usage_i tokens; that growth is the
// content of the messages in between. A non-negative least-squares fit of
// those deltas against per-class sizes gives the weights.

// Feature indexes of a message's size vector.
const (
	fProse    = iota // non-CJK, non-thinking chars / 4 (pi's heuristic unit)
	fWide            // CJK/Hangul characters
	fThinking        // thinking chars / 4
	fImage           // image tokens by pixel size
	fMessage         // one per message (role and framing overhead)
	fToolCall        // one per tool call (call/result framing)
	numFeatures
)

// featureNames labels the weights in reports.
var featureNames = [numFeatures]string{"prose", "cjk", "thinking", "image", "message", "toolCall"}

// prior weights, used to regularise the fit and when a class is absent.
// chars/4 undercounts code/JSON by 25–35% (docs/design/pi-baseline.md), CJK is
// about one token per character, thinking is prose.
var prior = [numFeatures]float64{1.3, 1.0, 1.3, 1.0, 4, 12}

// Calibration is a fitted model of provider tokens per unit of content.
type Calibration struct {
	Weights [numFeatures]float64
	// Points is the number of usage deltas used; TokensCovered their sum.
	Points        int
	TokensCovered int
	// Overhead is the system prompt + tool definitions: the part of a usage
	// record no message accounts for (median over anchors).
	Overhead int
	// Usable is false when there were too few points to trust the fit.
	Usable bool
}

// MinPoints and MinCoveredTokens decide when a fit is trusted.
const (
	MinPoints        = 6
	MinCoveredTokens = 20000
)

type features [numFeatures]float64

func (c *Calibration) apply(f features) float64 {
	var t float64
	for k := range f {
		t += c.Weights[k] * f[k]
	}
	return t
}

// messageFeatures is the size vector of one context message. Assistant
// replies that errored or were aborted are never sent to the provider, so
// they weigh nothing.
func messageFeatures(e *transcript.Entry, imageTokens int) features {
	var f features
	if e.Role() == "assistant" && (e.StopReason() == "error" || e.StopReason() == "aborted") {
		return f
	}
	text := e.Chars - int(e.ThinkingChars) - int(e.Wide)
	if e.Role() == "toolResult" || e.Role() == "custom" {
		text -= 4800 * int(e.Images)
	}
	if text < 0 {
		text = 0
	}
	f[fProse] = float64(text) / 4
	f[fWide] = float64(e.Wide)
	f[fThinking] = float64(e.ThinkingChars) / 4
	f[fImage] = float64(imageTokens)
	f[fMessage] = 1
	f[fToolCall] = float64(len(e.ToolCallIDs))
	if e.Role() == "toolResult" {
		f[fToolCall] = 1
	}
	return f
}

// spanSums are the sums over the usage spans — the growth of the provider
// context between two consecutive anchors (delta) against the features of
// the messages in between (x) — that the fit reads: the normal equations
// are built from them alone, so the spans themselves are not kept (one
// struct per span, plus a copy for the fit, was 80 MB allocated per
// calibration of a 1 GB session).
type spanSums struct {
	Points  int                               // spans added
	Covered int                               // Σ delta
	xx      [numFeatures][numFeatures]float64 // Σ x xᵀ
	xy      [numFeatures]float64              // Σ x delta
}

// add adds one span, in the order the spans are walked (the sums are
// those the fit's normal equations accumulated span by span).
func (g *spanSums) add(delta int, x features) {
	g.Points++
	g.Covered += delta
	y := float64(delta)
	for j := range x {
		g.xy[j] += x[j] * y
		for k := range x {
			g.xx[j][k] += x[j] * x[k]
		}
	}
}

// calibrate fits a calibration on the sound usage records (audit) of a
// root→leaf path: the weights from the spans, then the overhead from a
// second walk that meets each record's active context again under those
// weights, instead of keeping one (usage, context features) anchor per
// record until the weights are known (16 MB at 1 GB). Measure fits the
// same calibration beside the audit (auditAndCalibrate) when it audits
// the path itself.
func calibrate(path []*transcript.Entry, feat func(*transcript.Entry) features, audit *UsageAudit) *Calibration {
	p := newRecordPath(path, audit)
	spans, _ := pathSpans(p, feat, nil)
	c := fit(spans)
	_, over := pathSpans(p, feat, c)
	c.Overhead = medianOverhead(over)
	return c
}

// recordPath is a root→leaf path with what both of calibrate's walks read
// of it, found once.
type recordPath struct {
	entries []*transcript.Entry
	kept    map[int]int // transcript.KeptStarts
	sound   []bool      // sound usage record, by path index
}

func newRecordPath(path []*transcript.Entry, audit *UsageAudit) recordPath {
	return recordPath{entries: path, kept: audit.keptStarts(path), sound: audit.soundAt(path)}
}

// pathSpans walks the root→leaf path and returns the sums of the usage
// deltas between consecutive sound records with no compaction between
// them and, when c is not nil, each record's overhead under c (what its
// usage carries beyond its context's messages), in one pass (contextSum).
func pathSpans(p recordPath, feat func(*transcript.Entry) features, c *Calibration) (spans spanSums, over []int) {
	r := spanRecorder{calib: c, prev: -1}
	if c != nil {
		// One overhead per sound record: sized once, as append's
		// doubling kept every generation live.
		n := 0
		for _, ok := range p.sound {
			if ok {
				n++
			}
		}
		r.over = make([]int, 0, n)
	}
	walk := newContextSum[features](p.kept)
	for i, e := range p.entries {
		f, message := walk.step(i, e, feat)
		if e.Type() == "compaction" {
			r.restart() // the context restarts: summary + kept entries
		}
		if !message {
			continue
		}
		r.acc = r.acc.plus(f)
		if p.sound[i] {
			r.record(e.Usage.ContextTokens(), walk.active)
		}
	}
	return r.spans, r.over
}

// spanRecorder collects the spans and overheads of one walk over a path.
// pathSpans, the record-by-record fit (recordSegs) and the quadratic walk
// its benchmark compares it with share it, so they differ only in how
// they find each record's context.
type spanRecorder struct {
	spans spanSums
	calib *Calibration // nil: the spans only
	over  []int
	prev  int      // the count of the previous sound record since the last compaction; -1: none (a sound record counts more than 0)
	acc   features // features of the messages since prev
}

// restart forgets the previous record: a compaction restarts the context,
// so no span crosses it.
func (r *spanRecorder) restart() { r.prev, r.acc = -1, features{} }

// record takes a sound record counting u tokens, sent with the context
// active: its overhead, and the span since the previous record when usage
// grew.
func (r *spanRecorder) record(u int, active features) {
	if r.calib != nil {
		r.over = append(r.over, u-int(math.Round(r.calib.apply(active))))
	}
	if r.prev >= 0 {
		if d := u - r.prev; d > 0 {
			r.spans.add(d, r.acc)
		}
	}
	r.prev, r.acc = u, features{}
}

func (a features) plus(b features) features {
	for k := range a {
		a[k] += b[k]
	}
	return a
}

func (a features) minus(b features) features {
	for k := range a {
		a[k] -= b[k]
	}
	return a
}

// fit learns a calibration's weights from the sums of the usage spans.
func fit(spans spanSums) *Calibration {
	c := &Calibration{Weights: prior, Points: spans.Points, TokensCovered: spans.Covered}
	c.Usable = c.Points >= MinPoints && c.TokensCovered >= MinCoveredTokens
	if c.Points > 0 {
		c.Weights = nnlsRidge(&spans, prior)
	}
	return c
}

// medianOverhead is the median of the records' overheads (the upper one
// of an even count; over is reordered in place), 0 when none or negative:
// the system prompt and tools.
func medianOverhead(over []int) int {
	if len(over) == 0 {
		return 0
	}
	return max(nth(over, len(over)/2), 0)
}

// nth is the value that would be at index k if s were sorted (s is
// reordered): a selection, linear on average where sorting a 1 GB
// session's ~370k overheads was 15 ms of its calibration, the whole of it
// serial after the walks. A range that keeps splitting badly (an input
// built against the pivots) is sorted instead, so the worst case stays
// n log n.
func nth(s []int, k int) int {
	lo, hi := 0, len(s) // k in [lo, hi)
	for budget := 2 * bits.Len(uint(len(s))); hi-lo > 16; budget-- {
		if budget == 0 {
			slices.Sort(s[lo:hi])
			return s[k]
		}
		// Median of three as the pivot, then a three-way partition:
		// [lo, lt) < p, [lt, gt) == p, [gt, hi) > p.
		a, b, c := s[lo], s[lo+(hi-lo)/2], s[hi-1]
		p := max(min(a, b), min(max(a, b), c))
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch {
			case s[i] < p:
				s[lt], s[i] = s[i], s[lt]
				lt++
				i++
			case s[i] > p:
				gt--
				s[i], s[gt] = s[gt], s[i]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	slices.Sort(s[lo:hi])
	return s[k]
}

// nnlsRidge solves min Σ(y − Xβ)² + λ Σ s_k(β_k − p_k)² with β ≥ 0, where
// s_k = Σ x_k² scales the pull toward the prior so that a class with little
// data stays near its prior and a well-observed class follows the data.
// A class never observed has x_k = 0 in every span: it takes no part in
// the sums and keeps its prior.
func nnlsRidge(g *spanSums, p [numFeatures]float64) [numFeatures]float64 {
	const lambda = 0.02
	var scale [numFeatures]float64
	for k := range scale {
		scale[k] = g.xx[k][k]
	}
	active := [numFeatures]bool{}
	for k := range active {
		active[k] = scale[k] > 0
	}
	beta := p
	for iter := 0; iter < numFeatures+1; iter++ {
		// Normal equations on the active set; inactive ones fixed at 0
		// (or at the prior if never observed).
		var A [numFeatures][numFeatures]float64
		var b [numFeatures]float64
		for j := 0; j < numFeatures; j++ {
			if !active[j] {
				continue
			}
			b[j] = g.xy[j]
			for k := 0; k < numFeatures; k++ {
				if active[k] {
					A[j][k] = g.xx[j][k]
				}
			}
		}
		for k := 0; k < numFeatures; k++ {
			if active[k] {
				r := lambda * scale[k]
				A[k][k] += r
				b[k] += r * p[k]
			}
		}
		sol, ok := solve(A, b, active)
		if !ok {
			return p
		}
		neg := false
		for k := range sol {
			if active[k] && sol[k] < 0 {
				active[k] = false
				neg = true
			}
		}
		for k := range beta {
			switch {
			case active[k]:
				beta[k] = sol[k]
			case scale[k] == 0:
				beta[k] = p[k]
			default:
				beta[k] = 0
			}
		}
		if !neg {
			break
		}
	}
	return beta
}

// solve runs Gaussian elimination with partial pivoting on the active rows.
func solve(A [numFeatures][numFeatures]float64, b [numFeatures]float64, active [numFeatures]bool) ([numFeatures]float64, bool) {
	var idx []int
	for k := range active {
		if active[k] {
			idx = append(idx, k)
		}
	}
	n := len(idx)
	m := make([][]float64, n)
	for i, r := range idx {
		m[i] = make([]float64, n+1)
		for j, c := range idx {
			m[i][j] = A[r][c]
		}
		m[i][n] = b[r]
	}
	for col := 0; col < n; col++ {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		if math.Abs(m[piv][col]) < 1e-12 {
			return [numFeatures]float64{}, false
		}
		m[col], m[piv] = m[piv], m[col]
		for r := 0; r < n; r++ {
			if r == col {
				continue
			}
			f := m[r][col] / m[col][col]
			for c := col; c <= n; c++ {
				m[r][c] -= f * m[col][c]
			}
		}
	}
	var out [numFeatures]float64
	for i, k := range idx {
		out[k] = m[i][n] / m[i][i]
	}
	return out, true
}
