package estimate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/internal/baseline"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// Baseline is the context size of each session in an earlier
// `estimate --json` run: `estimate --baseline old.json --max-growth 10%`
// fails when a session's context grew more than that since (the gate a
// team puts on transcripts recorded by its agent test suite).
type Baseline struct {
	File   string
	tokens map[string]int
}

// baselineLine is what a baseline keeps of a line of `estimate --json`: a
// session's tokens, or the error that left it without a figure.
type baselineLine struct {
	File   string `json:"file"`
	Tokens *int   `json:"tokens"`
	Error  string `json:"error"`
}

// LoadBaseline reads the JSON lines of an earlier `estimate --json` run.
func LoadBaseline(path string) (*Baseline, error) {
	b := &Baseline{File: path, tokens: map[string]int{}}
	err := baseline.Load(path, "estimate", 256<<20, nil, func(n int, r *baselineLine, err error) error {
		if err != nil || r.File == "" {
			return fmt.Errorf("--baseline %s:%d: not an estimate report (give the output of `ctxtool estimate --json`)", path, n)
		}
		if r.Tokens != nil && r.Error == "" {
			b.tokens[walk.Key(r.File)] = *r.Tokens
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Growth compares one session with its baseline.
type Growth struct {
	// Known is false when the baseline has no figure for the file.
	Known          bool
	BaselineTokens int
	// Share is the relative growth: 0.1 = 10% more tokens than the baseline.
	Share float64
	// Over is true when Share exceeds the maximum given to Check.
	Over bool
}

// Check compares tokens for file with the baseline; maxGrowth ≤ 0 never
// marks Over.
func (b *Baseline) Check(file string, tokens int, maxGrowth float64) Growth {
	old, ok := b.tokens[walk.Key(file)]
	if !ok {
		return Growth{}
	}
	g := Growth{Known: true, BaselineTokens: old}
	switch {
	case old > 0:
		g.Share = float64(tokens-old) / float64(old)
	case tokens > 0:
		g.Share = 1 // from nothing: count as doubling at least
	}
	g.Over = maxGrowth > 0 && g.Share > maxGrowth
	return g
}

// ParseGrowth reads --max-growth: "10%" or a share such as 0.1.
func ParseGrowth(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || v < 0 || (!pct && v > 1) {
		return 0, fmt.Errorf("--max-growth %q: give a percentage (10%%) or a share of at most 1 (0.1)", s)
	}
	return v, nil
}
