package models

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/sessionstore"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// TranscriptOnly reports whether an assistant message's provider/model is
// one of OpenClaw's transcript-only pseudo models: delivery-mirror (a copy
// of a reply delivered to a channel) and gateway-injected (a status or
// notice the gateway writes). No model ran for them, their usage is all
// zero, and they must never choose the session's model or window.
// OpenClaw itself tests provider "openclaw" and these two ids.
func TranscriptOnly(provider, model string) bool {
	p := strings.ToLower(strings.TrimSpace(provider))
	switch strings.ToLower(strings.TrimSpace(model)) {
	case "delivery-mirror", "gateway-injected":
		return p == "openclaw" || p == ""
	}
	return false
}

// SessionModel is the model a session runs on and where that was read.
type SessionModel struct {
	Provider string
	ID       string
	// From is "flag" (--model / config model), "model_change",
	// "assistant", "header" or "" (unknown).
	From string
	// Line is the line the model was read from (0 for a flag).
	Line int
}

// Name is provider/id when the provider is known, else the id.
func (m SessionModel) Name() string {
	if m.Provider != "" && m.ID != "" && !strings.HasPrefix(m.ID, m.Provider+"/") {
		return m.Provider + "/" + m.ID
	}
	return m.ID
}

// modelOf finds the model of a session from its root→leaf path: the last
// model_change or assistant message (pi's rule for the next request),
// skipping OpenClaw's transcript-only replies; else the v1 header's
// provider/modelId. An assistant message that errored still names the
// model it was sent to.
func modelOf(path []*transcript.Entry, header *transcript.Header) SessionModel {
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		switch {
		case e.Type() == "model_change" && e.Model() != "":
			return SessionModel{Provider: e.Provider(), ID: e.Model(), From: "model_change", Line: e.Line}
		case e.Type() == "message" && e.Role() == "assistant" && e.Model() != "" && !TranscriptOnly(e.Provider(), e.Model()):
			return SessionModel{Provider: e.Provider(), ID: e.Model(), From: "assistant", Line: e.Line}
		}
	}
	if header != nil && header.ModelID != "" {
		return SessionModel{Provider: header.Provider, ID: header.ModelID, From: "header", Line: header.Line}
	}
	return SessionModel{}
}

// Settings are the user's inputs to the window resolution, from flags and
// config.
type Settings struct {
	// Model (--model, config model) replaces the session's model.
	Model string
	// ContextWindow (--context-window, config contextWindow) wins over
	// everything, the cap included: it is the user stating the window.
	ContextWindow int
	// Overrides are config models.<name>.contextWindow.
	Overrides map[string]int
	// ContextTokens is OpenClaw's agents.defaults.contextTokens (config
	// contextTokens): a cap on every model's window.
	ContextTokens int
}

// FromCap is the Source of a window lowered by Settings.ContextTokens.
const FromCap Source = "contextTokens cap"

// FromFile is the Source of a window the transcript itself states.
const FromFile Source = "file"

// SessionWindow is the resolved model and window of one session.
type SessionWindow struct {
	Window
	Session SessionModel
}

// Describe says in words where the window came from, for reports.
func (w SessionWindow) Describe() string {
	s := fmt.Sprintf("%d tokens (%s", w.Tokens, w.Source)
	if w.Matched != "" {
		s += " " + w.Matched
	}
	if w.Session.From != "" {
		s += fmt.Sprintf(", model %s from the %s", w.Session.Name(), w.Session.From)
		if w.Session.Line > 0 {
			s += fmt.Sprintf(" at line %d", w.Session.Line)
		}
	}
	return s + ")"
}

// ForSession is the one resolution of a session's model and context window
// that every command uses: the model is --model or the session's (modelOf);
// the window is --context-window, else a config override for the model,
// else the model table, else DefaultContextWindow — then OpenClaw's
// agents.defaults.contextTokens caps it (as OpenClaw's
// resolveContextWindowInfo does), unless the window was given explicitly.
func ForSession(path []*transcript.Entry, header *transcript.Header, set Settings) SessionWindow {
	sm := modelOf(path, header)
	if set.Model != "" {
		sm = SessionModel{ID: set.Model, From: "flag"}
	}
	id := sm.ID
	if sm.Provider != "" && id != "" && sm.From != "flag" {
		id = sm.Provider + "/" + id // provider paths resolve ("openrouter/…", "ollama/…")
	}
	w := resolve(id, set.Overrides, set.ContextWindow)
	w.Model = sm.Name()
	if header != nil && header.ContextWindow > 0 && (w.Source == FromTable || w.Source == FromDefault) {
		// The transcript states the window the agent ran with (Codex's
		// model_context_window): it beats the table, not the user.
		w.Tokens, w.Source, w.Matched = header.ContextWindow, FromFile, header.WindowSource
	}
	if set.ContextWindow <= 0 && set.ContextTokens > 0 && set.ContextTokens < w.Tokens {
		w.Tokens, w.Source = set.ContextTokens, FromCap
	}
	return SessionWindow{Window: w, Session: sm}
}

// FromSessionsJSON gives a session the window OpenClaw states for it when
// its file does not state one: the contextTokens of its entry in the
// sessions.json beside it (OpenClaw's resolved window for the session's
// model). Call it before ForSession; it changes nothing for a session
// whose file states a window or that no sessions.json names.
func FromSessionsJSON(s *transcript.Session) {
	if s == nil || s.Header == nil || s.Header.ContextWindow > 0 || s.File == "" || s.File == "-" {
		return
	}
	st, err := sessionstore.Read(filepath.Dir(s.File))
	if err != nil || st == nil {
		return
	}
	key := st.KeyFor(s.File)
	if e, ok := st.Entry(key); ok && e.ContextTokens != nil && *e.ContextTokens > 0 {
		s.Header.ContextWindow = *e.ContextTokens
		s.Header.WindowSource = "OpenClaw sessions.json contextTokens (" + key + ")"
	}
}
