package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/pins"
)

// Budgets, in o200k tokens (checkpoint.DefaultCount).
const (
	// InstructionBudget caps what PreCompact adds to Claude Code's
	// summarization instructions.
	InstructionBudget = 600
	// ContextBudget caps a SessionStart's additionalContext: the resume
	// text of docs/design/checkpoints.md is never more than 800 tokens.
	ContextBudget = checkpoint.MaxTokens
)

// SyncCheckpointMax is the largest transcript PreCompact checkpoints in
// the hook itself; a larger one is checkpointed by a detached
// `ctxtool checkpoint` (Handler.Spawn) so the hook still answers at once.
const SyncCheckpointMax = 4 << 20

// Handler answers hooks. StateDir holds the checkpoints (pkg/checkpoint's
// store) and <StateDir>/hooks/<agent>/<session id>/scan.json.
type Handler struct {
	StateDir string
	// Home is the user's home (the agents' session dirs are under it).
	Home string
	// ExtraRoots are more directories a transcript_path may be under.
	ExtraRoots []string
	// Spawn starts a detached checkpoint of a large transcript (nil: the
	// hook checkpoints it itself, however long that takes).
	Spawn func(file, key string) error
	Now   func() time.Time
	// Count measures tokens (nil: checkpoint.DefaultCount).
	Count func(string) int
}

// ApproxCount over-estimates o200k tokens without loading a tokenizer
// (which costs more than a hook's whole time budget): three ASCII bytes or
// one other character a token. The 800-token cap stays safe; the text is
// a little shorter than it could be.
func ApproxCount(s string) int {
	n := 0
	ascii := 0
	for _, r := range s {
		if r < 0x80 {
			ascii++
		} else {
			n++
		}
	}
	return n + (ascii+2)/3
}

// Answer is what the hook prints on stdout (possibly nothing) and what it
// logs.
type Answer struct {
	Stdout string
	// Log lines say what the hook did (the hook log).
	Log []string
}

// SessionKey is the checkpoint key of an agent session: the agent and its
// session id, so a session never gets another's checkpoint.
func SessionKey(agent, sessionID string) string { return agent + ":" + sessionID }

// Handle answers one hook. Refusals (ErrRefused) and failures are
// returned as errors: the caller logs them and answers nothing.
func (h *Handler) Handle(in *Input) (*Answer, error) {
	if h.Now == nil {
		h.Now = time.Now
	}
	if h.Count == nil {
		h.Count = ApproxCount
	}
	path, err := CheckTranscript(in.TranscriptPath, Roots(in.Agent, h.Home, h.ExtraRoots))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(h.StateDir, "hooks", in.Agent, checkpoint.SanitizeKey(in.SessionID))
	ans := &Answer{}
	var st scanState
	err = h.update(dir, func(s *scanState) error {
		if err := advance(s, path); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if strings.EqualFold(in.Event, "precompact") {
			s.Compacting = true
		}
		if strings.EqualFold(in.Event, "postcompact") && in.CompactSummary != "" && s.Compacting {
			switch {
			case len(s.Cut) > 0:
				// The boundary is written, the summary line not yet.
				audit(s, in.CompactSummary)
				s.PreAudited = true
			case !s.PreAudited:
				// Neither is written yet (Claude Code 2.1 writes them
				// after the hooks): the facts so far are the summarized
				// history; the boundary, when it comes, only resets them.
				s.Cut = s.Facts
				audit(s, in.CompactSummary)
				s.PreAudited, s.CutPending = true, true
			}
		}
		st = *s
		switch strings.ToLower(in.Event) {
		case "sessionstart":
			if len(s.Dropped) > 0 {
				s.Delivered = true
			}
		case "userpromptsubmit":
			if len(s.Dropped) > 0 && !s.Delivered {
				s.Delivered = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(in.Event) {
	case "precompact":
		h.preCompact(in, path, &st, ans)
	case "sessionstart":
		h.sessionStart(in, &st, ans, false)
	case "userpromptsubmit":
		if len(st.Dropped) > 0 && !st.Delivered {
			h.sessionStart(in, &st, ans, true)
		}
	case "postcompact":
		h.postCompact(in, &st, ans)
	case "stop", "sessionend":
		ans.Log = append(ans.Log, fmt.Sprintf("scanned to line %d", st.Line))
	default:
		return nil, refuse("hook event %q is not one ctxtool answers (PreCompact, SessionStart, PostCompact, UserPromptSubmit, Stop)", in.Event)
	}
	return ans, nil
}

// update runs fn on the session's scan state under its lock and saves it.
//
// scan.json is a cache of what the transcript says (plus which dropped
// facts were handed back): it is replaced by rename but not fsynced — a
// hook's whole budget is smaller than one fsync on a busy disk — and a
// file lost or cut short by a crash only makes the next hook scan again.
func (h *Handler) update(dir string, fn func(*scanState) error) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	file := filepath.Join(dir, "scan.json")
	unlock, err := flock(file+".lock", 2*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	var st scanState
	old, err := os.ReadFile(file)
	if err == nil {
		if json.Unmarshal(old, &st) != nil {
			st = scanState{} // unreadable: scan again from the start
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := fn(&st); err != nil {
		return err
	}
	data, err := json.Marshal(&st)
	if err != nil || bytes.Equal(data, old) {
		return err // nothing new: no write (a statusline renders often)
	}
	tmp, err := os.CreateTemp(dir, ".scan-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// flock takes an exclusive flock(2) on path (created), waiting at most
// wait; the hooks of one session (and the statusline) take turns on its
// scan state.
func flock(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s: another hook of this session holds the lock: %w", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// preCompact checkpoints the session and, for Claude Code, prints what
// the summary must keep.
func (h *Handler) preCompact(in *Input, path string, st *scanState, ans *Answer) {
	key := SessionKey(in.Agent, in.SessionID)
	if fi, err := os.Stat(path); err == nil && fi.Size() > SyncCheckpointMax && h.Spawn != nil {
		if err := h.Spawn(path, key); err != nil {
			ans.Log = append(ans.Log, "checkpoint not started: "+err.Error())
		} else {
			ans.Log = append(ans.Log, fmt.Sprintf("checkpoint of %s (%d bytes) started in the background", path, fi.Size()))
		}
	} else {
		res, err := checkpoint.Take(checkpoint.TakeOptions{File: path, SessionKey: key, Trigger: checkpoint.TriggerCompaction,
			Force: true, Store: &checkpoint.Store{StateDir: h.StateDir}, Now: h.Now, Wait: time.Second,
			Count: h.Count, Size: estimate.Options{Method: estimate.Heuristic}})
		if err != nil {
			ans.Log = append(ans.Log, "checkpoint failed: "+err.Error())
		} else if res.Written {
			ans.Log = append(ans.Log, "checkpoint "+res.CheckpointID+" written")
		}
	}
	if in.Agent == ClaudeCode {
		ans.Stdout = Instructions(st.Facts, InstructionBudget, h.Count)
	}
}

// Instructions names what a summary of the history with fs must keep,
// within budget tokens: constraints, decisions, open requests, then
// identifiers. Empty when there is nothing to name.
func Instructions(fs []facts.Fact, budget int, count func(string) int) string {
	if len(fs) == 0 {
		return ""
	}
	head := "ctxtool: the summary must keep the following from the conversation, word for word where quoted. Constraints and decisions stay in force; open requests may still be pending; identifiers must be copied exactly."
	groups := []struct {
		title string
		class facts.Class
	}{{"Constraints", facts.Constraint}, {"Decisions", facts.Decision}, {"Open requests", facts.Request}, {"Identifiers", facts.Identifier}}
	byClass := facts.ByClass(rank(fs))
	var items [][]string
	for _, g := range groups {
		var xs []string
		for _, f := range byClass[g.class] {
			if conversational(f) {
				xs = append(xs, describe(f))
			}
		}
		items = append(items, xs)
	}
	render := func(n []int) string {
		var sb strings.Builder
		sb.WriteString(head + "\n")
		for i, g := range groups {
			if n[i] == 0 {
				continue
			}
			sb.WriteString(g.title + ":\n")
			for _, it := range items[i][:n[i]] {
				sb.WriteString("- " + it + "\n")
			}
		}
		return sb.String()
	}
	// Take items round-robin by class order while the text fits.
	n := make([]int, len(groups))
	text := ""
	for grew := true; grew; {
		grew = false
		for i := range groups {
			if n[i] >= len(items[i]) {
				continue
			}
			n[i]++
			t := render(n)
			if count(t) > budget {
				n[i]--
				continue
			}
			text, grew = t, true
		}
	}
	if text == "" {
		return ""
	}
	return text
}

// sessionStart returns the session's resume context: pins, what the
// last summary dropped, then the checkpoint's resume text, within
// ContextBudget tokens.
func (h *Handler) sessionStart(in *Input, st *scanState, ans *Answer, prompt bool) {
	var pinned []string
	if in.Cwd != "" {
		ps, err := pins.Load(h.StateDir, in.Cwd)
		if err != nil {
			ans.Log = append(ans.Log, "pins: "+err.Error())
		}
		for _, p := range ps {
			pinned = append(pinned, p.Text)
		}
	}
	var dropped []string
	if !st.Delivered || !prompt {
		for _, f := range st.Dropped {
			dropped = append(dropped, fmt.Sprintf("%s: %s", f.Class, describe(f)))
		}
	}
	resume := ""
	if !prompt && (in.Source == "compact" || in.Source == "resume") {
		store := &checkpoint.Store{StateDir: h.StateDir}
		cp, _, err := store.Latest(SessionKey(in.Agent, in.SessionID))
		switch {
		case err == nil:
			resume = checkpoint.Render(cp, checkpoint.RenderOptions{Count: h.Count})
		case !errors.Is(err, checkpoint.ErrNoCheckpoint):
			ans.Log = append(ans.Log, "checkpoint: "+err.Error())
		}
	}
	text := Context(in.SessionID, pinned, dropped, resume, ContextBudget, h.Count)
	if text == "" {
		return
	}
	event := "SessionStart"
	if prompt {
		event = "UserPromptSubmit"
	}
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": text}})
	ans.Stdout = string(out) + "\n"
	ans.Log = append(ans.Log, fmt.Sprintf("context: %d pins, %d dropped facts, resume text %t, %d tokens", len(pinned), len(dropped), resume != "", h.Count(text)))
}

// Context assembles the additionalContext: pins first (always), then the
// dropped facts, then the resume text, cut to budget tokens (the resume
// text first, then the dropped facts from the least needed).
func Context(sessionID string, pinned, dropped []string, resume string, budget int, count func(string) int) string {
	if len(pinned) == 0 && len(dropped) == 0 && resume == "" {
		return ""
	}
	build := func(dropped []string, resume string) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "[ctxtool] State of this session (%s), restored after the agent's compaction.\n", sessionID)
		if len(pinned) > 0 {
			sb.WriteString("Pinned by the user (always in force):\n")
			for _, p := range pinned {
				sb.WriteString("- " + p + "\n")
			}
		}
		if len(dropped) > 0 {
			sb.WriteString("Left out of the last summary (still in force):\n")
			for _, d := range dropped {
				sb.WriteString("- " + d + "\n")
			}
		}
		if resume != "" {
			sb.WriteString(strings.TrimRight(resume, "\n") + "\n")
		}
		return sb.String()
	}
	text := build(dropped, resume)
	if count(text) <= budget {
		return text
	}
	if resume != "" {
		room := budget - count(build(dropped, ""))
		if room > 40 {
			r := checkpoint.Clean(resume)
			for r != "" && count(build(dropped, r)) > budget {
				r = r[:len(r)*9/10]
				if i := strings.LastIndexByte(r, '\n'); i > 0 {
					r = r[:i]
				}
			}
			if r != "" {
				return build(dropped, r)
			}
		}
	}
	for len(dropped) > 0 && count(build(dropped, "")) > budget {
		dropped = dropped[:len(dropped)-1]
	}
	return build(dropped, "")
}

// postCompact reports the audit: Claude Code shows systemMessage to the
// user; Codex accepts it too.
func (h *Handler) postCompact(in *Input, st *scanState, ans *Answer) {
	if st.Audited == 0 {
		ans.Log = append(ans.Log, "no summary to audit yet")
		return
	}
	if len(st.Dropped) == 0 {
		ans.Log = append(ans.Log, "audit: the summary kept every fact")
		return
	}
	var names []string
	for _, f := range st.Dropped {
		names = append(names, describe(f))
		if len(names) == 5 {
			break
		}
	}
	msg := fmt.Sprintf("ctxtool: the summary left out %d fact(s); they are handed back to the agent: %s", len(st.Dropped), strings.Join(names, "; "))
	ans.Log = append(ans.Log, "audit: "+msg)
	out, _ := json.Marshal(map[string]any{"systemMessage": msg})
	ans.Stdout = string(out) + "\n"
}
