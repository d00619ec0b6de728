package lint

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// SyntheticResultText is what pi's provider layer sends for a tool call
// that has no result (pi-ai transformMessages); --fix writes the same.
const SyntheticResultText = "No result provided"

// FixOptions control Fix.
type FixOptions struct {
	// Wait for the session lock (0: fail at once if it is held).
	Wait time.Duration
	// Idle: leave alone a session modified more recently than this (pi
	// takes no lock, so a recent write may mean a tool is still running).
	Idle   time.Duration
	DryRun bool
	// Now is the clock (tests).
	Now func() time.Time
}

// Repair is one append-only repair.
type Repair struct {
	Rule string `json:"rule"`
	// Line is where the defect was; Appended is how many lines were (or,
	// with DryRun, would be) appended for it.
	Line     int    `json:"line"`
	Appended int    `json:"appended"`
	Message  string `json:"message"`
}

// FixResult is what Fix did to one file.
type FixResult struct {
	File    string   `json:"file"`
	Repairs []Repair `json:"repairs"`
	// Skipped says why nothing was attempted ("" when Fix ran).
	Skipped string `json:"skipped,omitempty"`
	DryRun  bool   `json:"dryRun,omitempty"`
}

// Fix applies the safe append-only repairs to a session, under the
// session lock: it ends a torn or unterminated last line with a newline,
// and answers the last assistant's unanswered tool calls with the
// synthetic error results pi inserts in memory. Nothing else is touched:
// every other finding is reported only. The plan is made from the file as
// it is once the lock is held, so a concurrent writer cannot make it stale.
func Fix(ctx context.Context, path string, opts FixOptions) (*FixResult, error) {
	res := &FixResult{File: path, Repairs: []Repair{}, DryRun: opts.DryRun}
	if path == "-" {
		return nil, fmt.Errorf("-: --fix needs a session file, not standard input")
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	if age := now().Sub(st.ModTime()); opts.Idle > 0 && age < opts.Idle {
		res.Skipped = fmt.Sprintf("written %s ago, less than --idle %s: the agent may still be running (pass --idle 0 to fix anyway)", age.Round(time.Second), opts.Idle)
		return res, nil
	}
	plan := func(s *transcript.Session) ([][]byte, error) {
		res.Repairs = res.Repairs[:0]
		if s.Size > 0 && !s.EndsWithNewline {
			rule, what := RuleMissingNewline, "appended the missing final newline"
			if n := len(s.Malformed); n > 0 && s.Malformed[n-1].Truncated {
				rule, what = RuleTornLine, "ended the torn last line with a newline (its bytes stay; pi keeps skipping them)"
			}
			res.Repairs = append(res.Repairs, Repair{Rule: rule, Line: s.Lines, Message: what})
		}
		a, ids := pendingCalls(s.Context())
		if len(ids) == 0 {
			return nil, nil
		}
		m, err := s.Message(a)
		if err != nil {
			return nil, err
		}
		names := map[string]string{}
		for _, b := range m.ToolCalls() {
			names[b.ID] = b.Name
		}
		w := sessionwrite.NewWriter(s)
		w.Now = now
		var lines [][]byte
		for _, id := range ids {
			ap, err := w.ToolResult(id, names[id], SyntheticResultText, true)
			if err != nil {
				return nil, err
			}
			lines = append(lines, ap.Line)
			res.Repairs = append(res.Repairs, Repair{Rule: RulePendingToolCall, Line: a.Line, Appended: 1,
				Message: fmt.Sprintf("appended a synthetic error result (%q) for tool call %q", SyntheticResultText, id)})
		}
		return lines, nil
	}
	err = sessionwrite.Update(ctx, path, sessionwrite.UpdateOptions{Wait: opts.Wait, DryRun: opts.DryRun, FinalNewline: true}, plan)
	if err != nil {
		return nil, err
	}
	return res, nil
}
