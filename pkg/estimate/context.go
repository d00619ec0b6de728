package estimate

import (
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Result is the estimate of a whole active context.
type Result struct {
	// Method actually used ("auto" resolved to calibrated or o200k).
	Method string
	Tokens int
	// PerMessage holds each context message's estimate (for calibrated and
	// usage, the message part only; Overhead/anchor are separate).
	PerMessage []int
	ByRole     map[string]int
	// UsageTokens is the usage record the estimate is anchored on (0 if none);
	// TrailingTokens is what follows it.
	UsageTokens    int
	TrailingTokens int
	AnchorIndex    int // context index of the anchor, -1 if none
	// Overhead is the estimated system prompt + tools (calibrated, no anchor).
	Overhead int
	// Stale is true when the session's last usage record predates the
	// compaction in force: pi then reports the size as unknown.
	Stale       bool
	Calibration *Calibration
	Notes       []string
}

// Context estimates the context with the given method.
func Context(s *transcript.Session, ctx *transcript.Context, method string) (*Result, error) {
	r := &Result{Method: method, ByRole: map[string]int{}, AnchorIndex: -1, Stale: ctx.UsageStale()}
	switch method {
	case Heuristic:
		for _, m := range ctx.Messages {
			r.add(m, m.Tokens())
		}
		return r, nil
	case Usage:
		// pi's estimateContextTokens: the last trusted usage + chars/4 after it.
		// After a compaction with no reply yet, that anchor is stale (pi's
		// gauge says "unknown"); we report the heuristic of the whole
		// context instead of the pre-compaction size.
		u := ctx.EstimateContextTokens()
		for _, m := range ctx.Messages {
			r.add(m, m.Tokens())
		}
		r.Tokens = 0
		if r.Stale || u.LastUsageIndex < 0 {
			for _, n := range r.PerMessage {
				r.Tokens += n
			}
			if r.Stale {
				r.Notes = append(r.Notes, "the last usage record predates the compaction in force (pi reports the size as unknown); counting the context with chars/4 instead")
			}
			return r, nil
		}
		r.UsageTokens, r.TrailingTokens, r.AnchorIndex, r.Tokens = u.UsageTokens, u.TrailingTokens, u.LastUsageIndex, u.Tokens
		return r, nil
	}
	c, err := NewCounter(s, method)
	if err != nil {
		return nil, err
	}
	r.Method = c.Method()
	r.Calibration = c.Calibration()
	if c.Note != "" {
		r.Notes = append(r.Notes, c.Note)
	}
	entries := make([]*transcript.Entry, len(ctx.Messages))
	for i, m := range ctx.Messages {
		entries[i] = m.Entry
	}
	c.Prefetch(entries)
	for _, m := range ctx.Messages {
		r.add(m, c.Tokens(m.Entry))
	}
	if r.Method != Calibrated {
		return r, nil
	}
	// Calibrated: anchor on the last fresh usage record when there is one
	// (it counts the system prompt, tools and exact tokenisation), else add
	// the learnt overhead to the calibrated messages.
	u := ctx.EstimateContextTokens()
	if !r.Stale && u.LastUsageIndex >= 0 {
		r.UsageTokens, r.AnchorIndex = u.UsageTokens, u.LastUsageIndex
		for _, n := range r.PerMessage[u.LastUsageIndex+1:] {
			r.TrailingTokens += n
		}
		r.Tokens = r.UsageTokens + r.TrailingTokens
		return r, nil
	}
	r.Overhead = r.Calibration.Overhead
	r.Tokens += r.Overhead
	return r, nil
}

func (r *Result) add(m transcript.ContextMessage, n int) {
	r.PerMessage = append(r.PerMessage, n)
	r.ByRole[m.Role] += n
	r.Tokens += n
}
