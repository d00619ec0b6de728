package estimate

import (
	"reflect"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A measure given the session's measure before a compaction was appended
// in memory (compact's next-request size) reuses its calibration, and
// comes out exactly as a measure that fits it again; a prior that does not
// hold (an assistant reply appended, another method) is not used.
func TestPriorCalibrationIsTheRefit(t *testing.T) {
	s := generatedSession(t, sessiongen.Options{Seed: 11, Turns: 400, Compactions: 8, ToolResultBytes: 300})
	for _, method := range []string{Auto, Calibrated, Usage} {
		prior, err := Measure(s, s.Context(), Options{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if prior.Calibration == nil || !prior.Calibration.Usable {
			t.Fatalf("%s: the generated session does not calibrate", method)
		}
		path := s.Context().Path
		a, err := s.NewWriter().Compaction(transcript.CompactionSpec{Summary: "summary of the history", FirstKept: path[len(path)-20], TokensBefore: 1})
		if err != nil {
			t.Fatal(err)
		}
		after, err := s.WithAppended(a.Line)
		if err != nil {
			t.Fatal(err)
		}
		reused, err := Measure(after, after.Context(), Options{Method: method, Prior: prior})
		if err != nil {
			t.Fatal(err)
		}
		refit, err := Measure(after, after.Context(), Options{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if reused.Calibration != prior.Calibration {
			t.Errorf("%s: the prior's calibration was not reused", method)
		}
		if reused.Tokens != refit.Tokens || !reflect.DeepEqual(reused.PerMessage, refit.PerMessage) ||
			*reused.Calibration != *refit.Calibration || reused.Overhead != refit.Overhead || reused.Scale != refit.Scale ||
			!reflect.DeepEqual(reused.Notes, refit.Notes) {
			t.Errorf("%s: with the prior %d tokens (%+v), refitted %d (%+v)", method, reused.Tokens, *reused.Calibration, refit.Tokens, *refit.Calibration)
		}
		if other, _ := Measure(after, after.Context(), Options{Method: Heuristic, Prior: prior}); other.Calibration != nil {
			t.Errorf("%s: a heuristic measure took the prior's calibration", method)
		}
	}
	prior, _ := Measure(s, s.Context(), Options{})
	reply := []byte(`{"type":"message","id":"zz000001","parentId":"` + s.Leaf().ID() + `","timestamp":"2026-03-02T09:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"more"}],"stopReason":"stop","usage":{"input":90000,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":90010}}}`)
	grown, err := s.WithAppended(reply)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := Measure(grown, grown.Context(), Options{Prior: prior}); m.Calibration == prior.Calibration {
		t.Error("a prior whose path was extended by a usage record was reused")
	}
}
