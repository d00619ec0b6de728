// Package hooks answers Claude Code's and Codex's hooks (PreCompact,
// SessionStart, PostCompact, UserPromptSubmit) so a session's state
// survives the agent's own compaction: before the cut it checkpoints the
// session and tells Claude Code what its summary must keep; after it, it
// returns this session's resume text, its pins and what the agent's
// summary dropped as additionalContext.
//
// Everything a hook receives is untrusted: the JSON is size-capped, the
// session id may not carry path characters, and transcript_path must be a
// regular file under the agent's own session directories. A hook must
// never fail or block the agent: every refusal and error becomes a line in
// the hook log and an empty answer with exit status 0 (cmd/hook.go).
package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// The agents whose hooks are answered.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// MaxInput caps the hook JSON read from stdin. Claude Code's PostCompact
// carries the whole summary (a few KB to ~100 KB); 4 MiB leaves room and
// refuses a runaway.
const MaxInput = 4 << 20

// Input is the part of a hook's JSON ctxtool uses; the two agents share
// these names (docs: ../shared/docs/agents-offline.md).
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	Event          string `json:"hook_event_name"`
	// Source of SessionStart: startup, resume, clear, compact, fork.
	Source string `json:"source"`
	// Trigger of Pre/PostCompact: manual or auto.
	Trigger            string `json:"trigger"`
	CustomInstructions string `json:"custom_instructions"`
	// CompactSummary is Claude Code's PostCompact summary.
	CompactSummary string `json:"compact_summary"`
	// TurnID and Model come from Codex only.
	TurnID string `json:"turn_id"`
	Model  any    `json:"model"`
	// PermissionMode comes from Claude Code only.
	PermissionMode string `json:"permission_mode"`
	Prompt         string `json:"prompt"`

	// Agent is ClaudeCode or Codex: the --agent flag install wrote, else
	// guessed from the fields only one agent sends.
	Agent string `json:"-"`
}

// sessionIDRE is what a session id may be: both agents use UUIDs; nothing
// that could name a directory.
var sessionIDRE = lazyre.New(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// ErrRefused marks input refused as untrusted (logged, answered empty).
var ErrRefused = errors.New("refused")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...))
}

// Parse reads one hook's JSON (at most MaxInput bytes) and checks what
// is used as a name or a path. agent is the --agent flag ("" = guess).
func Parse(r io.Reader, agent, event string) (*Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading the hook's JSON on stdin: %w", err)
	}
	if len(data) > MaxInput {
		return nil, refuse("the hook's JSON is over %d bytes", MaxInput)
	}
	var in Input
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&in); err != nil {
		return nil, refuse("the hook's stdin is not a JSON object: %v", err)
	}
	if event != "" {
		if in.Event != "" && !strings.EqualFold(in.Event, event) {
			return nil, refuse("hook_event_name %q, but the hook was installed for %s", in.Event, event)
		}
		in.Event = event
	}
	if in.Event == "" {
		return nil, refuse("no hook_event_name in the hook's JSON (and no --event)")
	}
	switch agent {
	case ClaudeCode, Codex:
		in.Agent = agent
	case "":
		in.Agent = ClaudeCode
		if in.TurnID != "" || in.Model != nil {
			in.Agent = Codex
		}
	default:
		return nil, fmt.Errorf("--agent %q: want %s or %s", agent, ClaudeCode, Codex)
	}
	if !sessionIDRE().MatchString(in.SessionID) || strings.Trim(in.SessionID, ".") == "" {
		return nil, refuse("session_id %q is not a plain id", in.SessionID)
	}
	return &in, nil
}

// Roots are the directories a transcript_path may be under, for agent:
// Claude Code's projects dir ($CLAUDE_CONFIG_DIR or ~/.claude), Codex's
// sessions dir ($CODEX_HOME or ~/.codex), plus extra (configured).
func Roots(agent, home string, extra []string) []string {
	var roots []string
	switch agent {
	case ClaudeCode:
		dir := os.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			dir = filepath.Join(home, ".claude")
		}
		roots = append(roots, filepath.Join(dir, "projects"))
	case Codex:
		dir := os.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		roots = append(roots, filepath.Join(dir, "sessions"))
	}
	return append(roots, extra...)
}

// CheckTranscript resolves path (symlinks followed) and accepts it only
// when it is a regular file under one of roots (also resolved). It
// returns the resolved path.
func CheckTranscript(path string, roots []string) (string, error) {
	if path == "" {
		return "", refuse("no transcript_path")
	}
	if !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", refuse("transcript_path %q is not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", refuse("transcript_path %s: %v", path, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", refuse("transcript_path %s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", refuse("transcript_path %s is not a regular file", path)
	}
	for _, r := range roots {
		rr, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != "." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != ".." {
			return real, nil
		}
	}
	return "", refuse("transcript_path %s is not under the agent's session directories (%s)", path, strings.Join(roots, ", "))
}
