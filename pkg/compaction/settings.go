// Package compaction plans and writes pi/OpenClaw-compatible compactions:
// it picks the first kept entry (never separating a tool call from its
// result), summarises everything before it — carrying the previous summary
// forward and re-covering what the previous compaction kept — and appends
// one `compaction` entry under the session lock.
//
// Three strategies reproduce the reference systems: "default" (pi),
// "safeguard" (OpenClaw's safeguard extension) and "summarize" (the
// single pass). Summaries come from a Summarizer: an OpenAI-compatible model,
// an external command (exec) or the built-in, deterministic extractive one,
// each made by NewSummarizer from the source its file registers.
//
// Entry points: Prepare (pure planning), Compact (plan + summarise, no I/O
// on the session file) and CompactFile (the whole command, with locking and
// writing). The roll command uses CompactFile with the safeguard strategy as its
// fallback.
//
// It must not print (progress goes to Options.Logf), must not write a
// session file except through pkg/transcript, and must not know which
// Summarizer it calls: strategies see only the Summarizer interface and
// what its Capabilities declare.
package compaction

import (
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/models"
)

// Strategies: the values of compaction.mode (--strategy) this package
// implements. The key table (pkg/config/keys.go) lists them for users.
const (
	StrategyDefault   = "default"
	StrategySafeguard = "safeguard"
	StrategySummarize = "summarize"
)

// Reference constants (docs/design/pi-baseline.md,
// docs/design/openclaw-compaction.md, docs/design/single-pass-summary.md).
const (
	DefaultReserveTokens      = 16384
	DefaultKeepRecentTokens   = 20000
	DefaultReserveTokensFloor = 20000
	DefaultMaxHistoryShare    = 0.5
	DefaultRecentTurns        = 3
	MaxRecentTurns            = 12
	DefaultProtectedTail      = 6
	DefaultMaxInputChars      = 100000
	DefaultMaxOutputTokens    = 4096
	DefaultSummarizeThreshold = 80000
	MaxSummaryChars           = 16000
	// DefaultSummaryBudgetTokens is the floor of the extractive summary's
	// budget (o200k tokens); the default budget is the larger of it and a
	// quarter of keepRecentTokens.
	DefaultSummaryBudgetTokens = 4000

	baseChunkRatio   = 0.4
	minChunkRatio    = 0.15
	safetyMargin     = 1.2
	summaryOverhead  = 4096
	maxRecentTurnLen = 600
)

// Settings control planning and summarising. Zero values take the defaults
// above.
type Settings struct {
	Strategy           string
	KeepRecentTokens   int
	ReserveTokens      int
	ReserveTokensFloor int // safeguard only; negative disables the floor
	// ContextWindow is the window the plan is made for (0: the default).
	// CompactFile sets it to the window its measure resolved: the override is
	// Options.Size.Window.ContextWindow, not this.
	ContextWindow int
	// Force compacts even below the strategy's trigger.
	Force bool

	// safeguard
	MaxHistoryShare        float64
	RecentTurnsPreserve    int
	IdentifierPolicy       string // strict | off | custom
	IdentifierInstructions string
	QualityGuard           bool
	QualityGuardRetries    int
	// IdentifierRetry asks a model once more, listing them, when its
	// summary dropped identifiers of the region (every strategy;
	// compaction.identifierRetry, on in the CLI).
	IdentifierRetry bool

	// summarize
	ProtectedTail      int
	MaxInputChars      int
	MaxOutputTokens    int
	SummarizeThreshold int
	// SummarizeFallback is what the summarize strategy does when the
	// summariser fails: "trim" (write a mechanical extract marked as a
	// fallback) or "fail" (exit with the error, write nothing).
	SummarizeFallback string

	// CustomInstructions are added to every summariser instruction
	// (--instructions, compaction.customInstructions).
	CustomInstructions string
	// ExtractiveBudgetTokens bounds the extractive summary in o200k tokens
	// (compaction.extractive.budgetTokens; 0: SummaryBudget's default).
	ExtractiveBudgetTokens int

	// KeepSecrets writes summaries and sends requests unredacted
	// (recall.redact: false); by default every secret pkg/secrets finds
	// becomes its marker on the way in and out of the summariser.
	KeepSecrets bool

	// Count sizes messages for keepRecentTokens and chunking (nil: pi's
	// heuristic). CompactFile installs the best estimator here.
	Count Counter
	// ContextTokens is the size of the context the trigger compares with
	// the threshold (0: pi's usage-anchored estimate). CompactFile installs
	// estimate.Measure's size, the one every command reports.
	ContextTokens int
}

func (s Settings) withDefaults() Settings {
	if s.Strategy == "" {
		s.Strategy = StrategyDefault
	}
	if s.KeepRecentTokens <= 0 {
		s.KeepRecentTokens = DefaultKeepRecentTokens
	}
	if s.ReserveTokens <= 0 {
		s.ReserveTokens = DefaultReserveTokens
	}
	if s.ReserveTokensFloor == 0 {
		s.ReserveTokensFloor = DefaultReserveTokensFloor
	}
	if s.ContextWindow <= 0 {
		s.ContextWindow = models.DefaultContextWindow
	}
	if s.MaxHistoryShare <= 0 {
		s.MaxHistoryShare = DefaultMaxHistoryShare
	}
	if s.MaxHistoryShare < 0.1 {
		s.MaxHistoryShare = 0.1
	}
	if s.MaxHistoryShare > 0.9 {
		s.MaxHistoryShare = 0.9
	}
	if s.RecentTurnsPreserve < 0 {
		s.RecentTurnsPreserve = 0
	} else if s.RecentTurnsPreserve == 0 {
		s.RecentTurnsPreserve = DefaultRecentTurns
	}
	if s.RecentTurnsPreserve > MaxRecentTurns {
		s.RecentTurnsPreserve = MaxRecentTurns
	}
	if s.IdentifierPolicy == "" {
		s.IdentifierPolicy = "strict"
	}
	if s.QualityGuardRetries <= 0 {
		s.QualityGuardRetries = 1
	}
	if s.QualityGuardRetries > 3 {
		s.QualityGuardRetries = 3
	}
	if s.ProtectedTail <= 0 {
		s.ProtectedTail = DefaultProtectedTail
	}
	if s.MaxInputChars <= 0 {
		s.MaxInputChars = DefaultMaxInputChars
	}
	if s.MaxOutputTokens <= 0 {
		s.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if s.SummarizeThreshold <= 0 {
		s.SummarizeThreshold = DefaultSummarizeThreshold
	}
	if s.SummarizeFallback == "" {
		s.SummarizeFallback = "trim"
	}
	return s
}

// SummaryBudget is the extractive summary's budget in o200k tokens:
// ExtractiveBudgetTokens when set, else the larger of 4,000 and a quarter
// of keepRecentTokens (a summary much smaller than the kept tail cannot
// hold the facts of a long history; a larger one would eat the room the
// compaction makes).
func (s Settings) SummaryBudget() int {
	if s.ExtractiveBudgetTokens > 0 {
		return s.ExtractiveBudgetTokens
	}
	keep := s.KeepRecentTokens
	if keep <= 0 {
		keep = DefaultKeepRecentTokens
	}
	return max(DefaultSummaryBudgetTokens, keep/4)
}

// effectiveReserve applies OpenClaw's reserve floor in safeguard mode.
func (s Settings) effectiveReserve() int {
	r := s.ReserveTokens
	if s.Strategy == StrategySafeguard && s.ReserveTokensFloor > 0 && r < s.ReserveTokensFloor {
		r = s.ReserveTokensFloor
	}
	return r
}

// Validate checks the one invariant compaction relies on: the strategy is
// one it implements (Prepare would plan an unknown one as the default;
// Compact refuses it). What a user may set — allowed values, ranges — the key
// table checks (pkg/config) before settings get here; other out-of-range
// values fall back to the defaults (withDefaults).
func (s Settings) Validate() error {
	if s.Strategy != "" && !implemented(s.Strategy) {
		return fmt.Errorf("unknown strategy %q: compaction implements the values of compaction.mode (pkg/config/keys.go)", s.Strategy)
	}
	return nil
}
