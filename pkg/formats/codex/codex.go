package codex

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
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

// cxItem is a decoded payload (or, in the 2025 shape, a whole line) with
// its content already converted: decoding needs no state, so it runs on
// every core. Byte slices alias the line.
type cxItem struct {
	typ, role, name, callID string
	recordType              string
	// session_meta, the 2025 first line, turn_context
	id, timestamp, cwd, provider, model string
	// session_meta of a fork: the parent history it continues
	base cxBase
	// event_msg: token_count (info, when hasInfo), task_started
	info    cxInfo
	hasInfo bool
	// token_usage_record: its usage, when hasRecord
	record    cxLast
	hasRecord bool
	window    int64
	// compacted
	message     conv.Str
	replacement []cxItem

	// converted: message and reasoning content, a call's arguments, an
	// output's text and images (view_image answers with an input_image)
	blocks    []conv.Part
	args      []byte
	out       conv.Text
	outImages []conv.Part
	isErr     bool
}

type cxInfo struct {
	last    cxLast // when hasLast
	hasLast bool
	window  int64
	// cum is total_token_usage.total_tokens: the session's running total,
	// which only a new model call moves (0: absent).
	cum int64
}

type cxLast struct{ input, cached, output, total int64 }

// cxVal is a payload value of several shapes (content, summary, output,
// arguments, action).
type cxVal struct {
	kind    byte // its first byte: '"', '[', '{', 'n', …; 0 when absent
	raw     []byte
	compact bool
	str     conv.Str
	parts   []cxText // '['
	inner   *cxVal   // '{': its content
	success *bool    // '{'
}

type cxText struct {
	typ      string
	text     conv.Str
	imageURL string
}

// cxLine is one decoded line.
type cxLine struct {
	bad  string // malformed: why
	size int
	// skip: nothing to read (an echo, or a payload of a shape this reader
	// does not know).
	skip bool
	typ  string
	// The line's timestamp: in pi's form (what Codex writes), as its epoch
	// ms when TsPi, without a string made of it; any other as ts.
	ts   string
	tsMS int64
	tsPi bool
	it   cxItem
	// parts is the decoder's array of text parts (Dec.parts), kept for
	// the next line the record holds.
	parts []cxText
}

// cxDec is the decoder with Codex's record shapes as methods.
type cxDec struct {
	conv.Dec
	// parts holds the text parts of the values a Codex line decodes
	// (cxVal), each value a run of it: one array per record, used again by
	// the record's next line, rather than one per value.
	parts []cxText
}

var _ conv.BatchConv[cxLine] = (*cxConv)(nil)

// decodeCodex decodes one line of a rollout (legacy: the 2025 shape) into
// l, which is zero but for the capacity of its item's blocks.
func decodeCodex(raw []byte, legacy bool, l *cxLine) {
	d := &cxDec{Dec: *conv.NewDec(raw)}
	d.parts = l.parts[:0]
	defer func() { l.parts = d.parts }()
	if legacy {
		if d.Obj("") {
			d.cxItem(&l.it)
		}
		d.End()
		if d.Bad || d.TypeErr != "" {
			*l = cxLine{bad: d.ErrText(), size: len(raw)}
		}
		return
	}
	if echo(raw) {
		l.skip = true // an event_msg echo of what response_items hold
		return
	}
	payloadErr := false
	if d.Obj("") {
		for k, ok := d.Key(); ok; k, ok = d.Key() {
			switch string(k) {
			case "timestamp":
				if ts := d.Text("timestamp"); !ts.Esc {
					l.tsMS, l.tsPi = conv.PiForm(ts.Raw())
					if !l.tsPi {
						l.ts = ts.String()
					}
				} else {
					l.ts = ts.String()
				}
			case "type":
				l.typ = d.Name("type")
			case "payload":
				saved := d.TypeErr
				d.TypeErr = ""
				l.it = cxItem{blocks: l.it.blocks[:0]}
				if d.Obj("payload") {
					d.cxItem(&l.it)
				}
				payloadErr = payloadErr || d.TypeErr != ""
				d.TypeErr = saved
			default:
				d.Skip()
			}
		}
	}
	d.End()
	switch {
	case d.Bad || d.TypeErr != "":
		*l = cxLine{bad: d.ErrText(), size: len(raw)}
	case payloadErr:
		// A payload of a shape this reader does not know is skipped; only
		// a broken line is malformed.
		*l = cxLine{skip: true}
	}
}

// cxItem decodes the object obj entered and converts its content.
func (d *cxDec) cxItem(it *cxItem) {
	var c cxContent
	for k, ok := d.Key(); ok; k, ok = d.Key() {
		if !d.cxContentField(k, &c) && !d.cxItemField(k, it) {
			d.Skip()
		}
	}
	it.convert(&c)
}

// cxContent is an item's content as decoded, before convert turns it into
// blocks, arguments or output.
type cxContent struct {
	content, summary, args, output, action cxVal
	input                                  *string
}

// cxContentField decodes the value of key k if it is content; false: k is
// not a content key (nothing read).
func (d *cxDec) cxContentField(k []byte, c *cxContent) bool {
	switch string(k) {
	case "content":
		c.content = d.cxVal()
	case "summary":
		c.summary = d.cxVal()
	case "arguments":
		c.args = d.cxVal()
	case "input":
		c.input = d.OptString("input")
	case "output":
		c.output = d.cxVal()
	case "action":
		c.action = d.cxVal()
	default:
		return false
	}
	return true
}

// cxItemField decodes the value of key k into it; false: k is not an item
// key (nothing read).
func (d *cxDec) cxItemField(k []byte, it *cxItem) bool {
	switch string(k) {
	case "type":
		it.typ = d.Name("type")
	case "role":
		it.role = d.Name("role")
	case "name":
		it.name = d.Name("name")
	case "call_id":
		it.callID = d.String("call_id")
	case "record_type":
		it.recordType = d.Name("record_type")
	case "id":
		it.id = d.String("id")
	case "timestamp":
		it.timestamp = d.String("timestamp")
	case "cwd":
		it.cwd = d.String("cwd")
	case "model_provider":
		it.provider = d.String("model_provider")
	case "model":
		it.model = d.String("model")
	case "info":
		it.hasInfo = false
		if d.Obj("info") {
			it.info, it.hasInfo = d.cxInfo(), true
		}
	case "model_context_window":
		it.window = d.Int("model_context_window")
	case "usage":
		// token_usage_record (0.17x): the usage of the reply just written.
		// Another payload's "usage" of another shape is not an error.
		it.hasRecord = false
		if d.PeekByte() != '{' {
			d.Skip()
		} else if d.Obj("usage") {
			it.record, it.hasRecord = d.cxLast(), true
		}
	case "message":
		it.message = d.Text("message")
	case "replacement_history":
		it.replacement = d.cxReplacement()
	case "history_base":
		if d.PeekByte() != '{' {
			d.Skip()
		} else if d.Obj("history_base") {
			it.base = d.cxBase()
		}
	default:
		return false
	}
	return true
}

// cxReplacement decodes a compacted item's replacement_history.
func (d *cxDec) cxReplacement() []cxItem {
	var out []cxItem
	if d.Arr("replacement_history") {
		for d.Next() {
			var r cxItem
			if d.Obj("replacement_history") {
				d.cxItem(&r)
			}
			out = append(out, r)
		}
	}
	return out
}

// convert turns the decoded content into what the item's type carries.
func (it *cxItem) convert(c *cxContent) {
	switch it.typ {
	case "message":
		it.blocks = cxBlocks(it.blocks[:0], &c.content)
	case "reasoning":
		it.blocks = append(it.blocks[:0], conv.Part{Kind: "thinking", Text: cxSummaryText(&c.summary)})
	case "function_call":
		if c.args.kind == '"' {
			it.args = conv.ArgsFromJSON(c.args.str)
		} else {
			it.args = conv.ArgsFromString(string(c.args.raw))
		}
	case "custom_tool_call":
		in := ""
		if c.input != nil {
			in = *c.input
		}
		var w conv.JSONWriter
		w.FirstKey("input")
		w.Str(in)
		w.Raw("}")
		it.args = w.B
	case "local_shell_call":
		it.args = conv.CompactArgs(c.action.raw, c.action.compact)
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		it.out, it.isErr = cxOutput(&c.output)
		it.outImages = cxOutputImages(it.outImages[:0], &c.output)
	}
}

// cxOutputImages appends to out the input_image items of a tool output's
// content items as pi image blocks.
func cxOutputImages(out []conv.Part, v *cxVal) []conv.Part {
	if v.kind == '{' && v.inner != nil {
		v = v.inner
	}
	if v.kind != '[' {
		return out
	}
	for i := range v.parts {
		if t := &v.parts[i]; t.typ == "input_image" {
			if mime, data, ok := dataURL(t.imageURL); ok {
				out = append(out, conv.Part{Kind: "image", Data: conv.JSONString(data), Mime: conv.JSONString(mime)})
			}
		}
	}
	return out
}

// cxSummaryText is a reasoning summary's texts, joined as Codex shows them,
// as a JSON string.
func cxSummaryText(summary *cxVal) conv.Text {
	return conv.JoinJSON(len(summary.parts), func(i int) (conv.Str, bool) { return summary.parts[i].text, true }, `\n\n`)
}

func (d *cxDec) cxInfo() cxInfo {
	var info cxInfo
	for k, ok := d.Key(); ok; k, ok = d.Key() {
		switch string(k) {
		case "last_token_usage":
			info.hasLast = false
			if !d.Obj("last_token_usage") {
				continue
			}
			info.last, info.hasLast = d.cxLast(), true
		case "model_context_window":
			info.window = d.Int("model_context_window")
		case "total_token_usage":
			if !d.Obj("total_token_usage") {
				continue
			}
			for k, ok := d.Key(); ok; k, ok = d.Key() {
				if string(k) == "total_tokens" {
					info.cum = d.Int("total_tokens")
				} else {
					d.Skip()
				}
			}
		default:
			d.Skip()
		}
	}
	return info
}

// cxLast decodes the usage object obj entered (token_count's
// last_token_usage, token_usage_record's usage).
func (d *cxDec) cxLast() cxLast {
	var l cxLast
	for k, ok := d.Key(); ok; k, ok = d.Key() {
		switch string(k) {
		case "input_tokens":
			l.input = d.Int("input_tokens")
		case "cached_input_tokens":
			l.cached = d.Int("cached_input_tokens")
		case "output_tokens":
			l.output = d.Int("output_tokens")
		case "reasoning_output_tokens":
			d.Int("reasoning_output_tokens")
		case "total_tokens":
			l.total = d.Int("total_tokens")
		default:
			d.Skip()
		}
	}
	return l
}

// cxVal decodes a value of several shapes. Its inner type errors are its
// own (encoding/json kept these as raw JSON and decoded them leniently).
func (d *cxDec) cxVal() cxVal {
	saved := d.TypeErr
	var v cxVal
	v.kind = d.PeekByte()
	start, spaced := d.I, d.Spaced
	switch v.kind {
	case '"':
		v.str = d.Str()
	case '[':
		d.Arr("")
		from := len(d.parts)
		for d.Next() {
			var t cxText
			if d.Obj("content") {
				for k, ok := d.Key(); ok; k, ok = d.Key() {
					switch string(k) {
					case "type":
						t.typ = d.Name("type")
					case "text":
						t.text = d.Text("text")
					case "image_url":
						t.imageURL = d.String("image_url")
					default:
						d.Skip()
					}
				}
			}
			d.parts = append(d.parts, t)
		}
		v.parts = d.parts[from:len(d.parts):len(d.parts)]
	case '{':
		d.Obj("")
		for k, ok := d.Key(); ok; k, ok = d.Key() {
			switch string(k) {
			case "content":
				in := d.cxVal()
				v.inner = &in
			case "success":
				switch d.PeekByte() {
				case 'n':
					d.Skip()
					v.success = nil
				case 't', 'f':
					b := d.Bool("success")
					v.success = &b
				default:
					// encoding/json allocates the *bool before failing.
					b := false
					v.success = &b
					d.Skip()
				}
			default:
				d.Skip()
			}
		}
	default:
		d.Skip()
	}
	v.raw, v.compact = d.B[start:d.I], d.Spaced == spaced
	d.TypeErr = saved
	return v
}

// echo reports an event_msg line other than token_count and task_started
// from its first bytes, so the UI echoes (half a rollout's bytes) are not
// decoded at all.
//
// The envelope's first occurrence is found by its tail, which begins with
// a byte rare in a line's head ('_', where '"' is every few bytes and made
// bytes.Index try a match at each): the occurrences of the tail, in order,
// whose 13 bytes before are the envelope's head, are the envelope's.
func echo(raw []byte) bool {
	const lead, tail = `"type":"event`, `_msg","payload":{"type":"`
	head := raw[:min(len(raw), 160)]
	for from := len(lead); from < len(head); {
		i := bytes.Index(head[from:], []byte(tail))
		if i < 0 {
			return false
		}
		at := from + i
		if string(head[at-len(lead):at]) == lead {
			rest := head[at+len(tail):]
			return !bytes.HasPrefix(rest, []byte(`token_count"`)) && !bytes.HasPrefix(rest, []byte(`task_started"`))
		}
		from = at + 1
	}
	return false
}

// cxBlocks appends to out message content (input_text/output_text/
// input_image items, or a plain string) as pi blocks.
func cxBlocks(out []conv.Part, v *cxVal) []conv.Part {
	if v.kind == '"' {
		return append(out, conv.Part{Kind: "text", Text: v.str.Text()})
	}
	for i := range v.parts {
		t := &v.parts[i]
		switch t.typ {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			out = append(out, conv.Part{Kind: "text", Text: t.text.Text()})
		case "input_image":
			if mime, data, ok := dataURL(t.imageURL); ok {
				out = append(out, conv.Part{Kind: "image", Data: conv.JSONString(data), Mime: conv.JSONString(mime)})
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

// cxOutput is a tool output's text as a JSON string: a plain string,
// content items, or an object {content, success}.
func cxOutput(v *cxVal) (conv.Text, bool) {
	switch v.kind {
	case 0:
		return conv.Text{}, false
	case '"':
		return v.str.Text(), false
	case '[':
		return conv.JoinJSON(len(v.parts), func(i int) (conv.Str, bool) {
			switch v.parts[i].typ {
			case "input_text", "output_text", "text", "summary_text", "reasoning_text":
				return v.parts[i].text, true
			}
			return conv.Str{}, false
		}, ""), false
	case '{':
		var text conv.Text
		if v.inner != nil {
			text, _ = cxOutput(v.inner)
		}
		return text, v.success != nil && !*v.success
	}
	return conv.Text{B: conv.JSONString(string(v.raw))}, false
}

type cxConv struct {
	v        *conv.Emitter
	legacy   bool
	provider string
	model    string
	shown    string   // model announced by the last model_change
	last     conv.Pid // id of the last written entry
	lastRow  int      // source line of the last written entry
	k        int      // entries written from lastRow
	// seg is the open turn segment: the assistant message being built and
	// the tool outputs that answer it, written when the next turn starts
	// (token_count records arrive after the outputs and belong to it).
	asst    *conv.Entry // &asstBuf or nil
	asstBuf conv.Entry
	asstRow int
	outputs []pendingEntry
	// outBlocks holds the outputs' content (one block each), used again
	// once they are written.
	outBlocks []conv.Part
	names     conv.ToolNames
	ts        string
	// tsISO and TsMS are PiTime(tsFrom).
	tsFrom, tsISO string
	tsMS          int64
	// nextUsage is a token_count waiting for the reply it measures (when
	// hasNext); asstUsage is the open assistant message's (asst.usage
	// points to it).
	nextUsage, asstUsage conv.Usage
	hasNext              bool
	// byRecord: the file has token_usage_records (0.17x), which give
	// each reply its usage; token_count then only gives the window.
	byRecord bool
	// lastCum and lastLast are the last token_count's running total and
	// last usage: a record that repeats them measured no new call.
	lastCum  int64
	lastLast cxLast
	// TsPi: the last timestamp was in pi's form, epoch ms tsPiMS (ts is
	// then stale).
	tsPi   bool
	tsPiMS int64

	// fork: file is the rollout read (its parent's while joinParent reads
	// that), "" when forks are not followed (LineConverter: each file is
	// indexed on its own); prefix marks the ids of a parent's entries,
	// depth how many parents deep; based: this file's history_base was
	// followed.
	file, prefix string
	depth        int
	based        bool
}

type pendingEntry struct {
	e   conv.Entry
	row int
}

func newCodexConv(v *conv.Emitter, legacy bool) *cxConv {
	return &cxConv{v: v, legacy: legacy, provider: "openai", names: conv.NewToolNames()}
}

func (c *cxConv) Decode(raw []byte, l *cxLine) {
	*l = cxLine{it: cxItem{blocks: l.it.blocks[:0]}}
	decodeCodex(raw, c.legacy, l)
}

func (c *cxConv) Line(no int, raw []byte) error {
	var l cxLine
	decodeCodex(raw, c.legacy, &l)
	return c.Apply(no, &l)
}

// Holds: the open segment points into the lines it was built from.
func (c *cxConv) Holds() bool { return c.asst != nil || len(c.outputs) > 0 }

func (c *cxConv) Apply(no int, l *cxLine) error {
	if l.bad != "" {
		c.v.Malformed = append(c.v.Malformed, conv.Malformed{Line: no, Bytes: l.size, Err: l.bad})
		return nil
	}
	if l.skip {
		return nil
	}
	typ, it := l.typ, &l.it
	if l.tsPi {
		c.tsPi, c.tsPiMS = true, l.tsMS
	} else if l.ts != "" {
		c.tsPi, c.ts = false, l.ts
	}
	if c.legacy {
		switch {
		case it.recordType != "":
			return nil
		case it.typ == "" && it.id != "":
			typ = "session_meta"
		default:
			typ = "response_item"
		}
		if it.timestamp != "" {
			c.tsPi, c.ts = false, it.timestamp
		}
	}
	v := c.v
	switch typ {
	case "session_meta":
		if v.SessionID == "" {
			v.Started, _ = conv.PiTime(it.timestamp)
			v.SessionID, v.Cwd, v.HeaderRow = it.id, it.cwd, no
		}
		if it.provider != "" {
			c.provider = it.provider
		}
		if it.base.thread != "" && !c.based {
			c.based = true
			return c.joinParent(it.base)
		}
	case "turn_context":
		if it.model != "" {
			c.model = it.model
		}
	case "event_msg":
		c.event(it)
	case "token_usage_record":
		if it.hasRecord {
			c.byRecord = true
			c.usage(conv.Usage{Input: it.record.input - it.record.cached, Output: it.record.output, CacheRead: it.record.cached, Total: it.record.total}, true)
		}
	case "compacted":
		if err := c.Flush(); err != nil {
			return err
		}
		comp := conv.Entry{Typ: "compaction", Summary: it.message.JSON()}
		if err := c.put(&comp, no, true); err != nil {
			return err
		}
		for i := range it.replacement {
			if err := c.item(&it.replacement[i], no); err != nil {
				return err
			}
		}
		return c.Flush()
	case "response_item":
		return c.item(it, no)
	}
	return nil
}

func (c *cxConv) event(it *cxItem) {
	switch it.typ {
	case "token_count":
		if !it.hasInfo {
			return
		}
		if it.info.window > 0 {
			c.v.Window, c.v.WindowFrom = int(it.info.window), "Codex model_context_window"
		}
		if it.info.cum > 0 && it.info.cum == c.lastCum && it.info.last == c.lastLast {
			// The same record again (Codex repeats token_count, e.g. on
			// a rate-limit update): no new model call, so no reply's.
			return
		}
		c.lastCum, c.lastLast = it.info.cum, it.info.last
		if l := &it.info.last; it.info.hasLast && !c.byRecord {
			// Codex ≥ 0.4x records token_count right after the reply's items;
			// 0.3x records it just before them. A record that finds a reply
			// still unanswered belongs to it, any other to the next reply.
			// (0.17x writes it after the reply's tool outputs, and a
			// token_usage_record before them: that one is read instead.)
			c.usage(conv.Usage{Input: l.input - l.cached, Output: l.output, CacheRead: l.cached, Total: l.total}, false)
		}
	case "task_started":
		if it.window > 0 {
			c.v.Window, c.v.WindowFrom = int(it.window), "Codex model_context_window"
		}
	}
}

// usage gives u to the open reply when it is still unanswered (or,
// answered, when the usage comes from a token_usage_record, written
// right after the reply's items), else to the next reply.
func (c *cxConv) usage(u conv.Usage, record bool) {
	if c.asst != nil && (record || len(c.outputs) == 0) {
		c.asstUsage, c.hasNext = u, false
		c.asst.Usage = &c.asstUsage
		return
	}
	c.nextUsage, c.hasNext = u, true
}

func (c *cxConv) item(it *cxItem, no int) error {
	switch it.typ {
	case "message":
		switch it.role {
		case "assistant":
			c.assistant(no).Content = append(c.assistant(no).Content, it.blocks...)
			return nil
		case "user":
			if err := c.Flush(); err != nil {
				return err
			}
			return c.put(&conv.Entry{Typ: "message", Role: "user", Content: it.blocks}, no, false)
		default: // developer, system
			if err := c.Flush(); err != nil {
				return err
			}
			return c.put(&conv.Entry{Typ: "custom_message", CustomType: "codex:" + it.role, Content: it.blocks}, no, false)
		}
	case "reasoning":
		a := c.assistant(no)
		a.Content = append(a.Content, it.blocks...)
	case "function_call", "custom_tool_call":
		c.call(no, it.callID, it.name, it.args)
	case "local_shell_call":
		c.call(no, it.callID, "local_shell", it.args)
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		if c.asst == nil {
			// An output with no call in this segment: still context.
			if err := c.Flush(); err != nil {
				return err
			}
		}
		start := len(c.outBlocks)
		if len(it.outImages) == 0 || len(it.out.B) > 2 {
			c.outBlocks = append(c.outBlocks, conv.Part{Kind: "text", Text: it.out})
		}
		c.outBlocks = append(c.outBlocks, it.outImages...)
		n := len(c.outBlocks)
		c.outputs = append(c.outputs, pendingEntry{row: no, e: conv.Entry{Typ: "message", Role: "toolResult",
			ToolCallID: it.callID, ToolName: c.names.Get(it.callID), IsError: it.isErr,
			Content: c.outBlocks[start:n:n]}})
		if c.asst == nil {
			return c.Flush()
		}
	}
	return nil
}

func (c *cxConv) call(no int, id, name string, args []byte) {
	c.names.Set(id, name)
	a := c.assistant(no)
	a.Content = append(a.Content, conv.Part{Kind: "toolCall", ID: id, Name: name, Args: args})
}

// assistant returns the open assistant message, starting one (and
// writing the previous segment) when tool outputs already answered it.
func (c *cxConv) assistant(no int) *conv.Entry {
	if c.asst != nil && len(c.outputs) > 0 {
		_ = c.Flush()
	}
	if c.asst == nil {
		// One message at a time: its struct and content buffer serve the
		// next.
		content := c.asstBuf.Content[:0]
		c.asstBuf = conv.Entry{Typ: "message", Role: "assistant", API: "openai-responses", Provider: c.provider, Model: c.model,
			Content: content}
		if c.hasNext {
			c.asstUsage, c.hasNext = c.nextUsage, false
			c.asstBuf.Usage = &c.asstUsage
		}
		c.asst = &c.asstBuf
		c.asstRow = no
	}
	return c.asst
}

// Flush writes the open segment: the assistant message, then its outputs.
func (c *cxConv) Flush() error {
	if a := c.asst; a != nil {
		c.asst = nil
		if c.model != c.shown && c.model != "" {
			c.shown = c.model
			mc := conv.Entry{Typ: "model_change", Provider: c.provider, Model: c.model}
			if err := c.put(&mc, c.asstRow, false); err != nil {
				return err
			}
		}
		a.Model = c.model
		a.StopReason = "stop"
		for _, b := range a.Content {
			if b.Kind == "toolCall" {
				a.StopReason = "toolUse"
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
	c.outBlocks = c.outBlocks[:0]
	return nil
}

// put writes an entry chained after the last one (root when asked).
func (c *cxConv) put(e *conv.Entry, row int, root bool) error {
	if row == c.lastRow {
		c.k++
	} else {
		c.lastRow, c.k = row, 1
	}
	e.ID = conv.RowID(row)
	if c.k > 1 || c.prefix != "" {
		e.ID = conv.TextID(fmt.Sprintf("%sL%d.%d", c.prefix, row, c.k))
	}
	if !root {
		e.Parent = c.last
	}
	if c.tsPi {
		e.TsPi, e.TsMS, e.MsgTime = true, c.tsPiMS, c.tsPiMS
	} else {
		if c.ts != c.tsFrom {
			// The entries of one line (and often of the next) share it.
			c.tsFrom = c.ts
			c.tsISO, c.tsMS = conv.PiTime(c.ts)
		}
		e.Timestamp, e.MsgTime = c.tsISO, c.tsMS
	}
	c.last = e.ID
	return c.v.Emit(e, row)
}

func (c *cxConv) Finish() error { return c.Flush() }
