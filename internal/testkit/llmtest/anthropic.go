package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// The fakes of the two other wire protocols the real agents speak:
// Anthropic Messages (/v1/messages, Claude Code) and OpenAI Responses
// (/v1/responses, Codex), both streaming server-sent events. Each records
// every request body and answers with text or a tool call chosen by the
// test from the request.

// Turn is one scripted answer: text, or a tool call when Tool is set.
type Turn struct {
	Text string
	Tool *ToolCall
	// InputTokens is the usage reported (0: the body's bytes / 4); a
	// test makes an agent believe its context is full with it.
	InputTokens int
	// Status, when set, answers with this HTTP status and ErrorBody
	// (an API error, e.g. Anthropic's "prompt is too long").
	Status    int
	ErrorBody string
}

// Wire is a fake model endpoint of one protocol.
type Wire struct {
	*httptest.Server
	// Answer chooses the answer from the request body (JSON); nil or a
	// zero Turn answers "ok".
	Answer func(body []byte) Turn

	mu     sync.Mutex
	bodies [][]byte
	paths  []string
}

// Bodies returns the request bodies received on the model endpoint, in order.
func (w *Wire) Bodies() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.bodies...)
}

// Paths returns every path requested (model endpoint or not).
func (w *Wire) Paths() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.paths...)
}

func (w *Wire) record(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	w.mu.Lock()
	w.paths = append(w.paths, r.Method+" "+r.URL.Path)
	w.mu.Unlock()
	return body, err
}

func (w *Wire) answer(body []byte) Turn {
	w.mu.Lock()
	w.bodies = append(w.bodies, body)
	w.mu.Unlock()
	if w.Answer != nil {
		if t := w.Answer(body); t.Text != "" || t.Tool != nil || t.Status != 0 {
			return t
		}
	}
	return Turn{Text: "ok"}
}

func sse(rw http.ResponseWriter, event string, v any) {
	data, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(rw, "event: %s\n", event)
	}
	fmt.Fprintf(rw, "data: %s\n\n", data)
	if f, ok := rw.(http.Flusher); ok {
		f.Flush()
	}
}

// NewAnthropic starts a fake Anthropic Messages server (loopback).
func NewAnthropic() *Wire {
	w := &Wire{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := w.record(r)
		if err != nil {
			http.Error(rw, err.Error(), 400)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(rw, `{"input_tokens":%d}`, len(body)/4)
			return
		case !strings.HasSuffix(r.URL.Path, "/v1/messages"):
			http.NotFound(rw, r)
			return
		}
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		json.Unmarshal(body, &req)
		t := w.answer(body)
		if t.Status != 0 {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(t.Status)
			fmt.Fprint(rw, t.ErrorBody)
			return
		}
		in := len(body) / 4
		if t.InputTokens > 0 {
			in = t.InputTokens
		}
		block := map[string]any{"type": "text", "text": t.Text}
		stop := "end_turn"
		if t.Tool != nil {
			block = map[string]any{"type": "tool_use", "id": t.Tool.ID, "name": t.Tool.Name, "input": t.Tool.Arguments}
			stop = "tool_use"
		}
		msg := map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
		if !req.Stream {
			msg["content"], msg["stop_reason"] = []any{block}, stop
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(msg)
			return
		}
		rw.Header().Set("Content-Type", "text/event-stream")
		msg["content"] = []any{}
		sse(rw, "message_start", map[string]any{"type": "message_start", "message": msg})
		if t.Tool != nil {
			args, _ := json.Marshal(t.Tool.Arguments)
			sse(rw, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": t.Tool.ID, "name": t.Tool.Name, "input": map[string]any{}}})
			sse(rw, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
		} else {
			sse(rw, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(rw, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": t.Text}})
		}
		sse(rw, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse(rw, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": max(1, len(t.Text)/4)}})
		sse(rw, "message_stop", map[string]any{"type": "message_stop"})
	}))
	return w
}

// NewResponses starts a fake OpenAI Responses server (loopback).
func NewResponses() *Wire {
	w := &Wire{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := w.record(r)
		if err != nil {
			http.Error(rw, err.Error(), 400)
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/responses") {
			if strings.HasSuffix(r.URL.Path, "/models") {
				rw.Header().Set("Content-Type", "application/json")
				fmt.Fprint(rw, `{"object":"list","data":[],"models":[]}`)
				return
			}
			http.NotFound(rw, r)
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		json.Unmarshal(body, &req)
		t := w.answer(body)
		in := len(body) / 4
		if t.InputTokens > 0 {
			in = t.InputTokens
		}
		var item map[string]any
		if t.Tool != nil {
			args, _ := json.Marshal(t.Tool.Arguments)
			item = map[string]any{"type": "function_call", "id": "fc_" + t.Tool.ID, "call_id": t.Tool.ID, "name": t.Tool.Name, "arguments": string(args), "status": "completed"}
			if t.Tool.Namespace != "" {
				item["namespace"] = t.Tool.Namespace
			}
		} else {
			item = map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
		}
		rw.Header().Set("Content-Type", "text/event-stream")
		resp := map[string]any{"id": "resp_fake", "object": "response", "model": req.Model, "status": "in_progress", "output": []any{}}
		sse(rw, "response.created", map[string]any{"type": "response.created", "response": resp})
		sse(rw, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		if t.Tool == nil {
			sse(rw, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0, "content_index": 0, "delta": t.Text})
		}
		sse(rw, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
		resp["status"], resp["output"] = "completed", []any{item}
		resp["usage"] = map[string]any{"input_tokens": in, "output_tokens": max(1, len(t.Text)/4), "total_tokens": in + max(1, len(t.Text)/4),
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
		sse(rw, "response.completed", map[string]any{"type": "response.completed", "response": resp})
	}))
	return w
}
