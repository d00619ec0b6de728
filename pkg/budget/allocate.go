// Package budget is OpenClaw's VS7 context budget
// (docs/design/context-budget.md): what the next request of a session would
// contain when the context window is divided into regions (system prompt,
// bootstrap files, history, response, reserve), unused system-prompt and
// bootstrap budget is reclaimed for history, the history is limited by tokens
// with the most recent user turns preserved, older history is optionally
// replaced by a rolling summary, and recall hits for the last user prompt are
// injected as <relevant-prior-context>.
//
// Every number is pi's chars/4 rule (ceil(UTF-16 units / 4) per message or
// text), the unit VS7 itself budgets in, so the assembled context a wrapper
// sends has exactly the size reported. The steps are pure functions of
// explicit inputs (Allocate, BuildBootstrap, LimitHistory, SplitTurns,
// SelectChunks); Plan runs them in VS7's order.
//
// It writes nothing — no session, index or file changes — and reads only
// what Input names: summarising goes through compaction.SummarizeRegion with
// the caller's Summarizer, searching through the caller's Searcher. It must
// not measure in any unit but chars/4, or its report stops matching VS7.
package budget

import (
	"fmt"
	"math"
)

// Config is contextManagement.* with its defaults in
// DefaultConfig.
type Config struct {
	Enabled bool

	SystemPromptRatio float64
	BootstrapRatio    float64
	HistoryRatio      float64
	ResponseRatio     float64
	MinResponseTokens int

	RollingSummary  RollingConfig
	SemanticHistory SemanticConfig
}

// RollingConfig is contextManagement.rollingSummary.
type RollingConfig struct {
	Enabled bool
	// WindowSize user turns are kept verbatim.
	WindowSize int
	// SummaryMaxTokens caps the summary text.
	SummaryMaxTokens int
	// TriggerThreshold: summarise when history tokens exceed it (or 80% of
	// the history budget, whichever is lower).
	TriggerThreshold int
}

// SemanticConfig is contextManagement.semanticHistory.
type SemanticConfig struct {
	Enabled            bool
	MaxRetrievedChunks int
	MinRelevanceScore  float64
	// Scope is which sessions are searched: ScopeWorkspace ("" too), the
	// session's agent and project; ScopeAgent; ScopeAll.
	Scope string
}

// Scopes of SemanticConfig.
const (
	ScopeWorkspace = "workspace"
	ScopeAgent     = "agent"
	ScopeAll       = "all"
)

// DefaultConfig returns VS7's defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:           true,
		SystemPromptRatio: 0.15,
		BootstrapRatio:    0.10,
		HistoryRatio:      0.45,
		ResponseRatio:     0.20,
		MinResponseTokens: 4096,
		RollingSummary:    RollingConfig{Enabled: true, WindowSize: 5, SummaryMaxTokens: 2000, TriggerThreshold: 30000},
		SemanticHistory:   SemanticConfig{Enabled: true, MaxRetrievedChunks: 5, MinRelevanceScore: 0.6, Scope: ScopeWorkspace},
	}
}

// Validate rejects ratios and sizes the allocation cannot use.
func (c Config) Validate() error {
	ratios := []struct {
		name string
		v    float64
	}{
		{"contextManagement.budget.systemPromptRatio", c.SystemPromptRatio},
		{"contextManagement.budget.bootstrapRatio", c.BootstrapRatio},
		{"contextManagement.budget.historyRatio", c.HistoryRatio},
		{"contextManagement.budget.responseRatio", c.ResponseRatio},
	}
	sum := 0.0
	for _, r := range ratios {
		if r.v < 0 || r.v > 1 || math.IsNaN(r.v) {
			return fmt.Errorf("%s = %v: use a share of the window between 0 and 1", r.name, r.v)
		}
		sum += r.v
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("contextManagement.budget ratios add up to %.2f: they must not exceed 1 (the rest is the reserve)", sum)
	}
	if c.MinResponseTokens < 0 {
		return fmt.Errorf("contextManagement.budget.minResponseTokens = %d: use 0 or more", c.MinResponseTokens)
	}
	if c.RollingSummary.WindowSize < 0 || c.RollingSummary.SummaryMaxTokens < 0 || c.RollingSummary.TriggerThreshold < 0 {
		return fmt.Errorf("contextManagement.rollingSummary: windowSize, summaryMaxTokens and triggerThreshold must be 0 or more")
	}
	if c.SemanticHistory.MaxRetrievedChunks < 0 || c.SemanticHistory.MinRelevanceScore < 0 || c.SemanticHistory.MinRelevanceScore > 1 {
		return fmt.Errorf("contextManagement.semanticHistory: maxRetrievedChunks must be 0 or more and minRelevanceScore between 0 and 1")
	}
	return nil
}

// Allocation is the window divided by the ratios (VS7 computeBudget).
type Allocation struct {
	Total        int `json:"total"`
	SystemPrompt int `json:"systemPrompt"`
	Bootstrap    int `json:"bootstrap"`
	History      int `json:"history"`
	Response     int `json:"response"`
	// Reserve is what no ratio claims; it goes to history.
	Reserve int `json:"reserve"`
}

// Allocate divides a context window: each region floor(window × ratio);
// when the response share is below MinResponseTokens the response gets the
// minimum and history gives up the difference; the reserve is the rest.
func Allocate(window int, c Config) Allocation {
	total := max(1, window)
	a := Allocation{
		Total:        total,
		SystemPrompt: floorShare(total, c.SystemPromptRatio),
		Bootstrap:    floorShare(total, c.BootstrapRatio),
		History:      floorShare(total, c.HistoryRatio),
		Response:     floorShare(total, c.ResponseRatio),
	}
	if a.Response < c.MinResponseTokens {
		deficit := c.MinResponseTokens - a.Response
		a.Response = c.MinResponseTokens
		a.History = max(0, a.History-deficit)
	}
	a.Reserve = max(0, total-(a.SystemPrompt+a.Bootstrap+a.History+a.Response))
	return a
}

// floorShare is Math.floor(total × ratio).
func floorShare(total int, ratio float64) int { return int(math.Floor(float64(total) * ratio)) }

// Reclaim is the history budget once the system prompt and bootstrap are
// built (VS7 computeHistoryBudget): base history + what those two regions
// left unused + the reserve. Over-budget regions are not charged to history.
func (a Allocation) Reclaim(systemPromptActual, bootstrapActual int) (historyBudget, reclaimed int) {
	reclaimed = max(0, a.SystemPrompt-systemPromptActual) + max(0, a.Bootstrap-bootstrapActual)
	return a.History + reclaimed + a.Reserve, reclaimed
}

// BootstrapMaxChars is the per-file character limit VS7 passes to the
// bootstrap loader: the bootstrap budget at 4 characters per token.
func (a Allocation) BootstrapMaxChars() int { return a.Bootstrap * 4 }

// SemanticBudget is the share of the bootstrap budget the
// <relevant-prior-context> block may use (30%).
func (a Allocation) SemanticBudget() int { return floorShare(a.Bootstrap, SemanticShare) }

// SemanticShare is the part of the bootstrap budget semantic history uses.
const SemanticShare = 0.3
