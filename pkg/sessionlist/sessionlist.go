// Package sessionlist lists sessions the way a user looks for one: which
// agent and project it belongs to, when it was last written, how large it
// is and how full its context is, sorted and filtered like ls. It is
// `ctxtool sessions`: the answer to "which of my sessions is this?" before
// any other command is run on one.
//
// The context gauge uses pi's chars/4 heuristic by default: it reads each
// session once without a tokenizer, so a home of hundreds of sessions is
// listed in seconds; `ctxtool estimate` measures one exactly.
package sessionlist

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/sources"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// Session is one listed session (the JSON of `ctxtool sessions --json`).
type Session struct {
	Agent   string `json:"agent"`
	Project string `json:"project"`
	// Session is the session's id: the file name without its extension,
	// or the key of a session in an OpenClaw SQLite store.
	Session string `json:"session"`
	File    string `json:"file"`
	// LastActivity is when the session was last written (its mtime).
	LastActivity time.Time `json:"lastActivity"`
	Size         int64     `json:"size"`
	// Tokens, ContextWindow and Utilization are estimate's, with the
	// tokenizer asked for (heuristic by default).
	Tokens        int     `json:"tokens"`
	ContextWindow int     `json:"contextWindow"`
	Utilization   float64 `json:"utilization"`
	Compactions   int     `json:"compactions"`
	// Error says why the session could not be measured (it is still
	// listed, with what its path and file tell).
	Error string `json:"error,omitempty"`
}

// Describe names a session file's agent, project and id from its path.
func Describe(f walk.File) Session {
	agent, project := sources.Classify(f.Path)
	id := f.Path
	if i := strings.LastIndexByte(id, '#'); i >= 0 {
		id = id[i+1:]
	} else {
		id = filepath.Base(id)
		id = strings.TrimSuffix(id, ".zst")
		id = strings.TrimSuffix(id, ".jsonl")
	}
	return Session{Agent: string(agent), Project: project, Session: id, File: f.Path, LastActivity: f.ModTime, Size: f.Size}
}

// Measure fills in the context gauge of s with opts (estimate's measure).
func Measure(s *Session, opts estimate.Options) {
	r, err := estimate.MeasureFile(s.File, opts, false)
	if err != nil {
		s.Error = err.Error()
		return
	}
	s.Tokens, s.ContextWindow, s.Utilization, s.Compactions = r.Tokens, r.ContextWindow, r.Utilization, r.Compactions
}

// Filter keeps the sessions a user asked for; zero fields keep all.
type Filter struct {
	// Agent is an agent name (pi, openclaw, claude-code, codex), matched
	// exactly.
	Agent string
	// Project keeps the sessions whose project contains it (case-insensitive).
	Project string
	// Since keeps the sessions written at or after it.
	Since time.Time
}

// Keep says whether s passes f.
func (f Filter) Keep(s Session) bool {
	if f.Agent != "" && !strings.EqualFold(s.Agent, f.Agent) {
		return false
	}
	if f.Project != "" && !strings.Contains(strings.ToLower(s.Project), strings.ToLower(f.Project)) {
		return false
	}
	return f.Since.IsZero() || !s.LastActivity.Before(f.Since)
}

// Orders are the sort keys of Sort.
var Orders = []string{"time", "size", "tokens"}

// Sort orders ss like ls -t / -S: the newest, the largest or the fullest
// first (reverse: last); ties keep the path order.
func Sort(ss []Session, by string, reverse bool) error {
	var less func(a, b Session) bool
	switch by {
	case "", "time":
		less = func(a, b Session) bool { return a.LastActivity.After(b.LastActivity) }
	case "size":
		less = func(a, b Session) bool { return a.Size > b.Size }
	case "tokens":
		less = func(a, b Session) bool { return a.Tokens > b.Tokens }
	default:
		return fmt.Errorf("--sort %q: use one of %s", by, strings.Join(Orders, ", "))
	}
	sort.SliceStable(ss, func(i, j int) bool {
		if reverse {
			return less(ss[j], ss[i])
		}
		return less(ss[i], ss[j])
	})
	return nil
}
