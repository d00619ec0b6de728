package hooks

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
)

// The gauge: how full the context is against the point where the agent
// compacts by itself, not against the raw window.
//
// Claude Code 2.1 compacts automatically when the context reaches its
// effective window (the model's window less the output it reserves, at
// most 20k) less a 13k buffer: 167k of a 200k window. A session that has
// compacted before says where exactly: its compact_boundary records the
// context size (preTokens) at which an automatic compaction fired, and
// that evidence wins over the formula. Codex compacts at
// model_auto_compact_token_limit when set, else at 90% of
// model_context_window.

// Claude Code's reserve below the window (output tokens kept free, then
// the auto-compact buffer).
const (
	claudeOutputReserve = 20_000
	claudeBuffer        = 13_000
)

// StatusInput is Claude Code's statusline JSON (the fields used).
type StatusInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	Model          struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
	} `json:"model"`
	ContextWindow *struct {
		Size         int `json:"context_window_size"`
		CurrentUsage *struct {
			Input         int `json:"input_tokens"`
			CacheCreation int `json:"cache_creation_input_tokens"`
			CacheRead     int `json:"cache_read_input_tokens"`
		} `json:"current_usage"`
	} `json:"context_window"`
}

// Gauge is the statusline's figures.
type Gauge struct {
	Used   int `json:"used"`
	Limit  int `json:"limit"`
	Window int `json:"window"`
	// Basis says where Limit comes from: "compact_boundary" (the
	// session's own evidence), "claude-code formula", "codex limit",
	// "codex 90% of window".
	Basis   string  `json:"basis"`
	Percent float64 `json:"percent"`
	Left    int     `json:"left"`
	// Behind: the transcript is not read to its end yet (each render
	// reads for a bounded time); the next render goes on.
	Behind bool `json:"behind,omitempty"`
}

// ParseStatus reads the statusline JSON (at most MaxInput bytes).
func ParseStatus(r io.Reader) (*StatusInput, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxInput {
		return nil, refuse("the statusline JSON is over %d bytes", MaxInput)
	}
	var in StatusInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, refuse("the statusline's stdin is not JSON: %v", err)
	}
	return &in, nil
}

// Status measures the session of in. The transcript (when it checks out,
// under the agent's session dirs) is read incrementally through the same
// scan state as the hooks, so each render reads only the new lines.
func (h *Handler) Status(in *StatusInput, agent string) (*Gauge, error) {
	g := &Gauge{}
	var st scanState
	if in.TranscriptPath != "" && sessionIDRE().MatchString(in.SessionID) {
		path, err := CheckTranscript(in.TranscriptPath, Roots(agent, h.Home, h.ExtraRoots))
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(h.StateDir, "hooks", agent, checkpoint.SanitizeKey(in.SessionID))
		if err := h.update(dir, func(s *scanState) error {
			if err := advance(s, path); err != nil {
				return err
			}
			st = *s
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if cw := in.ContextWindow; cw != nil {
		g.Window = cw.Size
		if u := cw.CurrentUsage; u != nil {
			g.Used = u.Input + u.CacheCreation + u.CacheRead
		}
	}
	g.Behind = st.Behind
	if g.Used == 0 {
		g.Used = st.Usage
	}
	switch {
	case agent == Codex && st.Limit > 0:
		g.Limit, g.Basis = st.Limit, "codex limit"
		if g.Window == 0 {
			g.Window = st.Window
		}
	case agent == Codex:
		if g.Window == 0 {
			g.Window = st.Window
		}
		g.Limit, g.Basis = g.Window*9/10, "codex 90% of window"
	default:
		for i := len(st.PreTokens) - 1; i >= 0; i-- {
			if st.PreTokens[i].Trigger == "auto" {
				g.Limit, g.Basis = st.PreTokens[i].Tokens, "compact_boundary"
				break
			}
		}
		if g.Limit == 0 && g.Window > 0 {
			g.Limit, g.Basis = ClaudeAutoCompactPoint(g.Window), "claude-code formula"
		}
	}
	if g.Limit > 0 {
		g.Percent = float64(g.Used) * 100 / float64(g.Limit)
		g.Left = max(g.Limit-g.Used, 0)
	}
	return g, nil
}

// ClaudeAutoCompactPoint is where Claude Code compacts by itself in a
// window of that size; CLAUDE_AUTOCOMPACT_PCT_OVERRIDE (a percentage of
// the effective window) moves it lower, as in Claude Code.
func ClaudeAutoCompactPoint(window int) int {
	effective := window - min(claudeOutputReserve, window/4)
	point := effective - claudeBuffer
	if p, err := strconv.ParseFloat(os.Getenv("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"), 64); err == nil && p > 0 && p <= 100 {
		point = min(point, int(float64(effective)*p/100))
	}
	return max(point, 0)
}

// String is the statusline: "ctx 142k/167k 85% · 25k to auto-compact".
func (g *Gauge) String() string {
	if g.Limit == 0 {
		if g.Used == 0 {
			return "ctx ?"
		}
		return "ctx " + k(g.Used)
	}
	s := fmt.Sprintf("ctx %s/%s %d%% · %s to auto-compact", k(g.Used), k(g.Limit), int(g.Percent), k(g.Left))
	if g.Behind {
		s += " …"
	}
	return s
}

func k(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 100_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%dk", (n+500)/1000)
}
