package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// CustomType marks the custom_message entries restore --append writes; the
// builder ignores them so a resume text never becomes the "topic".
const CustomType = "ctxtool.checkpoint"

// Thresholds of the structural heuristics (docs/design/checkpoints.md).
const (
	longAgentChars  = 500              // an agent answer this long is a likely decision point
	shortReplyChars = 50               // a user reply shorter than this after one is a decision
	idleAfter       = 30 * time.Minute // no activity for this long = idle
)

// Message is the part of one transcript message the builder reads. The
// transcript adapter fills it from the session's branch (root → leaf).
type Message struct {
	EntryID    string
	Role       string // user, assistant, toolResult, bashExecution, custom, …
	CustomType string
	Text       string // text blocks joined; thinking excluded
	ToolCalls  []ToolCall
	ToolCallID string // toolResult
	ToolName   string // toolResult
	IsError    bool   // toolResult
	StopReason string // assistant
	Time       time.Time
}

// ToolCall is one toolCall block of an assistant message.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
	read *argFacts // Args read (facts)
	// scanned: Args were read from a line by the transcript's scanner,
	// which checks the grammar json.Valid checks (JSON.parse's).
	scanned bool
	// from: Args were read from this entry's line and not kept (only
	// their facts), the call being its nth; see branch.keep.
	from *transcript.Entry
	nth  int
}

// CompactionInfo is a compaction entry on the branch.
type CompactionInfo struct {
	ReadFiles, ModifiedFiles []string
}

// Input is everything Build needs; no model, no clock of its own.
type Input struct {
	SessionKey, SessionFile string
	// SessionID is the session header's id ("" without one).
	SessionID   string
	Trigger     string
	Messages    []Message // branch order, root → leaf
	Compactions []CompactionInfo
	// SplitTurn: the last compaction cut a turn and nothing followed it.
	SplitTurn       bool
	CompactionCount int
	InputTokens     int
	ContextWindow   int
	Now             time.Time
	State           *State // incremental state to bundle (may be nil)
}

// decisionAt is the decision heuristic for one user message: reply is a
// short user message (under 50 characters) and answer the last agent
// answer with text before it (nil when the previous turn had none) and over
// 500 characters. It returns the decision's text. Both the builder and the
// incremental capture (capture.go) use it, so the same reply gives the same
// words and a recorded decision dedupes against the rebuilt one.
func decisionAt(reply, answer *Message) (string, bool) {
	if reply == nil || answer == nil {
		return "", false
	}
	r := strings.TrimSpace(reply.Text)
	if utf8.RuneCountInString(r) >= shortReplyChars || runeLen(answer.Text) <= longAgentChars {
		return "", false
	}
	return fmt.Sprintf("User replied %q to: %s", oneLine(r, shortReplyChars), gist(lastParagraph(answer.Text), GistChars)), true
}

var checkbox = lazyre.New(`(?m)^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$`)

// mayHaveCheckbox is false when s has no "[ ]", "[x]" or "[X]", so that
// checkbox cannot match: running the expression on every answer was a
// tenth of a checkpoint's CPU.
func mayHaveCheckbox(s string) bool {
	for i := strings.IndexByte(s, '['); i >= 0 && i+2 < len(s); {
		if c := s[i+1]; (c == ' ' || c == 'x' || c == 'X') && s[i+2] == ']' {
			return true
		}
		j := strings.IndexByte(s[i+1:], '[')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// failKey identifies a tool failure by tool and error gist, so an error the
// capture recorded matches the same failure read from the messages.
func failKey(tool, err string) string { return tool + "\x00" + gist(err, GistChars) }

// dedupeCap removes duplicates (first occurrence wins) and keeps the last n.
func dedupeCap(items []string, n int) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, it := range items {
		it = oneLine(it, 400)
		if it == "" || seen[it] {
			continue
		}
		seen[it] = true
		out = append(out, it)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// gist is the first n characters of a message, whitespace collapsed.
func gist(s string, n int) string { return oneLine(s, n) }

func runeLen(s string) int { return utf8.RuneCountInString(strings.TrimSpace(s)) }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lastParagraph is where an agent's proposal or question usually sits.
func lastParagraph(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n\n"); i >= 0 && len(strings.TrimSpace(s[i:])) > 0 {
		return s[i:]
	}
	return s
}

// paramsSummary is a tool call's arguments as compact JSON, cut to a gist.
func paramsSummary(args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		return gist(string(args), GistChars)
	}
	return gist(buf.String(), GistChars)
}
