package estimate

import (
	"reflect"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/usagekit"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A measure given the session's measure before a compaction was appended
// in memory (compact's next-request size) reuses its calibration, and
// comes out exactly as a measure that fits it again; a prior that does not
// hold (an assistant reply appended, another method) is not used.
func TestPriorCalibrationIsTheRefit(t *testing.T) {
	s := generatedSession(t, sessiongen.Options{Seed: 11, Turns: 400, Compactions: 8, ToolResultBytes: 300})
	for _, method := range []string{Auto, Calibrated, Usage} {
		path := s.Context().Path
		a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: "summary of the history", FirstKept: path[len(path)-20], TokensBefore: 1})
		if err != nil {
			t.Fatal(err)
		}
		after, err := s.WithAppended(a.Line)
		if err != nil {
			t.Fatal(err)
		}
		prior, reused, refit := measureTwice(t, s, after, method)
		if prior.Calibration == nil || !prior.Calibration.Usable {
			t.Fatalf("%s: the generated session does not calibrate", method)
		}
		if reused.Calibration != prior.Calibration {
			t.Errorf("%s: the prior's calibration was not reused", method)
		}
		if !sameMeasure(reused, refit) || *reused.Calibration != *refit.Calibration {
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

// A prior measure's audit carried over to the session with a compaction
// appended in memory is the audit made by walking it again — every record's
// class and reason, the anchors — on generated sessions and on sessions
// whose usage records lie (pinned, flat, zero, stale, implausible), with the
// compaction keeping a few entries or many.
func TestPriorAuditIsTheReaudit(t *testing.T) {
	var sessions []*transcript.Session
	for seed := uint64(1); seed <= 3; seed++ {
		sessions = append(sessions, generatedSession(t, sessiongen.Options{Seed: seed, Turns: 150, Compactions: int(seed) * 2, ToolResultBytes: 200}))
	}
	for _, c := range usagekit.Write(t) {
		s := testkit.Load(t, c.File)
		t.Cleanup(func() { s.Close() })
		sessions = append(sessions, s)
	}
	carried := 0
	for _, s := range sessions {
		path := s.Context().Path
		for _, back := range []int{1, len(path) / 3} {
			prior, err := Measure(s, s.Context(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: "summary", FirstKept: path[len(path)-back], TokensBefore: 1})
			if err != nil {
				t.Fatal(err)
			}
			after, err := s.WithAppended(a.Line)
			if err != nil {
				t.Fatal(err)
			}
			ctx := after.Context()
			held := prior.heldFor(ctx, prior.Window.Tokens)
			if held == nil {
				continue
			}
			carried++
			got, want := held.auditFor(ctx, prior.Window.Tokens), AuditContext(ctx, prior.Window.Tokens)
			want.path, want.kept = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, kept from %d back: carried audit anchors %d/%d/%d, walked %d/%d/%d", s.File, back, got.Anchor, got.PiAnchor, got.LastSound, want.Anchor, want.PiAnchor, want.LastSound)
			}
			for k := range got.Records {
				if g, w := got.Reason(&got.Records[k]), want.Reason(&want.Records[k]); g != w {
					t.Fatalf("%s: record %d: %q, walked %q", s.File, k, g, w)
				}
			}
			samePriorMeasure(t, s, after)
		}
	}
	if carried < len(sessions) {
		t.Fatalf("the prior held for %d of %d appended compactions", carried, 2*len(sessions))
	}
}

// samePriorMeasure checks that measuring after (s with entries appended)
// with s's measure as the prior gives what measuring it afresh gives, for
// every method that reads usage evidence, and that the prior's count of
// the last sound record's context was reused.
func samePriorMeasure(t *testing.T, s, after *transcript.Session) {
	t.Helper()
	for _, method := range []string{Heuristic, Usage, Calibrated, Auto} {
		prior, reused, fresh := measureTwice(t, s, after, method)
		if !sameMeasure(reused, fresh) || reused.evidenceContent != fresh.evidenceContent {
			t.Fatalf("%s, %s: with the prior %d tokens (overhead %d, scale %v), afresh %d (overhead %d, scale %v)",
				s.File, method, reused.Tokens, reused.Overhead, reused.Scale, fresh.Tokens, fresh.Overhead, fresh.Scale)
		}
		if usesEvidence(method) && prior.evidence != nil && reused.evidence != prior.evidence {
			t.Fatalf("%s, %s: the prior's evidence was not the record read", s.File, method)
		}
	}
}

// measureTwice measures s with method (prior), then after — s with
// entries appended in memory — with that prior (reused) and without it
// (fresh).
func measureTwice(t *testing.T, s, after *transcript.Session, method string) (prior, reused, fresh *Result) {
	t.Helper()
	var err error
	if prior, err = Measure(s, s.Context(), Options{Method: method}); err == nil {
		if reused, err = Measure(after, after.Context(), Options{Method: method, Prior: prior}); err == nil {
			fresh, err = Measure(after, after.Context(), Options{Method: method})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return prior, reused, fresh
}

// sameMeasure reports whether two measures of one context agree on what
// callers read of them.
func sameMeasure(a, b *Result) bool {
	return a.Tokens == b.Tokens && a.Overhead == b.Overhead && a.Scale == b.Scale && a.AnchorIndex == b.AnchorIndex &&
		reflect.DeepEqual(a.PerMessage, b.PerMessage) && reflect.DeepEqual(a.Notes, b.Notes)
}
