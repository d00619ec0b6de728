package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Codex CLI rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl):
// {timestamp,type,payload} lines (session_meta, turn_context,
// response_item, event_msg, compacted), and the 2025 shape without the
// envelope (first line {id,timestamp,instructions}, then bare response
// items and {"record_type":"state"} lines).
//
// The rules ctxtool applies — what Codex sends as the next request's input:
//
//   - The conversation is the response_item records, in file order (the
//     event_msg records are echoes for the UI and are not read, except
//     token_count). One linear chain: Codex has no branches.
//   - message items: role user → pi user message (input_text, input_image);
//     role developer/system → a pi custom_message (sent as input like a
//     user message, customType "codex:<role>"); role assistant
//     (output_text) → assistant text. The session_meta instructions are
//     the system prompt and, like pi's, are not part of the message count.
//   - Consecutive assistant-side items (reasoning, assistant message,
//     function_call, custom_tool_call, local_shell_call) form one pi
//     assistant message; reasoning counts as thinking with its summary text
//     (encrypted_content is opaque and not counted).
//   - function_call (arguments: a JSON string) → toolCall with the parsed
//     object; custom_tool_call (free-form input) → {"input": input};
//     function_call_output / custom_tool_call_output → pi toolResult
//     (matched to its call by call_id).
//   - compacted: replacement_history replaces the history. It becomes a pi
//     compaction root (summary = payload.message, usually empty) followed by
//     the replacement items, so everything before it drops out of the
//     context. (An encrypted "compaction" item in the replacement history
//     is opaque and not counted.)
//   - Usage rule: event_msg/token_count info.last_token_usage is the last
//     request; its total_tokens is Codex's tokens_in_context_window and
//     becomes the pi usage's totalTokens on the assistant message of that
//     turn. info.model_context_window is the file's context window.
//   - web_search_call and other items are not messages (their size is in
//     the usage record).

type cxEnvelope struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type cxItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"` // reasoning: [{type, text}]; turn_context: a string
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     *string         `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	// envelope-less shape
	RecordType string `json:"record_type"`
	// session_meta / legacy first line
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ModelProvider string `json:"model_provider"`
	// turn_context
	Model string `json:"model"`
	// event_msg
	Info *struct {
		Last *struct {
			Input     int64 `json:"input_tokens"`
			Cached    int64 `json:"cached_input_tokens"`
			Output    int64 `json:"output_tokens"`
			Reasoning int64 `json:"reasoning_output_tokens"`
			Total     int64 `json:"total_tokens"`
		} `json:"last_token_usage"`
		Window int `json:"model_context_window"`
	} `json:"info"`
	Window int `json:"model_context_window"`
	// compacted
	Message     string   `json:"message"`
	Replacement []cxItem `json:"replacement_history"`
}

type cxText struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
}

type cxConv struct {
	v        *view
	legacy   bool
	provider string
	model    string
	shown    string // model announced by the last model_change
	last     string // id of the last written entry
	lastRow  int    // source line of the last written entry
	k        int    // entries written from lastRow
	// seg is the open turn segment: the assistant message being built and
	// the tool outputs that answer it, written when the next turn starts
	// (token_count records arrive after the outputs and belong to it).
	asst    *entry
	asstRow int
	outputs []pendingEntry
	names   map[string]string
	ts      string
	// nextUsage is a token_count waiting for the reply it measures.
	nextUsage *usage
}

type pendingEntry struct {
	e   entry
	row int
}

func newCodexConv(v *view, legacy bool) *cxConv {
	return &cxConv{v: v, legacy: legacy, provider: "openai", names: map[string]string{}}
}

func (c *cxConv) line(no int, raw []byte) error {
	var typ string
	ts := ""
	var it cxItem
	if c.legacy {
		if err := json.Unmarshal(raw, &it); err != nil {
			c.v.malformed = append(c.v.malformed, Malformed{Line: no, Bytes: len(raw), Err: shortJSONErr(err)})
			return nil
		}
	} else {
		if echo(raw) {
			return nil // an event_msg echo of what response_items hold
		}
		// One pass for envelope and payload; a payload of a shape this
		// reader does not know is skipped, only a broken line is malformed.
		var env struct {
			Timestamp string `json:"timestamp"`
			Type      string `json:"type"`
			Payload   cxItem `json:"payload"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			var outer cxEnvelope
			if err := json.Unmarshal(raw, &outer); err != nil {
				c.v.malformed = append(c.v.malformed, Malformed{Line: no, Bytes: len(raw), Err: shortJSONErr(err)})
			}
			return nil
		}
		typ, ts, it = env.Type, env.Timestamp, env.Payload
	}
	if ts != "" {
		c.ts = ts
	}
	if c.legacy {
		switch {
		case it.RecordType != "":
			return nil
		case it.Type == "" && it.ID != "":
			typ = "session_meta"
		default:
			typ = "response_item"
		}
		if it.Timestamp != "" {
			c.ts = it.Timestamp
		}
	}
	v := c.v
	switch typ {
	case "session_meta":
		if v.sessionID == "" {
			v.sessionID, v.cwd, v.started, v.headerRow = it.ID, it.Cwd, isoMillis(it.Timestamp), no
		}
		if it.ModelProvider != "" {
			c.provider = it.ModelProvider
		}
	case "turn_context":
		if it.Model != "" {
			c.model = it.Model
		}
	case "event_msg":
		c.event(&it)
	case "compacted":
		if err := c.flush(); err != nil {
			return err
		}
		comp := entry{typ: "compaction", summary: it.Message}
		if err := c.put(&comp, no, true); err != nil {
			return err
		}
		for i := range it.Replacement {
			if err := c.item(&it.Replacement[i], no); err != nil {
				return err
			}
		}
		return c.flush()
	case "response_item":
		return c.item(&it, no)
	}
	return nil
}

// echo reports an event_msg line other than token_count and task_started
// from its first bytes, so the UI echoes (half a rollout's bytes) are not
// decoded at all.
func echo(raw []byte) bool {
	head := raw[:min(len(raw), 160)]
	i := bytes.Index(head, []byte(`"type":"event_msg","payload":{"type":"`))
	if i < 0 {
		return false
	}
	rest := head[i+len(`"type":"event_msg","payload":{"type":"`):]
	return !bytes.HasPrefix(rest, []byte(`token_count"`)) && !bytes.HasPrefix(rest, []byte(`task_started"`))
}

func (c *cxConv) event(it *cxItem) {
	switch it.Type {
	case "token_count":
		if it.Info == nil {
			return
		}
		if it.Info.Window > 0 {
			c.v.window = it.Info.Window
		}
		if l := it.Info.Last; l != nil {
			u := &usage{input: l.Input - l.Cached, output: l.Output, cacheRead: l.Cached, total: l.Total}
			// Codex ≥ 0.4x records token_count right after the reply's items;
			// 0.3x records it just before them. A record that finds a reply
			// still unanswered belongs to it, any other to the next reply.
			if c.asst != nil && len(c.outputs) == 0 {
				c.asst.usage, c.nextUsage = u, nil
			} else {
				c.nextUsage = u
			}
		}
	case "task_started":
		if it.Window > 0 {
			c.v.window = it.Window
		}
	}
}

func (c *cxConv) item(it *cxItem, no int) error {
	switch it.Type {
	case "message":
		switch it.Role {
		case "assistant":
			c.assistant(no).content = append(c.assistant(no).content, cxBlocks(it.Content)...)
			return nil
		case "user":
			if err := c.flush(); err != nil {
				return err
			}
			return c.put(&entry{typ: "message", role: "user", content: cxBlocks(it.Content)}, no, false)
		default: // developer, system
			if err := c.flush(); err != nil {
				return err
			}
			return c.put(&entry{typ: "custom_message", customType: "codex:" + it.Role, content: cxBlocks(it.Content)}, no, false)
		}
	case "reasoning":
		var summary []cxText
		_ = json.Unmarshal(it.Summary, &summary)
		var parts []string
		for _, s := range summary {
			parts = append(parts, s.Text)
		}
		a := c.assistant(no)
		a.content = append(a.content, block{kind: "thinking", text: strings.Join(parts, "\n\n")})
	case "function_call":
		c.call(no, it.CallID, it.Name, argsFromString(rawString(it.Arguments)))
	case "custom_tool_call":
		in := ""
		if it.Input != nil {
			in = *it.Input
		}
		var w jsonw
		w.firstKey("input")
		w.str(in)
		w.raw("}")
		c.call(no, it.CallID, it.Name, w.b)
	case "local_shell_call":
		c.call(no, it.CallID, "local_shell", argsObject(it.Action))
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		if c.asst == nil {
			// An output with no call in this segment: still context.
			if err := c.flush(); err != nil {
				return err
			}
		}
		text, isErr := cxOutput(it.Output)
		c.outputs = append(c.outputs, pendingEntry{row: no, e: entry{typ: "message", role: "toolResult",
			toolCallID: it.CallID, toolName: c.names[it.CallID], isError: isErr,
			content: []block{{kind: "text", text: text}}}})
		if c.asst == nil {
			return c.flush()
		}
	}
	return nil
}

func (c *cxConv) call(no int, id, name string, args []byte) {
	c.names[id] = name
	a := c.assistant(no)
	a.content = append(a.content, block{kind: "toolCall", id: id, name: name, args: args})
}

// assistant returns the open assistant message, starting one (and
// writing the previous segment) when tool outputs already answered it.
func (c *cxConv) assistant(no int) *entry {
	if c.asst != nil && len(c.outputs) > 0 {
		_ = c.flush()
	}
	if c.asst == nil {
		c.asst = &entry{typ: "message", role: "assistant", api: "openai-responses", provider: c.provider, model: c.model,
			usage: c.nextUsage}
		c.asstRow, c.nextUsage = no, nil
	}
	return c.asst
}

// flush writes the open segment: the assistant message, then its outputs.
func (c *cxConv) flush() error {
	if a := c.asst; a != nil {
		c.asst = nil
		if c.model != c.shown && c.model != "" {
			c.shown = c.model
			mc := entry{typ: "model_change", provider: c.provider, model: c.model}
			if err := c.put(&mc, c.asstRow, false); err != nil {
				return err
			}
		}
		a.model = c.model
		a.stopReason = "stop"
		for _, b := range a.content {
			if b.kind == "toolCall" {
				a.stopReason = "toolUse"
			}
		}
		if err := c.put(a, c.asstRow, false); err != nil {
			return err
		}
	}
	outs := c.outputs
	c.outputs = c.outputs[:0]
	for i := range outs {
		if err := c.put(&outs[i].e, outs[i].row, false); err != nil {
			return err
		}
	}
	return nil
}

// put writes an entry chained after the last one (root when asked).
func (c *cxConv) put(e *entry, row int, root bool) error {
	if row == c.lastRow {
		c.k++
	} else {
		c.lastRow, c.k = row, 1
	}
	e.id = "L" + strconv.Itoa(row)
	if c.k > 1 {
		e.id = fmt.Sprintf("L%d.%d", row, c.k)
	}
	if !root {
		e.parent = c.last
	}
	e.timestamp = isoMillis(c.ts)
	e.msgTime = epochMillis(c.ts)
	c.last = e.id
	return c.v.emit(e, row)
}

func (c *cxConv) finish() error { return c.flush() }

// cxBlocks converts message content (input_text/output_text/input_image
// items, or a plain string) to pi blocks.
func cxBlocks(raw json.RawMessage) []block {
	if len(raw) > 0 && raw[0] == '"' {
		return []block{{kind: "text", text: rawString(raw)}}
	}
	var items []cxText
	_ = json.Unmarshal(raw, &items)
	var out []block
	for _, t := range items {
		switch t.Type {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			out = append(out, block{kind: "text", text: t.Text})
		case "input_image":
			if mime, data, ok := dataURL(t.ImageURL); ok {
				out = append(out, block{kind: "image", data: data, mime: mime})
			}
		}
	}
	return out
}

func dataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, _, _ = strings.Cut(meta, ";")
	return mime, data, true
}

// cxOutput is a tool output's text: a plain string, content items, or an
// object {content, success}.
func cxOutput(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		return rawString(raw), false
	case '[':
		var b strings.Builder
		for _, blk := range cxBlocks(raw) {
			b.WriteString(blk.text)
		}
		return b.String(), false
	case '{':
		var o struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		_ = json.Unmarshal(raw, &o)
		text, _ := cxOutput(o.Content)
		return text, o.Success != nil && !*o.Success
	}
	return string(raw), false
}

func rawString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] != '"' {
		return string(raw)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return string(raw)
	}
	return s
}
