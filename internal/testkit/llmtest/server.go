// Package llmtest is an OpenAI-compatible chat-completions server for tests:
// it answers on loopback only, can be scripted to fail (429 with
// Retry-After, 5xx, slow answers) and records every request it received,
// with its body. Requests with "stream": true (real agents such as pi)
// get the answer as server-sent events.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Step scripts one response. The zero Step answers normally.
type Step struct {
	Status     int    // HTTP status to return instead of an answer (0: answer)
	RetryAfter string // Retry-After header value
	Delay      time.Duration
	Body       string // error body (default: an OpenAI error object)
	Empty      bool   // answer 200 with empty content
}

// Request is what the server saw.
type Request struct {
	Model     string    `json:"model"`
	Messages  []Message `json:"messages"`
	MaxTokens int       `json:"max_tokens"`
	// MaxCompletionTokens is the newer name (OpenAI reasoning models).
	MaxCompletionTokens int `json:"max_completion_tokens"`
	// Sent lists the top-level fields of the request body.
	Sent        map[string]bool `json:"-"`
	Temperature *float64        `json:"temperature"`
	Auth        string          `json:"-"`
	At          time.Time       `json:"-"`
	// Stream is true when the client asked for server-sent events.
	Stream bool `json:"stream"`
	// Body is the request body as received.
	Body []byte `json:"-"`
}

// Message is one chat message. Content is its text: a string as sent, or
// the text parts of a content array joined by newlines.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UnmarshalJSON reads content as a string or as an array of parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role, m.Content = raw.Role, ""
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	if raw.Content[0] == '"' {
		return json.Unmarshal(raw.Content, &m.Content)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return err
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	m.Content = strings.Join(texts, "\n")
	return nil
}

// ToolCall is a function call the model answers with; Arguments is its
// JSON object.
type ToolCall struct {
	ID, Name  string
	Arguments map[string]any
	// Namespace is the Responses API tool namespace the function is in
	// (Codex groups an MCP server's tools as "mcp__<server>").
	Namespace string
}

// Server is a fake endpoint. Set Reply before use to control answers.
type Server struct {
	*httptest.Server
	// Reply builds the answer text; default: DefaultReply.
	Reply func(r Request) string

	mu       sync.Mutex
	script   []Step
	requests []Request
	// Always is used after the script runs out.
	Always Step
	// Reject answers 400, as OpenAI does, to any request carrying one of
	// these top-level fields (e.g. "max_tokens" like a reasoning model,
	// or "max_completion_tokens" like an older server).
	Reject []string
	// ToolCall, when set and returning non-nil, answers the request with
	// that tool call instead of text (finish_reason "tool_calls"), as a
	// model driving an agent's tools does.
	ToolCall func(r Request) *ToolCall
	// UsageFromBody reports prompt_tokens as chars/4 of the whole request
	// body, as a provider counts everything it was sent (default: chars/4
	// of the messages' text).
	UsageFromBody bool
}

// New starts a server; the script is consumed one step per request. Close
// it when done.
func New(script ...Step) *Server {
	s := &Server{script: script, Reply: DefaultReply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the base URL to configure (…/v1).
func (s *Server) BaseURL() string { return s.Server.URL + "/v1" }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields)
	req.Sent = map[string]bool{}
	for k := range fields {
		req.Sent[k] = true
	}
	req.Auth = r.Header.Get("Authorization")
	req.At = time.Now()
	req.Body = body
	s.mu.Lock()
	s.requests = append(s.requests, req)
	step := s.Always
	if len(s.script) > 0 {
		step, s.script = s.script[0], s.script[1:]
	}
	reply := s.Reply
	reject := s.Reject
	fromBody := s.UsageFromBody
	toolCall := s.ToolCall
	s.mu.Unlock()

	for _, f := range reject {
		if req.Sent[f] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg := fmt.Sprintf("Unsupported parameter: '%s' is not supported with this model.", f)
			if f == "max_completion_tokens" {
				msg = "Unrecognized request argument supplied: max_completion_tokens"
			}
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": f, "code": "unsupported_parameter"}})
			return
		}
	}

	if step.Delay > 0 {
		select {
		case <-time.After(step.Delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if step.Status != 0 && step.Status != http.StatusOK {
		if step.RetryAfter != "" {
			w.Header().Set("Retry-After", step.RetryAfter)
		}
		w.WriteHeader(step.Status)
		b := step.Body
		if b == "" {
			b = fmt.Sprintf(`{"error":{"message":"scripted failure %d","type":"server_error"}}`, step.Status)
		}
		io.WriteString(w, b)
		return
	}
	var call *ToolCall
	if toolCall != nil {
		call = toolCall(req)
	}
	text := ""
	if !step.Empty && call == nil {
		text = reply(req)
	}
	in := 0
	for _, m := range req.Messages {
		in += (len(m.Content) + 3) / 4
	}
	if fromBody {
		in = (len(body) + 3) / 4
	}
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": (len(text) + 3) / 4,
		"total_tokens": in + (len(text)+3)/4}
	if req.Stream {
		stream(w, req.Model, text, call, usage)
		return
	}
	msg, finish := map[string]any{"role": "assistant", "content": text}, "stop"
	if call != nil {
		msg["tool_calls"], finish = []any{call.wire(false)}, "tool_calls"
	}
	resp := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   usage,
	}
	json.NewEncoder(w).Encode(resp)
}

// wire is the call as the API spells it (with its index in a stream).
func (c *ToolCall) wire(indexed bool) map[string]any {
	args, _ := json.Marshal(c.Arguments)
	m := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": string(args)}}
	if indexed {
		m["index"] = 0
	}
	return m
}

// stream writes the answer as chat-completion chunks (server-sent events):
// the text or the tool call, then the finish reason with the usage, then
// [DONE].
func stream(w http.ResponseWriter, model, text string, call *ToolCall, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		data, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	if call != nil {
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{call.wire(true)}}, nil, nil)
		chunk(map[string]any{}, "tool_calls", usage)
	} else {
		chunk(map[string]any{"role": "assistant", "content": text}, nil, nil)
		chunk(map[string]any{}, "stop", usage)
	}
	io.WriteString(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// DefaultReply answers with a short structured summary that names the
// headings the prompt asked for (any line starting with "## " in the
// prompt) and echoes the last line of the user message, so tests can see
// what was summarised.
func DefaultReply(r Request) string {
	var heads []string
	seen := map[string]bool{}
	user := ""
	for _, m := range r.Messages {
		for _, l := range strings.Split(m.Content, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "## ") && !seen[l] && len(l) < 60 {
				seen[l] = true
				heads = append(heads, l)
			}
		}
		if m.Role == "user" {
			user = m.Content
		}
	}
	var b strings.Builder
	b.WriteString("Summary from the test model.\n")
	for _, h := range heads {
		fmt.Fprintf(&b, "\n%s\n- noted (%d chars of input)\n", h, len(user))
	}
	return strings.TrimSpace(b.String())
}
