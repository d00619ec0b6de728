package agentlink

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctxtool/ctxtool/pkg/rolling"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The rolling window inside the agent: before every model request the shim
// sends the messages the agent is about to send (`ctxtool agent window`),
// and ctxtool answers which oldest ones to leave out and the note that
// replaces them (pkg/rolling's eviction plan and note). The agent's
// session keeps every message; only the request is shortened, and the
// shim's `recall` tool searches what was left out.

// WindowRequest is one request's messages.
type WindowRequest struct {
	Version int     `json:"version"`
	Agent   string  `json:"agent"`
	Session Session `json:"session"`
	// Messages are the messages of the request, system prompt excluded
	// (pi's `context` event messages).
	Messages []json.RawMessage `json:"messages"`
	// ContextWindow is the model's window in tokens.
	ContextWindow int `json:"contextWindow"`
	// OverheadTokens is what the request carries besides the messages:
	// the system prompt and the tool definitions, as the agent counts them.
	OverheadTokens int `json:"overheadTokens,omitempty"`
}

// WindowResponse says what to leave out of the request.
type WindowResponse struct {
	Version int    `json:"version"`
	Decline string `json:"decline,omitempty"`
	// FirstKept is the index of the first message to send (0: send them
	// all); Note replaces the messages before it.
	FirstKept     int    `json:"firstKept"`
	Note          string `json:"note,omitempty"`
	Evicted       int    `json:"evicted"`
	EvictedTokens int    `json:"evictedTokens"`
	TokensBefore  int    `json:"tokensBefore"`
	KeptTokens    int    `json:"keptTokens"`
	TargetTokens  int    `json:"targetTokens"`
	TargetMet     bool   `json:"targetMet"`
	Reason        string `json:"reason,omitempty"`
}

// WindowOptions are ctxtool's rolling settings (compaction.rolling.*).
type WindowOptions struct {
	TargetUtilization float64
	MinKeepMessages   int
	// Tool names the shim's recall tool in the note ("" : none).
	Tool    string
	TempDir string
}

// DecodeWindow reads one window request of at most max bytes.
func DecodeWindow(r io.Reader, max int64) (*WindowRequest, error) {
	var req WindowRequest
	if err := decodeOne(r, max, "window request", &req); err != nil {
		return nil, err
	}
	head := Request{Version: req.Version, Agent: req.Agent}
	if err := head.check(); err != nil {
		return nil, err
	}
	if req.ContextWindow <= 0 {
		return nil, inputErrorf("contextWindow must be the model's window in tokens (got %d)", req.ContextWindow)
	}
	if req.OverheadTokens < 0 {
		return nil, inputErrorf("overheadTokens must not be negative")
	}
	return &req, checkMessages("messages", req.Messages)
}

// Window plans the request's window: the shortest prefix of its messages
// to leave out so the request (overhead and note included) is at most the
// target share of the context window, at least MinKeepMessages kept, and
// no tool result separated from its call.
func Window(req *WindowRequest, o WindowOptions) (*WindowResponse, error) {
	res := &WindowResponse{Version: Version}
	if len(req.Messages) == 0 {
		res.Reason = "no messages"
		return res, nil
	}
	s, first, err := loadRequest(&Request{Version: Version, Agent: req.Agent, Session: req.Session,
		Preparation: Preparation{MessagesToSummarize: req.Messages}}, o.TempDir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var entries []*transcript.Entry
	for _, e := range s.Branch() {
		if e.Line >= first {
			entries = append(entries, e)
		}
	}
	if len(entries) != len(req.Messages) {
		return nil, fmt.Errorf("the request's %d messages read back as %d entries", len(req.Messages), len(entries))
	}
	msgs := make([]rolling.Message, len(entries))
	sum := 0
	for i, e := range entries {
		var m struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(req.Messages[i], &m) // checked: every message has a role
		msgs[i] = rolling.Message{Entry: e, Role: m.Role, Tokens: max((len(req.Messages[i])+3)/4, e.Tokens())}
		sum += msgs[i].Tokens
	}
	file := req.Session.File
	if file == "" {
		file = "(this session)"
	}
	in := rolling.EvictInput{Messages: msgs, TokensBefore: sum + req.OverheadTokens, ContextWindow: req.ContextWindow,
		TargetUtilization: o.TargetUtilization, MinKeepMessages: o.MinKeepMessages,
		NoteTokens: func(i int) int {
			return (len(rolling.WindowNote(file, req.ContextWindow, o.TargetUtilization, msgs[:i], o.Tool)) + 3) / 4
		}}
	ev := rolling.Evict(in)
	res.TokensBefore, res.KeptTokens, res.TargetTokens, res.TargetMet, res.Reason = in.TokensBefore, ev.KeptTokens, ev.TargetTokens, ev.TargetMet, ev.Reason
	if ev.FirstKept > 0 {
		res.FirstKept, res.Evicted, res.EvictedTokens = ev.FirstKept, ev.EvictedCount, ev.EvictedTokens
		res.Note = rolling.WindowNote(file, req.ContextWindow, o.TargetUtilization, msgs[:ev.FirstKept], o.Tool)
	}
	return res, nil
}
