package estimate

import (
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// BenchmarkPathSpans compares the linear walk with the quadratic one it
// replaced, on a session with many compactions (each compaction scanned
// the whole path prefix for its kept entries).
//
//	go test ./pkg/estimate -run - -bench PathSpans -benchtime 3x
func BenchmarkPathSpans(b *testing.B) {
	path, c := calibratedPath(b, sessiongen.Options{Seed: 9, Turns: 3000, Compactions: 600, ToolResultBytes: 400, NoLineIndex: true})
	p := newRecordPath(path, auditUsage(path, 0))
	b.Logf("%d path entries", len(path))
	b.Run("linear", func(b *testing.B) {
		for b.Loop() {
			pathSpans(p, c.features, nil)
		}
	})
	b.Run("quadratic-before", func(b *testing.B) {
		for b.Loop() {
			pathSpansQuadratic(path, c.features, nil)
		}
	})
}

// The linear walk finds the same spans, and the same overheads under a
// calibration, as the quadratic one where both trust the same records
// (sessions with ordinary usage).
func TestPathSpansMatchesQuadratic(t *testing.T) {
	path, c := calibratedPath(t, sessiongen.Options{Seed: 3, Turns: 200, Compactions: 20})
	p := newRecordPath(path, auditUsage(path, 0))
	gotS, _ := pathSpans(p, c.features, nil)
	calib := fit(gotS)
	_, gotO := pathSpans(p, c.features, calib)
	wantS, wantO := pathSpansQuadratic(path, c.features, calib)
	if gotS.Points != wantS.Points || len(gotO) != len(wantO) || gotS.Points < 100 {
		t.Fatalf("spans %d/%d overheads %d/%d", gotS.Points, wantS.Points, len(gotO), len(wantO))
	}
	for i := range gotO {
		if gotO[i] != wantO[i] {
			t.Fatalf("overhead %d: %d vs %d", i, gotO[i], wantO[i])
		}
	}
	if gotS != wantS {
		t.Fatalf("span sums: %+v vs %+v", gotS, wantS)
	}
}

// calibratedPath is the branch of a session generated with o and a
// calibrated counter over that session.
func calibratedPath(tb testing.TB, o sessiongen.Options) ([]*transcript.Entry, *Counter) {
	s := generatedSession(tb, o)
	return s.Branch(), &Counter{s: s, method: Calibrated, images: map[*transcript.Entry]int{}, exact: map[*transcript.Entry]int{}}
}

// generatedSession is a session generated with o, loaded (and closed when
// the test ends).
func generatedSession(tb testing.TB, o sessiongen.Options) *transcript.Session {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "s.jsonl")
	sessiongen.Write(tb, file, o)
	s := testkit.Load(tb, file)
	tb.Cleanup(func() { s.Close() })
	return s
}

// pathSpansQuadratic is pathSpans as it was before issue 9 (kept for the
// benchmark): it walks the root→leaf path and returns the usage deltas between
// consecutive trusted records with no compaction between them, plus each
// record's overhead under c (none when c is nil).
func pathSpansQuadratic(path []*transcript.Entry, feat func(*transcript.Entry) features, c *Calibration) (spans spanSums, over []int) {
	var active features // features of the context as the provider saw it
	r := spanRecorder{calib: c, prev: -1}
	msgFeat := make(map[*transcript.Entry]features)
	for i, e := range path {
		switch {
		case e.Type() == "compaction":
			// The context restarts: summary + kept entries.
			active = feat(e)
			kept := false
			for _, k := range path[:i] {
				if !kept && e.FirstKeptEntryID() != "" && k.ID() == e.FirstKeptEntryID() {
					kept = true
				}
				if kept {
					if f, ok := msgFeat[k]; ok {
						active = active.plus(f)
					}
				}
			}
			r.restart()
			continue
		case e.ProducesMessage():
			f := feat(e)
			msgFeat[e] = f
			active = active.plus(f)
			r.acc = r.acc.plus(f)
		default:
			continue
		}
		if e.Role() == "assistant" && e.UsageTrusted() && e.Usage.ContextTokens() > 0 {
			r.record(e.Usage.ContextTokens(), active)
		}
	}
	return r.spans, r.over
}
