package rolling

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// auto200k is estimate's best measure (auto) in the default window.
var auto200k = estimate.Options{Window: models.Settings{ContextWindow: models.DefaultContextWindow}}

// autoEstimator measures with auto200k.
func autoEstimator(s *transcript.Session, c *transcript.Context) (*estimate.Result, error) {
	return estimate.Measure(s, c, auto200k)
}

// With the best estimator (calibrated from usage, else o200k) the context
// before a roll is usage-anchored and after it the anchor is stale, so
// "before − evicted" is not what the estimator says afterwards. The roller
// measures the rolled session and must report exactly what estimate sees
// next, under the target, so that a second run changes nothing.
func TestRollMatchesEstimateAfterAndIsIdempotent(t *testing.T) {
	for _, fx := range oracle.Fixtures(t) {
		for _, target := range []float64{0.8, 0.3} {
			t.Run(filepath.Base(fx)+"@"+thousands(int(target*100)), func(t *testing.T) {
				path := testkit.CopyToTemp(t, fx)
				r := newRoller(Options{Force: true, EvictionNote: true, TargetUtilization: target, MinKeepMessages: 10})
				r.Size = auto200k
				rep := r.Roll(context.Background(), path)
				if rep.Error != "" {
					t.Fatal(rep.Error)
				}
				if !rep.Rolled {
					if rep.TokensBefore > rep.TargetTokens {
						t.Fatalf("over the target but not rolled: %+v", rep)
					}
					return
				}
				s := testkit.Load(t, path)
				c := s.Context()
				m, err := autoEstimator(s, c)
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
				if m.Tokens != rep.KeptTokens {
					t.Errorf("estimate after the roll %d ≠ reported kept %d", m.Tokens, rep.KeptTokens)
				}
				if rep.KeptTokens > rep.TargetTokens && rep.KeptMessages > 10 {
					t.Errorf("kept %d > target %d", rep.KeptTokens, rep.TargetTokens)
				}
				before, _ := os.ReadFile(path)
				again := r.Roll(context.Background(), path)
				after, _ := os.ReadFile(path)
				if again.Rolled || again.Error != "" || !bytes.Equal(before, after) {
					t.Fatalf("second run changed the session: %+v", again)
				}
				t.Logf("%s %s: %d → %d tokens (target %d), evicted %d, kept %d", filepath.Base(fx), rep.Method,
					rep.TokensBefore, rep.KeptTokens, rep.TargetTokens, rep.EvictedCount, rep.KeptMessages)
			})
		}
	}
}
