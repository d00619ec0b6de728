package claudecode

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
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
//     request the agent actually sent. A result can also be written
//     between two blocks of one message.id (Claude Code runs a tool while
//     the model streams the next block): it is held until the message is
//     complete, so the message keeps all its calls and the results follow
//     it in order.
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

// ccLine is what the converter reads from one line. decodeCC needs no
// state, so lines are decoded on every core; the converter then applies
// them in file order. Byte slices alias the line.
type ccLine struct {
	// bad says why the line is malformed ("" when it is not).
	bad  string
	size int
	// raw is the line's length (held lines are bounded by it).
	raw            int
	typ, subtype   string
	uuid           conv.Str // a string only once written (write)
	parent         conv.Str // looked up, never kept: not made a string
	sidechain      bool
	sessionID, cwd conv.Str // read once per file: not made strings per line
	// timestamp is as written; ts is pi's form of it, made a string only
	// where an entry takes it (a user line's, a message's first block's,
	// see time): most lines' (progress, further blocks) go unused. ms is
	// the epoch milliseconds.
	timestamp conv.Str
	ts        string
	ms        int64
	// tsAsIs: ts is timestamp's text, already in pi's form.
	tsAsIs bool

	compactSummary, apiError bool
	message                  bool // a message object is present
	// msgID and model alias the line: compared, and the model made a
	// string only when it changes (see ccConv.modelName), not one of each
	// per line.
	msgID, model conv.Str
	stopReason   *string
	usage        conv.Usage
	hasUsage     bool
	hasMeta      bool
	autoCompact  bool // compactMetadata.trigger "auto"
	preTokens    int64
	// Prepared content: an assistant line's blocks; a user line's entries
	// (ids, parents and tool names are the converter's).
	blocks []conv.Part
	out    []conv.Entry
	// rendered is an attachment's rendered content: the text Claude Code
	// sends the model for it (2.1.3xx).
	rendered []conv.Str
}

// ccContent is a message content: a string or blocks.
type ccContent struct {
	kind   byte // 0 absent or null, 's' string, 'a' array, 'x' anything else
	str    conv.Str
	blocks []ccBlock
	// TypeErr: encoding/json would fail decoding it as blocks (it still
	// fills what it can, and some rules keep that part).
	typeErr bool
}

type ccBlock struct {
	typ                             string
	text, thinking, signature, data conv.Str
	id, name, toolUseID             string
	input                           []byte
	inputCompact                    bool
	content                         *ccContent // tool_result
	isError                         bool
	source                          *ccSource
}

type ccSource struct {
	typ, mediaType string
	data           conv.Str
}

// ccDec is the decoder with Claude Code's record shapes as methods.
type ccDec struct{ conv.Dec }

var _ conv.BatchConv[ccLine] = (*ccConv)(nil)

// ccScratch holds the decoded content of a line while decodeCC converts
// it: one per worker at a time, so the blocks of a gigabyte are not
// allocated line by line.
var ccScratch = sync.Pool{New: func() any { return new(ccContent) }}

// decodeCC decodes one line into l, which is zero but for the capacity
// of its blocks and entries.
func decodeCC(raw []byte, l *ccLine) {
	d := &ccDec{*conv.NewDec(raw)}
	content := ccScratch.Get().(*ccContent)
	defer ccScratch.Put(content)
	*content = ccContent{blocks: content.blocks[:0]}
	if d.Obj("") {
		for k, ok := d.Key(); ok; k, ok = d.Key() {
			switch string(k) {
			case "type":
				l.typ = d.Name("type")
			case "subtype":
				l.subtype = d.Name("subtype")
			case "uuid":
				l.uuid = d.Text("uuid")
			case "parentUuid":
				l.parent = d.Text("parentUuid")
			case "isSidechain":
				l.sidechain = d.Bool("isSidechain")
			case "sessionId":
				l.sessionID = d.Text("sessionId")
			case "cwd":
				l.cwd = d.Text("cwd")
			case "timestamp":
				l.timestamp = d.Text("timestamp")
			case "isCompactSummary":
				l.compactSummary = d.Bool("isCompactSummary")
			case "isApiErrorMessage":
				l.apiError = d.Bool("isApiErrorMessage")
			case "message":
				if d.Obj("message") {
					l.message = true
					d.ccMessage(l, content)
				}
			case "rendered":
				l.rendered = d.ccRendered(l.rendered[:0])
			case "compactMetadata":
				if d.Obj("compactMetadata") {
					l.hasMeta = true
					for k, ok := d.Key(); ok; k, ok = d.Key() {
						switch string(k) {
						case "preTokens":
							l.preTokens = d.Int("preTokens")
						case "trigger":
							l.autoCompact = d.Name("trigger") == "auto"
						default:
							d.Skip()
						}
					}
				}
			default:
				d.Skip()
			}
		}
	}
	d.End()
	if d.Bad || d.TypeErr != "" {
		*l = ccLine{bad: d.ErrText(), size: len(raw)}
		return
	}
	if !l.timestamp.Empty() {
		// What PiTime gives, the string left unmade when it is the line's
		// own text (PiForm's argument is a copy on the stack: it does not
		// escape). PiForm takes only ASCII digits and separators.
		if !l.timestamp.Esc {
			l.ms, l.tsAsIs = conv.PiForm(string(l.timestamp.Raw()))
		}
		if !l.tsAsIs {
			l.ts, l.ms = conv.PiTime(l.timestamp.String())
		}
		if l.typ == "user" {
			l.time() // its entries are made here
		}
	}
	if !l.uuid.Empty() && l.message {
		switch l.typ {
		case "assistant":
			if !l.model.Is("<synthetic>") && !l.apiError {
				l.blocks = ccAssistantBlocks(l.blocks, content)
			}
		case "user":
			l.out = ccUserEntries(l.out, l, content)
		}
	}
	if l.typ == "attachment" && len(l.rendered) > 0 && !l.uuid.Empty() {
		var text []conv.Part
		for _, r := range l.rendered {
			text = append(text, conv.Part{Kind: "text", Text: r.Text()})
		}
		l.out = append(l.out, conv.Entry{Typ: "custom_message", CustomType: "claude-code:attachment", Timestamp: l.time(), MsgTime: l.ms, Content: text})
	}
}

// ccRendered reads an attachment's "rendered" value, [{"content":
// "…"}, …], into out: the strings only (anything else is skipped, not
// an error: the record is Claude Code's own, its shape may grow).
func (d *ccDec) ccRendered(out []conv.Str) []conv.Str {
	if d.PeekByte() != '[' {
		d.Skip()
		return out
	}
	d.Arr("rendered")
	for d.Next() {
		if d.PeekByte() != '{' {
			d.Skip()
			continue
		}
		d.Obj("rendered")
		for k, ok := d.Key(); ok; k, ok = d.Key() {
			if string(k) == "content" && d.PeekByte() == '"' {
				if s := d.Str(); !s.Empty() {
					out = append(out, s)
				}
				continue
			}
			d.Skip()
		}
	}
	return out
}

// time is pi's form of the line's timestamp ("" when it has none).
func (l *ccLine) time() string {
	if l.tsAsIs && l.ts == "" {
		l.ts = string(l.timestamp.Raw())
	}
	return l.ts
}

// ccMessage decodes the message object obj entered.
func (d *ccDec) ccMessage(l *ccLine, content *ccContent) {
	for k, ok := d.Key(); ok; k, ok = d.Key() {
		switch string(k) {
		case "id":
			l.msgID = d.Text("id")
		case "role":
			d.Text("role")
		case "model":
			l.model = d.Text("model")
		case "content":
			d.ccContentInto(content)
		case "stop_reason":
			l.stopReason = d.OptString("stop_reason")
		case "usage":
			l.hasUsage = false
			if !d.Obj("usage") {
				continue
			}
			var in, creation, read, out int64
			for k, ok := d.Key(); ok; k, ok = d.Key() {
				switch string(k) {
				case "input_tokens":
					in = d.Int("input_tokens")
				case "cache_creation_input_tokens":
					creation = d.Int("cache_creation_input_tokens")
				case "cache_read_input_tokens":
					read = d.Int("cache_read_input_tokens")
				case "output_tokens":
					out = d.Int("output_tokens")
				default:
					d.Skip()
				}
			}
			// Claude Code's context size of one reply.
			l.usage = conv.Usage{Input: in, Output: out, CacheRead: read, CacheWrite: creation, Total: in + creation + read}
			l.hasUsage = true
		default:
			d.Skip()
		}
	}
}

// ccContent decodes a content value.
func (d *ccDec) ccContent() ccContent {
	var c ccContent
	d.ccContentInto(&c)
	return c
}

// ccContentInto decodes a content value into c, whose blocks' array it
// reuses.
func (d *ccDec) ccContentInto(c *ccContent) {
	saved := d.TypeErr
	d.TypeErr = ""
	*c = ccContent{blocks: c.blocks[:0]}
	switch d.PeekByte() {
	case '"':
		c.kind, c.str = 's', d.Str()
	case 'n':
		d.Skip()
	case '[':
		c.kind = 'a'
		d.Arr("")
		for d.Next() {
			c.blocks = append(c.blocks, d.ccBlock())
		}
	default:
		c.kind = 'x'
		d.Mismatch("content", "an array")
		d.Skip()
	}
	c.typeErr = d.TypeErr != ""
	d.TypeErr = saved
}

func (d *ccDec) ccBlock() ccBlock {
	var b ccBlock
	if !d.Obj("content") {
		return b
	}
	for k, ok := d.Key(); ok; k, ok = d.Key() {
		switch string(k) {
		case "type":
			b.typ = d.Name("type")
		case "text":
			b.text = d.Text("text")
		case "thinking":
			b.thinking = d.Text("thinking")
		case "signature":
			b.signature = d.Text("signature")
		case "data":
			b.data = d.Text("data")
		case "id":
			b.id = d.String("id")
		case "name":
			b.name = d.Name("name")
		case "tool_use_id":
			b.toolUseID = d.String("tool_use_id")
		case "input":
			b.input, b.inputCompact = d.Raw()
		case "content":
			c := d.ccContent()
			b.content = &c
		case "is_error":
			b.isError = d.Bool("is_error")
		case "source":
			switch d.PeekByte() {
			case 'n':
				d.Skip()
				b.source = nil
				continue
			case '{':
			default:
				b.source = &ccSource{} // encoding/json allocates before failing
			}
			if !d.Obj("source") {
				continue
			}
			b.source = &ccSource{}
			for k, ok := d.Key(); ok; k, ok = d.Key() {
				switch string(k) {
				case "type":
					b.source.typ = d.Name("type")
				case "media_type":
					b.source.mediaType = d.Name("media_type")
				case "data":
					b.source.data = d.Text("data")
				default:
					d.Skip()
				}
			}
		default:
			d.Skip()
		}
	}
	return b
}

// ccAssistantBlocks appends an assistant line's content, converted, to out.
func ccAssistantBlocks(out []conv.Part, c *ccContent) []conv.Part {
	switch {
	case c.kind == 's':
		return append(out, conv.Part{Kind: "text", Text: c.str.Text()})
	case c.typeErr:
		return out // encoding/json failed on it: nothing was kept
	}
	for i := range c.blocks {
		b := &c.blocks[i]
		switch b.typ {
		case "text":
			out = append(out, conv.Part{Kind: "text", Text: b.text.Text()})
		case "thinking":
			out = append(out, conv.Part{Kind: "thinking", Text: b.thinking.Text(), Sig: b.signature.JSONOrNil()})
		case "redacted_thinking":
			out = append(out, conv.Part{Kind: "thinking", Sig: b.data.JSONOrNil(), Redacted: true})
		case "tool_use", "server_tool_use":
			out = append(out, conv.Part{Kind: "toolCall", ID: b.id, Name: b.name, Args: conv.CompactArgs(b.input, b.inputCompact)})
		}
	}
	return out
}

// ccUserEntries appends to out the entries of a user line's content: a
// compaction summary, a user message, or tool results followed by the
// user text they came with.
func ccUserEntries(out []conv.Entry, l *ccLine, c *ccContent) []conv.Entry {
	switch {
	case l.compactSummary:
		out = append(out, conv.Entry{Typ: "compaction", Timestamp: l.ts, Summary: joinText(c), TokensBefore: -1})
	case c.kind == 's':
		out = append(out, conv.Entry{Typ: "message", Role: "user", Timestamp: l.ts, MsgTime: l.ms, ContentString: true,
			Content: []conv.Part{{Kind: "text", Text: c.str.Text()}}})
	default:
		var user []conv.Part
		for i := range c.blocks {
			b := &c.blocks[i]
			switch b.typ {
			case "tool_result":
				out = append(out, conv.Entry{Typ: "message", Role: "toolResult", Timestamp: l.ts, MsgTime: l.ms,
					ToolCallID: b.toolUseID, IsError: b.isError, Content: resultBlocks(b.content)})
			case "text":
				user = append(user, conv.Part{Kind: "text", Text: b.text.Text()})
			case "image":
				if b.source != nil && b.source.typ == "base64" {
					user = append(user, conv.Part{Kind: "image", Data: b.source.data.JSON(), Mime: conv.JSONString(b.source.mediaType)})
				}
			}
		}
		if len(user) > 0 || len(out) == 0 {
			out = append(out, conv.Entry{Typ: "message", Role: "user", Timestamp: l.ts, MsgTime: l.ms, Content: user})
		}
	}
	return out
}

// resultBlocks converts tool_result content (a string or text/image
// blocks) to pi toolResult content.
func resultBlocks(c *ccContent) []conv.Part {
	if c == nil || c.kind == 0 {
		return []conv.Part{{Kind: "text"}}
	}
	if c.kind == 's' {
		return []conv.Part{{Kind: "text", Text: c.str.Text()}}
	}
	var out []conv.Part
	for i := range c.blocks {
		b := &c.blocks[i]
		switch b.typ {
		case "text":
			out = append(out, conv.Part{Kind: "text", Text: b.text.Text()})
		case "image":
			if b.source != nil {
				out = append(out, conv.Part{Kind: "image", Data: b.source.data.JSON(), Mime: conv.JSONString(b.source.mediaType)})
			}
		}
	}
	if len(out) == 0 {
		out = []conv.Part{{Kind: "text"}}
	}
	return out
}

// joinText is the text of a message content as a JSON string: a string,
// or its text blocks joined by newlines.
func joinText(c *ccContent) []byte {
	if c.kind == 's' {
		return c.str.JSON()
	}
	return conv.JoinJSON(len(c.blocks), func(i int) (conv.Str, bool) { return c.blocks[i].text, c.blocks[i].typ == "text" }, `\n`).B
}

type ccGroup struct {
	e     conv.Entry
	id    int32    // e.id's number
	msgID conv.Str // in a line the converter holds
	row   int
	usage conv.Usage // e.usage points here when the message has one
}

type heldLine struct {
	no int
	l  *ccLine
	id int32 // its uuid's
}

// A pi id the converter links to (a written uuid, or "" for a root) is a
// number, ids[n], and what it knows of each uuid is one ccNode: a million
// lines' links cost a map of fixed-size keys and small values, which the
// collector never scans, instead of four maps of strings.
type ccNode struct {
	// alias is 1 + the id the children of a uuid that was not written (or
	// was merged) hang off; 0: none.
	alias int32
	// self is the uuid's own id once written (a pending group's or a held
	// result's too); 0: not written.
	self int32
	// tip is, for a written assistant message, the id of the last tool
	// result chained after it (0: none). Kept here, at the message's
	// position, a recent one: a map of them was a lookup out of the cache
	// for every tool result (3% of the reading).
	tip int32
}

type ccConv struct {
	v     *conv.Emitter
	nodes conv.UUIDMap[ccNode]
	// Id n > 0 is the uuid at position n-1 of nodes, whose key is its 16
	// bytes: a slice of the written ids' keys besides was a copy of them,
	// 16 MB at 1 GB and grown by copying. texts[n] is the text of an id
	// that is not a canonical UUID as the line spells it; id 0 is "", a
	// root.
	texts map[int32]string
	// rootTip is ccNode.tip for the root, id 0.
	rootTip int32
	// names maps tool_use ids to tool names for the results.
	names conv.ToolNames
	pend  *ccGroup // &group or nil
	group ccGroup
	// held are tool-result lines answering the pending assistant message
	// while it may still grow: Claude Code runs a tool while the model
	// streams the next block of the same message, so a result can be
	// written between two blocks of one message.id.
	held []heldLine
	// side is the isSidechain value of the file's conversation (-1: not
	// seen yet).
	side      int8
	skipped   int
	preTokens int64
	// autoAt is the largest context Claude Code compacted automatically
	// at (compactMetadata.preTokens of trigger "auto"): evidence of the
	// window it ran with.
	autoAt int64
	// modelQ is the JSON string model was made from.
	modelQ []byte
	model  string

	// Lines whose parent comes later in the file (Claude Code ≥ 2.1.1xx
	// writes a tool result before its tool call) wait for it: wait maps
	// the parent's uuid to them, waiting lists them in file order.
	// linewise: a LineConverter's, which translates each line as it comes
	// (recall cites source lines) and never waits.
	linewise  bool
	wait      map[string][]*waitLine
	waiting   []*waitLine
	waitN     int
	waitBytes int
	// unknown counts the records of types Claude Code did not write when
	// this reader was made, by type.
	unknown map[string]int
}

type waitLine struct {
	no   int
	l    *ccLine
	done bool
}

// maxWait bounds the bytes of the lines waiting for a later parent; past
// it the oldest is taken as a root (a parent that is not in the file: a
// subagent transcript's first lines point into the main session).
var maxWait = 64 << 20

func newCCConv(v *conv.Emitter) *ccConv {
	return &ccConv{v: v, texts: map[int32]string{}, names: conv.NewToolNames(), side: -1}
}

func (c *ccConv) Decode(raw []byte, l *ccLine) {
	*l = ccLine{blocks: l.blocks[:0], out: l.out[:0]}
	decodeCC(raw, l)
	l.raw = len(raw)
}

func (c *ccConv) Line(no int, raw []byte) error {
	l := new(ccLine) // it may wait for its parent
	decodeCC(raw, l)
	l.raw = len(raw)
	return c.Apply(no, l)
}

// Holds: the pending message, the held results and the lines waiting for
// their parent point into their lines.
func (c *ccConv) Holds() bool { return c.pend != nil || len(c.held) > 0 || c.waitN > 0 }

// resolve is the id the children of uuid p hang off.
func (c *ccConv) resolve(p conv.Str) int32 {
	if p.Empty() {
		return 0
	}
	n := c.nodes.FindJSON(p)
	switch {
	case n == nil:
		// A parent that is not in this file: a subagent transcript's first
		// lines point into the main session. The conversation starts here.
		return 0
	case n.alias > 0:
		return n.alias - 1
	}
	return n.self
}

// alias makes the children of uuid hang off id.
func (c *ccConv) alias(uuid conv.Str, id int32) { c.nodes.AtJSON(uuid).alias = id + 1 }

// write registers uuid as written and returns its id.
func (c *ccConv) write(uuid conv.Str) int32 {
	n := c.nodes.AtJSON(uuid)
	if n.self == 0 {
		n.self = c.nodes.LastAt + 1
		// AtJSON packed it (LastPacked) only if it is canonical; as the
		// line spells it, too: an escaped one keeps its text.
		if uuid.Esc || !uuid.Canon || !c.nodes.LastPacked {
			c.texts[n.self] = uuid.String()
		}
	}
	return n.self
}

// tip is where the tip of id n is kept (see ccNode.tip).
func (c *ccConv) tip(n int32) *int32 {
	if n == 0 {
		return &c.rootTip
	}
	return &c.nodes.T.Val(n - 1).tip
}

// id is id n: its 16 bytes, or its text when it is not a canonical UUID.
func (c *ccConv) id(n int32) conv.Pid {
	if n == 0 {
		return conv.Pid{}
	}
	if len(c.texts) > 0 {
		if s, ok := c.texts[n]; ok {
			return conv.TextID(s)
		}
	}
	return conv.Pid{Key: *c.nodes.T.Key(n - 1), UUID: true}
}

// Apply follows the tree, not the file: a line whose parent is not known
// yet waits for it, and applying a line wakes the lines waiting for it.
func (c *ccConv) Apply(no int, l *ccLine) error {
	if !c.linewise && l.bad == "" && !l.parent.Empty() && !l.uuid.Empty() && c.nodes.FindJSON(l.parent) == nil {
		w := &waitLine{no: no, l: l}
		if c.wait == nil {
			c.wait = map[string][]*waitLine{}
		}
		k := l.parent.String()
		c.wait[k] = append(c.wait[k], w)
		c.waiting = append(c.waiting, w)
		c.waitN++
		c.waitBytes += l.raw
		for c.waitBytes > maxWait {
			if err := c.release(c.oldestWaiting()); err != nil {
				return err
			}
		}
		return nil
	}
	if err := c.applyNow(no, l); err != nil {
		return err
	}
	if c.waitN > 0 && !l.uuid.Empty() {
		return c.wake(l.uuid.String())
	}
	return nil
}

// oldestWaiting is the first waiting line in file order.
func (c *ccConv) oldestWaiting() *waitLine {
	for len(c.waiting) > 0 && c.waiting[0].done {
		c.waiting = c.waiting[1:]
	}
	return c.waiting[0]
}

// release applies a waiting line whose parent did not come (it becomes a
// root, as a parent outside the file does) and what waits for it.
func (c *ccConv) release(w *waitLine) error {
	c.take(w)
	if err := c.applyNow(w.no, w.l); err != nil {
		return err
	}
	return c.wake(w.l.uuid.String())
}

func (c *ccConv) take(w *waitLine) {
	w.done = true
	c.waitN--
	c.waitBytes -= w.l.raw
}

// wake applies the lines waiting for uuid, then those waiting for them,
// always the earliest in the file first.
func (c *ccConv) wake(uuid string) error {
	ready := c.wait[uuid]
	delete(c.wait, uuid)
	for len(ready) > 0 {
		i := 0
		for j := range ready {
			if ready[j].no < ready[i].no {
				i = j
			}
		}
		w := ready[i]
		ready = append(ready[:i], ready[i+1:]...)
		if w.done {
			continue
		}
		c.take(w)
		if err := c.applyNow(w.no, w.l); err != nil {
			return err
		}
		k := w.l.uuid.String()
		ready = append(ready, c.wait[k]...)
		delete(c.wait, k)
	}
	return nil
}

func (c *ccConv) applyNow(no int, l *ccLine) error {
	v := c.v
	if l.bad != "" {
		v.Malformed = append(v.Malformed, conv.Malformed{Line: no, Bytes: l.size, Err: l.bad})
		return nil
	}
	if v.SessionID == "" && !l.sessionID.Empty() {
		v.SessionID = l.sessionID.String()
	}
	if v.Cwd == "" && !l.cwd.Empty() {
		v.Cwd = l.cwd.String()
	}
	if v.Started == "" && !l.timestamp.Empty() {
		v.Started = l.time()
	}
	if !RecordTypes[l.typ] {
		if c.unknown == nil {
			c.unknown = map[string]int{}
		}
		c.unknown[l.typ]++
	}
	if l.uuid.Empty() {
		return nil // file-history-snapshot, queue-operation, summary: no tree node
	}
	side := int8(0)
	if l.sidechain {
		side = 1
	}
	if c.side < 0 && (l.typ == "user" || l.typ == "assistant") {
		c.side = side
	}
	if c.side >= 0 && side != c.side {
		c.skipped++
		c.alias(l.uuid, 0) // known: a main-chain line after it does not wait for it
		return nil
	}
	switch {
	case l.typ == "assistant" && l.message:
		return c.assistant(no, l)
	case l.typ == "user" && l.message:
		if p := c.pend; p != nil && len(l.out) > 0 && l.out[0].Role == "toolResult" && c.resolve(l.parent) == p.id {
			c.held = append(c.held, heldLine{no, l, c.write(l.uuid)})
			return nil
		}
		if err := c.Flush(); err != nil {
			return err
		}
		return c.user(no, l)
	case l.typ == "attachment" && len(l.out) > 0:
		// Rendered attachments: sent to the model where they hang.
		if err := c.Flush(); err != nil {
			return err
		}
		return c.user(no, l)
	case l.typ == "system" && l.subtype == "compact_boundary":
		c.alias(l.uuid, 0) // a new root: what came before is summarised
		if l.hasMeta {
			c.preTokens = l.preTokens
			if l.autoCompact && l.preTokens > c.autoAt {
				c.autoAt = l.preTokens
			}
		}
	default:
		c.alias(l.uuid, c.resolve(l.parent))
	}
	return nil
}

func (c *ccConv) assistant(no int, l *ccLine) error {
	parent := c.resolve(l.parent)
	if l.model.Is("<synthetic>") || l.apiError {
		c.alias(l.uuid, parent)
		return nil
	}
	for _, b := range l.blocks {
		if b.Kind == "toolCall" {
			c.names.Set(b.ID, b.Name)
		}
	}
	if p := c.pend; p != nil && !l.msgID.Empty() && p.msgID.Equal(l.msgID) && (parent == p.id || c.isHeld(parent)) {
		p.e.Content = append(p.e.Content, l.blocks...)
		c.alias(l.uuid, p.id)
		if l.hasUsage {
			p.usage, p.e.Usage = l.usage, &p.usage
		}
		if l.stopReason != nil {
			p.e.StopReason = *l.stopReason
		}
		return nil
	}
	if err := c.Flush(); err != nil {
		return err
	}
	// One group at a time: its struct and content buffer serve the next.
	g := &c.group
	content := append(g.e.Content[:0], l.blocks...)
	*g = ccGroup{id: c.write(l.uuid), msgID: l.msgID, row: no}
	g.e = conv.Entry{Typ: "message", ID: c.id(g.id), Parent: c.id(parent), Timestamp: l.time(), Role: "assistant",
		Content: content, MsgTime: l.ms, API: "anthropic-messages", Provider: "anthropic",
		Model: c.modelName(l.model)}
	if l.hasUsage {
		g.usage, g.e.Usage = l.usage, &g.usage
	}
	if l.stopReason != nil {
		g.e.StopReason = *l.stopReason
	}
	c.pend = g
	return nil
}

// modelName is model as a string: the last one again while the model
// stays the same.
func (c *ccConv) modelName(model conv.Str) string {
	if !bytes.Equal(model.Q, c.modelQ) {
		c.modelQ, c.model = append(c.modelQ[:0], model.Q...), model.String()
	}
	return c.model
}

// isHeld reports whether id is a held tool-result line's.
func (c *ccConv) isHeld(id int32) bool {
	for _, h := range c.held {
		if h.id == id {
			return true
		}
	}
	return false
}

// Flush writes the pending assistant message, then the tool results held
// for it (chained one after the other, as the next request sends them).
func (c *ccConv) Flush() error {
	p := c.pend
	if p == nil {
		return nil
	}
	c.pend = nil
	p.e.StopReason = ccStopReason(p.e.StopReason, p.e.Content)
	if err := c.v.Emit(&p.e, p.row); err != nil {
		return err
	}
	held := c.held
	c.held = nil
	for _, h := range held {
		if err := c.user(h.no, h.l); err != nil {
			return err
		}
	}
	return nil
}

func ccStopReason(s string, content []conv.Part) string {
	for _, b := range content {
		if b.Kind == "toolCall" {
			return "toolUse"
		}
	}
	if s == "max_tokens" {
		return "length"
	}
	return "stop"
}

func (c *ccConv) user(no int, l *ccLine) error {
	group := c.resolve(l.parent)
	out := l.out
	answers := out[0].Role == "toolResult"
	parent := c.id(group)
	if t := *c.tip(group); t != 0 && answers {
		parent = c.id(t) // chain parallel results after the previous one
	}
	self := c.write(l.uuid)
	for i := range out {
		e := &out[i]
		switch {
		case e.Typ == "compaction":
			e.TokensBefore = c.preTokens
		case e.Role == "toolResult":
			e.ToolName = c.names.Get(e.ToolCallID)
		}
		e.ID = c.id(self)
		if i < len(out)-1 {
			e.ID = conv.TextID(e.ID.String() + "#" + strconv.Itoa(i+1))
		}
		e.Parent = parent
		parent = e.ID
		if err := c.v.Emit(e, no); err != nil {
			return err
		}
	}
	if answers {
		*c.tip(group) = self
	}
	return nil
}

func (c *ccConv) Finish() error {
	// Lines still waiting: their parent is not in the file.
	for c.waitN > 0 {
		if err := c.release(c.oldestWaiting()); err != nil {
			return err
		}
	}
	if err := c.Flush(); err != nil {
		return err
	}
	if w := ccWindow(c.autoAt); w > 0 {
		c.v.Window, c.v.WindowFrom = w, fmt.Sprintf("Claude Code auto-compaction at %d tokens", c.autoAt)
	}
	if len(c.unknown) > 0 {
		types := make([]string, 0, len(c.unknown))
		n := 0
		for t, k := range c.unknown {
			types = append(types, strconv.Quote(t))
			n += k
		}
		sort.Strings(types)
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("%d record(s) of a type this ctxtool does not know (%s) were left out: they are not messages Claude Code sends to the model as far as ctxtool knows; a newer ctxtool may read them",
			n, strings.Join(types, ", ")))
	}
	if c.skipped > 0 {
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("%d side-chain lines (isSidechain) belong to another conversation and were left out", c.skipped))
	}
	return nil
}

// ccWindows are the context windows Claude Code runs Claude models with.
var ccWindows = []int{200000, 1000000}

// ccWindow is the window Claude Code ran with, from the largest context it
// compacted automatically at: it compacts before the window is full (at
// about 83% of it), so the window is the smallest one above that point —
// whatever a model table says the model could take (a 1M-token model run
// with 200k compacts at ~170k). 0: no automatic compaction.
func ccWindow(autoAt int64) int {
	if autoAt <= 0 {
		return 0
	}
	for _, w := range ccWindows {
		if int64(w) > autoAt {
			return w
		}
	}
	return 0
}

// RecordTypes are the record types Claude Code writes (up to 2.1.3xx:
// shared/docs/agents-offline.md). A line of one of them with a sessionId
// marks the file as Claude Code's; the converter counts the records of any
// other type and reports them once per file.
var RecordTypes = map[string]bool{"user": true, "assistant": true, "system": true, "summary": true,
	"progress": true, "attachment": true, "file-history-snapshot": true, "queue-operation": true, "custom-title": true,
	"permission-mode": true, "ai-title": true, "last-prompt": true, "mode": true, "agent-name": true,
	"api-request-blob": true, "pr-link": true, "tag": true}
