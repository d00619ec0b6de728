package formats

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Claude Code transcripts (~/.claude/projects/<dir>/<uuid>.jsonl and
// <uuid>/subagents/agent-*.jsonl), as Claude Code 1.x–2.x writes them.
//
// The rules ctxtool applies — what Claude Code sends on its next request:
//
//   - Lines form a tree by uuid/parentUuid; the conversation is the path
//     from the last user/assistant line back to a root. Lines that are not
//     messages (progress, attachment, system, file-history-snapshot,
//     queue-operation, summary, custom-title, …) are links in that tree but
//     produce no message: they are not written to the pi view, and their
//     children hang off their nearest written ancestor.
//   - An assistant reply is written one line per content block, every line
//     repeating message.id and usage. The blocks of one message.id that
//     chain parent→child are one message (one pi assistant entry), and its
//     usage is counted once: the last block's record.
//   - Parallel tool calls: each tool_result line hangs off the block of
//     its own tool_use, so the plain parent walk would lose all but one of
//     them (anthropics/claude-code#31330). Every tool_result answering one
//     assistant message is chained after the previous one, which is the
//     request the agent actually sent.
//   - user lines: a string or text/image blocks → a pi user message;
//     tool_result blocks → pi toolResult messages (toolName from the
//     tool_use); isMeta lines are sent to the model and count.
//   - system/compact_boundary (parentUuid null, compactMetadata.preTokens)
//     starts a new root, and the isCompactSummary user line after it
//     becomes a pi compaction entry whose summary is that message's text:
//     the active context is the summary plus what follows.
//   - Synthetic assistant lines (model "<synthetic>", isApiErrorMessage:
//     Claude Code's own error notices) are not sent and are left out.
//   - Side-chain lines (isSidechain differing from the file's first
//     message) belong to another conversation and are left out. A parent
//     uuid that is not in the file (a subagent file's first lines point
//     into the main session) makes the line a root.
//   - Usage rule: a reply's context size is input_tokens +
//     cache_creation_input_tokens + cache_read_input_tokens (output is the
//     next message, not this request); it becomes the pi usage's
//     totalTokens, which every estimator reads as the context size.
//   - Sizes: pi's chars/4 rule per message (text, thinking, tool name +
//     JSON arguments; tool results text, images 4,800 chars).

type ccLine struct {
	Type             string     `json:"type"`
	Subtype          string     `json:"subtype"`
	UUID             string     `json:"uuid"`
	ParentUUID       *string    `json:"parentUuid"`
	IsSidechain      bool       `json:"isSidechain"`
	SessionID        string     `json:"sessionId"`
	Cwd              string     `json:"cwd"`
	Timestamp        string     `json:"timestamp"`
	IsCompactSummary bool       `json:"isCompactSummary"`
	IsAPIError       bool       `json:"isApiErrorMessage"`
	Message          *ccMessage `json:"message"`
	CompactMetadata  *struct {
		PreTokens int64 `json:"preTokens"`
	} `json:"compactMetadata"`
}

type ccMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      *ccUsage        `json:"usage"`
}

type ccUsage struct {
	Input         int64 `json:"input_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	Output        int64 `json:"output_tokens"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// ccUsageRule is Claude Code's context size of one reply.
func ccUsageRule(u *ccUsage) *usage {
	if u == nil {
		return nil
	}
	return &usage{input: u.Input, output: u.Output, cacheRead: u.CacheRead, cacheWrite: u.CacheCreation,
		total: u.Input + u.CacheCreation + u.CacheRead}
}

type ccGroup struct {
	e     entry
	msgID string
	row   int
}

type ccConv struct {
	v *view
	// alias maps a uuid that was not written (or was merged) to the pi id
	// its children hang off ("" = root).
	alias map[string]string
	// tip maps an assistant entry to the last tool result chained after it.
	tip map[string]string
	// names maps tool_use ids to tool names for the results.
	names map[string]string
	// written holds the uuids written as entries (a pending group's too).
	written map[string]struct{}
	pend    *ccGroup
	// side is the isSidechain value of the file's conversation (-1: not
	// seen yet).
	side      int8
	skipped   int
	preTokens int64
}

func newCCConv(v *view) *ccConv {
	return &ccConv{v: v, alias: map[string]string{}, tip: map[string]string{}, names: map[string]string{},
		written: map[string]struct{}{}, side: -1}
}

func (c *ccConv) resolve(p *string) string {
	if p == nil || *p == "" {
		return ""
	}
	if a, ok := c.alias[*p]; ok {
		return a
	}
	if _, ok := c.written[*p]; ok {
		return *p
	}
	// A parent that is not in this file: a subagent transcript's first
	// lines point into the main session. The conversation starts here.
	return ""
}

func (c *ccConv) line(no int, raw []byte) error {
	var l ccLine
	if err := json.Unmarshal(raw, &l); err != nil {
		c.v.malformed = append(c.v.malformed, Malformed{Line: no, Bytes: len(raw), Err: shortJSONErr(err)})
		return nil
	}
	v := c.v
	if v.sessionID == "" && l.SessionID != "" {
		v.sessionID = l.SessionID
	}
	if v.cwd == "" && l.Cwd != "" {
		v.cwd = l.Cwd
	}
	if v.started == "" && l.Timestamp != "" {
		v.started = isoMillis(l.Timestamp)
	}
	if l.UUID == "" {
		return nil // file-history-snapshot, queue-operation, summary: no tree node
	}
	side := int8(0)
	if l.IsSidechain {
		side = 1
	}
	if c.side < 0 && (l.Type == "user" || l.Type == "assistant") {
		c.side = side
	}
	if c.side >= 0 && side != c.side {
		c.skipped++
		return nil
	}
	switch {
	case l.Type == "assistant" && l.Message != nil:
		return c.assistant(no, &l)
	case l.Type == "user" && l.Message != nil:
		if err := c.flush(); err != nil {
			return err
		}
		return c.user(no, &l)
	case l.Type == "system" && l.Subtype == "compact_boundary":
		c.alias[l.UUID] = "" // a new root: what came before is summarised
		if l.CompactMetadata != nil {
			c.preTokens = l.CompactMetadata.PreTokens
		}
	default:
		c.alias[l.UUID] = c.resolve(l.ParentUUID)
	}
	return nil
}

func (c *ccConv) assistant(no int, l *ccLine) error {
	m := l.Message
	parent := c.resolve(l.ParentUUID)
	if m.Model == "<synthetic>" || l.IsAPIError {
		c.alias[l.UUID] = parent
		return nil
	}
	blocks := c.assistantBlocks(m.Content)
	if p := c.pend; p != nil && m.ID != "" && p.msgID == m.ID && parent == p.e.id {
		p.e.content = append(p.e.content, blocks...)
		c.alias[l.UUID] = p.e.id
		if u := ccUsageRule(m.Usage); u != nil {
			p.e.usage = u
		}
		if m.StopReason != nil {
			p.e.stopReason = *m.StopReason
		}
		return nil
	}
	if err := c.flush(); err != nil {
		return err
	}
	c.written[l.UUID] = struct{}{}
	g := &ccGroup{msgID: m.ID, row: no}
	g.e = entry{typ: "message", id: l.UUID, parent: parent, timestamp: isoMillis(l.Timestamp), role: "assistant",
		content: blocks, msgTime: epochMillis(l.Timestamp), api: "anthropic-messages", provider: "anthropic",
		model: m.Model, usage: ccUsageRule(m.Usage)}
	if m.StopReason != nil {
		g.e.stopReason = *m.StopReason
	}
	c.pend = g
	return nil
}

func (c *ccConv) assistantBlocks(raw json.RawMessage) []block {
	var out []block
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, block{kind: "text", text: s})
		}
		return out
	}
	var bs []ccBlock
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	for _, b := range bs {
		switch b.Type {
		case "text":
			out = append(out, block{kind: "text", text: b.Text})
		case "thinking":
			out = append(out, block{kind: "thinking", text: b.Thinking, sig: b.Signature})
		case "redacted_thinking":
			out = append(out, block{kind: "thinking", sig: b.Data, redacted: true})
		case "tool_use", "server_tool_use":
			c.names[b.ID] = b.Name
			out = append(out, block{kind: "toolCall", id: b.ID, name: b.Name, args: argsObject(b.Input)})
		}
	}
	return out
}

// flush writes the pending assistant message.
func (c *ccConv) flush() error {
	p := c.pend
	if p == nil {
		return nil
	}
	c.pend = nil
	p.e.stopReason = ccStopReason(p.e.stopReason, p.e.content)
	return c.v.emit(&p.e, p.row)
}

func ccStopReason(s string, content []block) string {
	for _, b := range content {
		if b.kind == "toolCall" {
			return "toolUse"
		}
	}
	if s == "max_tokens" {
		return "length"
	}
	return "stop"
}

func (c *ccConv) user(no int, l *ccLine) error {
	m := l.Message
	parent := c.resolve(l.ParentUUID)
	ts, ms := isoMillis(l.Timestamp), epochMillis(l.Timestamp)
	var out []entry
	if l.IsCompactSummary {
		summary := joinText(m.Content)
		out = append(out, entry{typ: "compaction", timestamp: ts, summary: summary, tokensBefore: c.preTokens})
	} else if len(m.Content) > 0 && m.Content[0] == '"' {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil
		}
		out = append(out, entry{typ: "message", role: "user", timestamp: ts, msgTime: ms, contentString: true,
			content: []block{{kind: "text", text: s}}})
	} else {
		var bs []ccBlock
		_ = json.Unmarshal(m.Content, &bs)
		var user []block
		for _, b := range bs {
			switch b.Type {
			case "tool_result":
				out = append(out, entry{typ: "message", role: "toolResult", timestamp: ts, msgTime: ms,
					toolCallID: b.ToolUseID, toolName: c.names[b.ToolUseID], isError: b.IsError,
					content: resultBlocks(b.Content)})
			case "text":
				user = append(user, block{kind: "text", text: b.Text})
			case "image":
				if b.Source != nil && b.Source.Type == "base64" {
					user = append(user, block{kind: "image", data: b.Source.Data, mime: b.Source.MediaType})
				}
			}
		}
		if len(user) > 0 || len(out) == 0 {
			out = append(out, entry{typ: "message", role: "user", timestamp: ts, msgTime: ms, content: user})
		}
	}
	answers := out[0].role == "toolResult"
	if t, ok := c.tip[parent]; ok && answers {
		parent = t // chain parallel results after the previous one
	}
	group := c.resolve(l.ParentUUID)
	c.written[l.UUID] = struct{}{}
	for i := range out {
		e := &out[i]
		e.id = l.UUID
		if i < len(out)-1 {
			e.id = fmt.Sprintf("%s#%d", l.UUID, i+1)
		}
		e.parent = parent
		parent = e.id
		if err := c.v.emit(e, no); err != nil {
			return err
		}
	}
	if answers {
		c.tip[group] = l.UUID
	}
	return nil
}

// resultBlocks converts tool_result content (a string or text/image
// blocks) to pi toolResult content.
func resultBlocks(raw json.RawMessage) []block {
	if len(raw) == 0 || string(raw) == "null" {
		return []block{{kind: "text", text: ""}}
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return []block{{kind: "text", text: s}}
	}
	var bs []ccBlock
	_ = json.Unmarshal(raw, &bs)
	var out []block
	for _, b := range bs {
		switch b.Type {
		case "text":
			out = append(out, block{kind: "text", text: b.Text})
		case "image":
			if b.Source != nil {
				out = append(out, block{kind: "image", data: b.Source.Data, mime: b.Source.MediaType})
			}
		}
	}
	if len(out) == 0 {
		out = []block{{kind: "text", text: ""}}
	}
	return out
}

// joinText is the text of a message content (a string, or its text
// blocks joined by newlines).
func joinText(raw json.RawMessage) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var bs []ccBlock
	_ = json.Unmarshal(raw, &bs)
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (c *ccConv) finish() error {
	if err := c.flush(); err != nil {
		return err
	}
	if c.skipped > 0 {
		c.v.notes = append(c.v.notes, fmt.Sprintf("%d side-chain lines (isSidechain) belong to another conversation and were left out", c.skipped))
	}
	return nil
}

func shortJSONErr(err error) string {
	s := err.Error()
	return strings.TrimPrefix(s, "json: ")
}
