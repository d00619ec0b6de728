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
	s := generatedSession(b, sessiongen.Options{Seed: 9, Turns: 3000, Compactions: 600, ToolResultBytes: 400, NoLineIndex: true})
	path := s.Branch()
	c := &Counter{s: s, method: Calibrated, images: map[*transcript.Entry]int{}, exact: map[*transcript.Entry]int{}}
	audit := AuditUsage(path, 0)
	b.Logf("%d path entries", len(path))
	b.Run("linear", func(b *testing.B) {
		for b.Loop() {
			pathSpans(path, c.features, audit)
		}
	})
	b.Run("quadratic-before", func(b *testing.B) {
		for b.Loop() {
			pathSpansQuadratic(path, c.features)
		}
	})
}

// The linear walk finds the same spans as the quadratic one where both
// trust the same records (sessions with ordinary usage).
func TestPathSpansMatchesQuadratic(t *testing.T) {
	s := generatedSession(t, sessiongen.Options{Seed: 3, Turns: 200, Compactions: 20})
	path := s.Branch()
	c := &Counter{s: s, method: Calibrated, images: map[*transcript.Entry]int{}, exact: map[*transcript.Entry]int{}}
	gotS, gotA := pathSpans(path, c.features, AuditUsage(path, 0))
	wantS, wantA := pathSpansQuadratic(path, c.features)
	if gotS.Points != wantS.Points || len(gotA) != len(wantA) || gotS.Points < 100 {
		t.Fatalf("spans %d/%d anchors %d/%d", gotS.Points, wantS.Points, len(gotA), len(wantA))
	}
	for i := range gotA {
		for k := range gotA[i].x {
			if d := gotA[i].x[k] - wantA[i].x[k]; d > 1e-6 || d < -1e-6 || gotA[i].usage != wantA[i].usage {
				t.Fatalf("anchor %d: %+v vs %+v", i, gotA[i], wantA[i])
			}
		}
	}
	if gotS != wantS {
		t.Fatalf("span sums: %+v vs %+v", gotS, wantS)
	}
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
// consecutive trusted anchors with no compaction between them, plus the
// per-anchor (usage, feature sum of the active context) pairs.
func pathSpansQuadratic(path []*transcript.Entry, feat func(*transcript.Entry) features) (spans spanSums, anchors []anchorPoint) {
	var active features // features of the context as the provider saw it
	r := spanRecorder{prev: -1}
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
			r.record(path, i, active)
		}
	}
	return r.spans, r.anchors
}
