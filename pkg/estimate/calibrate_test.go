package estimate

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The calibrated estimate must land within ±10% of what the provider counted
// on spans of ≥ 20k real tokens (usage deltas of the real fixtures are the
// ground truth). pi's chars/4 misses by 20–40% on the same spans.
func TestCalibratedWithinTenPercent(t *testing.T) {
	total, within, heurWithin := 0, 0, 0
	for _, f := range oracle.Fixtures(t) {
		s := testkit.Load(t, f)
		rows, cal, err := EvaluateSpans(s, 20000)
		if err != nil {
			t.Fatal(err)
		}
		if !cal.Usable {
			t.Fatalf("%s: calibration not usable: %+v", f, cal)
		}
		fileWithin := 0
		for _, r := range rows {
			total++
			if e := float64(r.Calibrated)/float64(r.Real) - 1; math.Abs(e) <= 0.10 {
				within++
				fileWithin++
			}
			if e := float64(r.Heuristic)/float64(r.Real) - 1; math.Abs(e) <= 0.10 {
				heurWithin++
			}
		}
		t.Logf("%s: %d/%d spans within ±10%%, weights %v, overhead %d", filepath.Base(f), fileWithin, len(rows), fmtWeights(cal), cal.Overhead)
		s.Close()
	}
	if total < 30 {
		t.Fatalf("only %d spans evaluated", total)
	}
	if float64(within) < 0.95*float64(total) {
		t.Fatalf("calibrated: %d/%d spans within ±10%%", within, total)
	}
	if heurWithin*2 > total {
		t.Fatalf("the heuristic should be clearly worse (%d/%d within ±10%%): is the test measuring anything?", heurWithin, total)
	}
}

// Out of sample: fit on the first half of a session's usage records and
// estimate spans of the second half (the ridge prior keeps thin classes
// sane; expect a little less than in-sample).
func TestCalibratedHoldout(t *testing.T) {
	total, within := 0, 0
	for _, f := range oracle.Fixtures(t) {
		s := testkit.Load(t, f)
		c := &Counter{s: s, method: Calibrated, images: map[*transcript.Entry]int{}, exact: map[*transcript.Entry]int{}}
		path := s.Branch()
		half := len(path) / 2
		audit := auditUsage(path, 0)
		c.calib = calibrate(path[:half], c.features, audit)
		rows := evaluateWith(c, path[half:], 20000, audit)
		for _, r := range rows {
			total++
			if math.Abs(float64(r.Calibrated)/float64(r.Real)-1) <= 0.10 {
				within++
			}
		}
		s.Close()
	}
	t.Logf("holdout: %d/%d spans within ±10%%", within, total)
	if total == 0 || float64(within) < 0.80*float64(total) {
		t.Fatalf("holdout: %d/%d spans within ±10%%", within, total)
	}
}

func fmtWeights(c *Calibration) string {
	s := ""
	for k, w := range c.Weights {
		s += fmt.Sprintf("%s=%.2f ", featureNames[k], w)
	}
	return s
}

func TestFitRecoversKnownWeights(t *testing.T) {
	truth := [numFeatures]float64{1.35, 0.9, 1.2, 1.0, 6, 20}
	var spans spanSums
	for i := 0; i < 60; i++ {
		x := features{float64(1000 + 97*i%700), float64(50 * (i % 3)), float64(300 + 31*i%200), 0, float64(1 + i%5), float64(i % 4)}
		y := 0.0
		for k := range x {
			y += truth[k] * x[k]
		}
		spans.add(int(math.Round(y)), x) // usage deltas are whole tokens
	}
	w := nnlsRidge(&spans, prior)
	for _, k := range []int{fProse, fWide, fThinking} {
		if math.Abs(w[k]-truth[k]) > 0.07 {
			t.Fatalf("weight %s = %.3f, want %.3f (all: %v)", featureNames[k], w[k], truth[k], w)
		}
	}
	if w[fImage] != prior[fImage] {
		t.Fatalf("an unobserved class must keep its prior: %v", w[fImage])
	}
}

func TestImageTokensFromPixelSize(t *testing.T) {
	// A 1x1 PNG: a handful of tokens, not pi's flat 1200.
	png1x1 := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	if n := imageTokens(png1x1); n != 1 {
		t.Fatalf("1x1 png: %d tokens", n)
	}
	if n := imageTokens("not base64!"); n != PiImageTokens {
		t.Fatalf("garbage: %d, want pi's 1200", n)
	}
}
