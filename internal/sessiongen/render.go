package sessiongen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// render encodes e as one line (in b.buf) and builds its node. It reserves
// the id and advances the clock but does not touch the leaf.
func (b *Builder) render(e Entry) (*node, []byte, error) {
	m := e.meta()
	n := &node{typ: e.entryType(), usage: -1, index: b.index}
	if m.ID != "" {
		if _, dup := b.ids[m.ID]; dup {
			return nil, nil, fmt.Errorf("sessiongen: duplicate entry id %q", m.ID)
		}
		n.id = m.ID
		b.ids[m.ID] = nil
	} else {
		n.id = b.NewID()
	}
	parentID, hasParent := "", false
	switch {
	case b.version == 1:
		n.parent = b.leaf
	case m.ParentID != "":
		parentID, hasParent = m.ParentID, true
		n.parent = b.ids[m.ParentID]
	case b.leaf != nil:
		parentID, hasParent = b.leaf.id, true
		n.parent = b.leaf
	}
	b.prevClock = b.clock
	if !m.Time.IsZero() {
		b.clock = m.Time.UTC()
	} else {
		b.clock = b.clock.Add(DefaultStep)
	}
	ms := b.clock.UnixMilli()

	buf := append(b.buf[:0], `{"type":`...)
	buf = formats.AppendString(buf, n.typ)
	base := func(buf []byte) []byte {
		if b.version > 1 {
			buf = append(buf, `,"id":`...)
			buf = formats.AppendString(buf, n.id)
			buf = append(buf, `,"parentId":`...)
			if hasParent {
				buf = formats.AppendString(buf, parentID)
			} else {
				buf = append(buf, "null"...)
			}
		}
		buf = append(buf, `,"timestamp":`...)
		return appendTime(buf, b.clock)
	}
	var err error
	switch x := e.(type) {
	case *User:
		buf = base(buf)
		buf = append(buf, `,"message":{"role":"user","content":`...)
		n.role = "user"
		buf, err = b.appendContent(buf, n, x.Text, x.Blocks, KindProse, 0)
		buf = appendTS(buf, x.Timestamp, ms-10)
		buf = append(buf, '}')
	case *Assistant:
		buf = base(buf)
		buf, err = b.appendAssistant(buf, n, x, ms)
	case *ToolResult:
		buf = base(buf)
		n.role = "toolResult"
		n.result = x.ToolCallID
		buf = append(buf, `,"message":{"role":"toolResult","toolCallId":`...)
		buf = formats.AppendString(buf, x.ToolCallID)
		buf = append(buf, `,"toolName":`...)
		buf = formats.AppendString(buf, x.ToolName)
		buf = append(buf, `,"content":`...)
		blocks := x.Content
		if blocks == nil {
			blocks = []Block{}
		}
		buf, err = b.appendContent(buf, n, "", blocks, KindCode, HeuristicImageChars)
		if err == nil {
			buf, err = appendDetails(buf, x.Details)
		}
		buf = append(buf, `,"isError":`...)
		buf = strconv.AppendBool(buf, x.IsError)
		buf = appendTS(buf, x.Timestamp, ms-5)
		buf = append(buf, '}')
	case *BashExecution:
		buf = base(buf)
		n.role = "bashExecution"
		buf = append(buf, `,"message":{"role":"bashExecution","command":`...)
		buf = formats.AppendString(buf, x.Command)
		buf = append(buf, `,"output":`...)
		buf = formats.AppendString(buf, x.Output)
		if x.ExitCode != nil {
			buf = append(buf, `,"exitCode":`...)
			buf = strconv.AppendInt(buf, int64(*x.ExitCode), 10)
		}
		buf = append(buf, `,"cancelled":`...)
		buf = strconv.AppendBool(buf, x.Cancelled)
		buf = append(buf, `,"truncated":`...)
		buf = strconv.AppendBool(buf, x.Truncated)
		if x.FullOutputPath != "" {
			buf = append(buf, `,"fullOutputPath":`...)
			buf = formats.AppendString(buf, x.FullOutputPath)
		}
		buf = appendTS(buf, x.Timestamp, ms-500)
		if x.ExcludeFromContext {
			buf = append(buf, `,"excludeFromContext":true`...)
		}
		buf = append(buf, '}')
		cu, cc, ccu := measure(x.Command)
		ou, oc, ocu := measure(x.Output)
		n.emits = true
		n.heur = HeuristicTokens(cu + ou)
		if !x.ExcludeFromContext {
			n.trueTok = MessageOverheadTokens + BashFramingTokens + trueFrom(cu, cc, ccu, KindCode) + trueFrom(ou, oc, ocu, KindCode)
		}
	case *CustomRole:
		buf = base(buf)
		role := "custom"
		if x.Hook {
			role = "hookMessage"
		}
		n.role = role
		buf = append(buf, `,"message":{"role":`...)
		buf = formats.AppendString(buf, role)
		buf, err = b.appendCustomBody(buf, n, &x.CustomBody)
		buf = appendTS(buf, x.Timestamp, ms)
		buf = append(buf, '}')
		if x.Hook && b.version == 3 {
			n.emits, n.heur, n.trueTok = true, 0, 0 // pi does not rename it in a v3 file
		}
	case *CustomMessage:
		buf, err = b.appendCustomBody(buf, n, &x.CustomBody)
		buf = base(buf)
	case *Custom:
		buf = append(buf, `,"customType":`...)
		buf = formats.AppendString(buf, x.CustomType)
		if x.Data != nil {
			buf = append(buf, `,"data":`...)
			buf, err = appendValue(buf, x.Data)
		}
		buf = base(buf)
	case *ModelChange:
		buf = base(buf)
		buf = append(buf, `,"provider":`...)
		buf = formats.AppendString(buf, x.Provider)
		buf = append(buf, `,"modelId":`...)
		buf = formats.AppendString(buf, x.ModelID)
		n.provider, n.model = x.Provider, x.ModelID
	case *ThinkingLevelChange:
		buf = base(buf)
		buf = append(buf, `,"thinkingLevel":`...)
		buf = formats.AppendString(buf, x.ThinkingLevel)
		n.thinking = x.ThinkingLevel
	case *Compaction:
		buf = base(buf)
		buf = append(buf, `,"summary":`...)
		buf = formats.AppendString(buf, x.Summary)
		n.firstKept = x.FirstKeptEntryID
		if b.version == 1 {
			idx := x.FirstKeptEntryIndex
			if x.FirstKeptEntryID != "" {
				t := b.ids[x.FirstKeptEntryID]
				if t == nil {
					return nil, nil, fmt.Errorf("sessiongen: compaction: firstKeptEntryId %q is not a loaded entry", x.FirstKeptEntryID)
				}
				idx = t.index
			} else if t := b.byIndex(idx); t != nil {
				n.firstKept = t.id
			}
			buf = append(buf, `,"firstKeptEntryIndex":`...)
			buf = strconv.AppendInt(buf, int64(idx), 10)
		} else {
			buf = append(buf, `,"firstKeptEntryId":`...)
			buf = formats.AppendString(buf, x.FirstKeptEntryID)
		}
		tb := x.TokensBefore
		if tb == 0 {
			tb = b.sysTokens
			if n.parent != nil {
				tb += n.parent.ctxTrue
			}
		}
		buf = append(buf, `,"tokensBefore":`...)
		buf = strconv.AppendInt(buf, int64(tb), 10)
		buf, err = appendDetails(buf, x.Details)
		if x.FromHook != nil {
			buf = append(buf, `,"fromHook":`...)
			buf = strconv.AppendBool(buf, *x.FromHook)
		} else if b.version > 1 {
			buf = append(buf, `,"fromHook":false`...)
		}
		n.summarized(x.Summary, CompactionWrapperTokens)
	case *BranchSummary:
		if b.version == 1 {
			return nil, nil, fmt.Errorf("sessiongen: v1 sessions have no branch_summary entries")
		}
		buf = base(buf)
		from := x.FromID
		if from == "" {
			from = "root"
			if b.leaf != nil {
				from = b.leaf.id
			}
		}
		buf = append(buf, `,"fromId":`...)
		buf = formats.AppendString(buf, from)
		buf = append(buf, `,"summary":`...)
		buf = formats.AppendString(buf, x.Summary)
		buf, err = appendDetails(buf, x.Details)
		buf = append(buf, `,"fromHook":`...)
		buf = strconv.AppendBool(buf, x.FromHook != nil && *x.FromHook)
		if x.Summary != "" {
			n.emits = true
			n.summarized(x.Summary, BranchWrapperTokens)
		}
	case *Label:
		if b.version == 1 {
			return nil, nil, fmt.Errorf("sessiongen: v1 sessions have no label entries (ids are not stable)")
		}
		buf = base(buf)
		buf = append(buf, `,"targetId":`...)
		buf = formats.AppendString(buf, x.TargetID)
		if x.Label != "" {
			buf = append(buf, `,"label":`...)
			buf = formats.AppendString(buf, x.Label)
		}
	case *SessionInfo:
		buf = base(buf)
		if x.Name != "" {
			buf = append(buf, `,"name":`...)
			buf = formats.AppendString(buf, x.Name)
		}
	default:
		return nil, nil, fmt.Errorf("sessiongen: unknown entry %T", e)
	}
	if err != nil {
		return nil, nil, err
	}
	buf = append(buf, '}')
	b.buf = buf
	// ground-truth context size at this node
	pctx := 0
	if n.parent != nil {
		pctx = n.parent.ctxTrue
	}
	switch {
	case n.typ == "compaction":
		n.ctxTrue = n.trueTok + keptTrue(n.parent, n.firstKept)
	case n.emits:
		n.ctxTrue = pctx + n.trueTok
	default:
		n.ctxTrue = pctx
	}
	return n, buf, nil
}

// keptTrue sums provider-visible tokens of the emitting entries from the
// entry firstKept up to p (the compaction's parent), or 0 when firstKept is
// not on that path — mirroring buildSessionContext.
func keptTrue(p *node, firstKept string) int {
	sum := 0
	for n := p; n != nil; n = n.parent {
		if n.emits {
			sum += n.trueTok
		}
		if n.id == firstKept {
			return sum
		}
	}
	return 0
}

func (b *Builder) byIndex(idx int) *node {
	for n := b.last; n != nil; n = n.parent {
		if n.index == idx {
			return n
		}
		if n.index < idx {
			break
		}
	}
	return nil
}

// appendCustomBody writes customType, content, display and [details] —
// shared by custom_message entries and role-custom messages.
func (b *Builder) appendCustomBody(buf []byte, n *node, c *CustomBody) ([]byte, error) {
	buf = append(buf, `,"customType":`...)
	buf = formats.AppendString(buf, c.CustomType)
	buf = append(buf, `,"content":`...)
	buf, err := b.appendContent(buf, n, c.Text, c.Blocks, KindProse, HeuristicImageChars)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"display":`...)
	buf = strconv.AppendBool(buf, c.Display)
	return appendDetails(buf, c.Details)
}

// appendDetails writes an entry's "details" member, which is absent when
// nil (pi writes none for extensions that set none).
func appendDetails(buf []byte, details any) ([]byte, error) {
	if details == nil {
		return buf, nil
	}
	buf = append(buf, `,"details":`...)
	return appendValue(buf, details)
}

// summarized sizes a summary that pi sends wrapped in a user message
// (compaction or branch summary; wrapper is that wrapper's true tokens).
func (n *node) summarized(summary string, wrapper int) {
	u, c, cu := measure(summary)
	n.heur = HeuristicTokens(u)
	n.trueTok = MessageOverheadTokens + wrapper + trueFrom(u, c, cu, KindProse)
}

func appendTS(buf []byte, ts, def int64) []byte {
	if ts == 0 {
		ts = def
	}
	buf = append(buf, `,"timestamp":`...)
	return strconv.AppendInt(buf, ts, 10)
}

// appendContent writes a content value: the array of blocks when blocks is
// non-nil, else text as a string. It sets n.emits/heur/trueTok for the
// message. imageChars is what pi's heuristic counts per image.
func (b *Builder) appendContent(buf []byte, n *node, text string, blocks []Block, def Kind, imageChars int) ([]byte, error) {
	n.emits = true
	chars, tt := 0, MessageOverheadTokens
	if blocks == nil {
		buf = formats.AppendString(buf, text)
		u, c, cu := measure(text)
		chars += u
		tt += trueFrom(u, c, cu, def)
	} else {
		buf = append(buf, '[')
		for i := range blocks {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			var ch, t int
			buf, ch, t, err = b.appendBlock(buf, n, &blocks[i], def, imageChars)
			if err != nil {
				return buf, err
			}
			chars += ch
			tt += t
		}
		buf = append(buf, ']')
	}
	n.heur = HeuristicTokens(chars)
	n.trueTok = tt
	return buf, nil
}

// appendBlock writes one content block and returns pi's heuristic chars
// and the ground-truth tokens for it.
func (b *Builder) appendBlock(buf []byte, n *node, bl *Block, def Kind, imageChars int) ([]byte, int, int, error) {
	kind := bl.Kind
	if kind == KindDefault {
		kind = def
	}
	switch bl.Type {
	case "text":
		buf = append(buf, `{"type":"text","text":`...)
		buf = formats.AppendString(buf, bl.Text)
		if bl.Signature != "" {
			buf = append(buf, `,"textSignature":`...)
			buf = formats.AppendString(buf, bl.Signature)
		}
		buf = append(buf, '}')
		u, c, cu := measure(bl.Text)
		return buf, u, trueFrom(u, c, cu, kind), nil
	case "thinking":
		if n.role != "assistant" {
			return buf, 0, 0, fmt.Errorf("sessiongen: thinking block in a %s message", n.role)
		}
		buf = append(buf, `{"type":"thinking","thinking":`...)
		buf = formats.AppendString(buf, bl.Text)
		if bl.Signature != "" {
			buf = append(buf, `,"thinkingSignature":`...)
			buf = formats.AppendString(buf, bl.Signature)
		}
		if bl.Redacted {
			buf = append(buf, `,"redacted":true`...)
		}
		buf = append(buf, '}')
		u, c, cu := measure(bl.Text)
		return buf, u, trueFrom(u, c, cu, KindProse), nil
	case "image":
		if n.role == "assistant" {
			return buf, 0, 0, fmt.Errorf("sessiongen: image block in an assistant message")
		}
		buf = append(buf, `{"type":"image","data":`...)
		buf = formats.AppendString(buf, bl.Data)
		buf = append(buf, `,"mimeType":`...)
		mt := bl.MimeType
		if mt == "" {
			mt = "image/png"
		}
		buf = formats.AppendString(buf, mt)
		buf = append(buf, '}')
		w, h := bl.Width, bl.Height
		if w == 0 || h == 0 {
			w, h, _ = PNGSize(bl.Data)
		}
		n.images++
		return buf, imageChars, ImageTokens(w, h), nil
	case "toolCall":
		if n.role != "assistant" {
			return buf, 0, 0, fmt.Errorf("sessiongen: toolCall block in a %s message", n.role)
		}
		buf = append(buf, `{"type":"toolCall","id":`...)
		buf = formats.AppendString(buf, bl.ID)
		buf = append(buf, `,"name":`...)
		buf = formats.AppendString(buf, bl.Name)
		buf = append(buf, `,"arguments":`...)
		start := len(buf)
		args := bl.Args
		if args == nil {
			args = Obj{}
		}
		var err error
		if buf, err = appendValue(buf, args); err != nil {
			return buf, 0, 0, err
		}
		au, ac, acu := measure(str(buf[start:]))
		if bl.Signature != "" {
			buf = append(buf, `,"thoughtSignature":`...)
			buf = formats.AppendString(buf, bl.Signature)
		}
		if bl.PartialJSON != "" {
			buf = append(buf, `,"partialJson":`...)
			buf = formats.AppendString(buf, bl.PartialJSON)
		}
		buf = append(buf, '}')
		n.calls = append(n.calls, bl.ID)
		nu, nc, ncu := measure(bl.Name)
		return buf, nu + au, ToolCallOverheadTokens + trueFrom(nu, nc, ncu, KindCode) + trueFrom(au, ac, acu, KindCode), nil
	}
	return buf, 0, 0, fmt.Errorf("sessiongen: unknown block type %q", bl.Type)
}

func (b *Builder) appendAssistant(buf []byte, n *node, a *Assistant, ms int64) ([]byte, error) {
	n.role = "assistant"
	buf = append(buf, `,"message":{"role":"assistant","content":`...)
	content := a.Content
	if content == nil {
		content = []Block{}
	}
	buf, err := b.appendContent(buf, n, "", content, KindProse, 0)
	if err != nil {
		return buf, err
	}
	provider, model, api := a.Provider, a.Model, a.API
	if provider == "" {
		provider = b.provider
	}
	if model == "" {
		model = b.model
	}
	if api == "" {
		api = b.api
		if a.Provider != "" {
			api = apiFor(provider)
		}
	}
	n.provider, n.model = provider, model
	stop := a.StopReason
	if stop == "" {
		stop = "stop"
		if len(n.calls) > 0 {
			stop = "toolUse"
		}
	}
	trusted := stop != "aborted" && stop != "error"
	own := n.trueTok
	if !trusted {
		n.trueTok = 0 // the provider layer skips error/aborted assistants
	}
	var u Usage
	if a.Usage != nil {
		u = *a.Usage
	} else {
		u = b.autoUsage(n, own, stop, provider)
	}
	if u.Cost == nil {
		c := costOf(model, u)
		u.Cost = &c
	}
	if a.NoModel {
		n.provider, n.model = "", ""
		buf = append(buf, `,"usage":{"input":`...)
	} else {
		buf = append(buf, `,"api":`...)
		buf = formats.AppendString(buf, api)
		buf = append(buf, `,"provider":`...)
		buf = formats.AppendString(buf, provider)
		buf = append(buf, `,"model":`...)
		buf = formats.AppendString(buf, model)
		buf = append(buf, `,"usage":{"input":`...)
	}
	buf = strconv.AppendInt(buf, int64(u.Input), 10)
	buf = append(buf, `,"output":`...)
	buf = strconv.AppendInt(buf, int64(u.Output), 10)
	buf = append(buf, `,"cacheRead":`...)
	buf = strconv.AppendInt(buf, int64(u.CacheRead), 10)
	buf = append(buf, `,"cacheWrite":`...)
	buf = strconv.AppendInt(buf, int64(u.CacheWrite), 10)
	if !u.OmitTotal {
		buf = append(buf, `,"totalTokens":`...)
		buf = strconv.AppendInt(buf, int64(u.TotalTokens), 10)
	}
	buf = append(buf, `,"cost":{"input":`...)
	buf = appendFloat(buf, u.Cost.Input)
	buf = append(buf, `,"output":`...)
	buf = appendFloat(buf, u.Cost.Output)
	buf = append(buf, `,"cacheRead":`...)
	buf = appendFloat(buf, u.Cost.CacheRead)
	buf = append(buf, `,"cacheWrite":`...)
	buf = appendFloat(buf, u.Cost.CacheWrite)
	buf = append(buf, `,"total":`...)
	buf = appendFloat(buf, u.Cost.Total)
	buf = append(buf, `}},"stopReason":`...)
	buf = formats.AppendString(buf, stop)
	def := b.prevClock.UnixMilli() + 5
	if def > ms {
		def = ms
	}
	buf = appendTS(buf, a.Timestamp, def)
	if a.ErrorMessage != "" {
		buf = append(buf, `,"errorMessage":`...)
		buf = formats.AppendString(buf, a.ErrorMessage)
	}
	buf = append(buf, '}')
	if trusted {
		n.usage = u.TotalTokens
		if u.OmitTotal || u.TotalTokens == 0 {
			n.usage = u.Input + u.Output + u.CacheRead + u.CacheWrite
		}
	}
	return buf, nil
}

// autoUsage produces the ground-truth usage of an assistant message: the
// prompt is SystemTokens + the provider-visible context before it, split
// like Anthropic prompt caching reports it (the previous prompt is read
// from cache, the new part is written to it, 1–3 tokens stay uncached);
// output is the message's own ground-truth size.
func (b *Builder) autoUsage(n *node, own int, stop, provider string) Usage {
	if stop == "error" || stop == "aborted" {
		return Usage{} // what pi records for failed/aborted streams
	}
	prompt := b.sysTokens
	if n.parent != nil {
		prompt += n.parent.ctxTrue
	}
	out := own
	var read int
	switch {
	case b.cached == 0:
		read = 0
	case b.cacheOK && prompt >= b.cached:
		read = b.cached
	default:
		read = min(b.sysTokens, prompt)
	}
	input := min(1+b.rng.IntN(3), prompt-read)
	write := prompt - read - input
	if provider != "anthropic" && provider != "amazon-bedrock" {
		input, write = prompt-read, 0
	}
	b.cached, b.cacheOK = prompt, true
	return Usage{Input: input, Output: out, CacheRead: read, CacheWrite: write, TotalTokens: input + out + read + write}
}

// prices in US dollars per million tokens: input, output, cacheRead, cacheWrite.
func pricesFor(model string) [4]float64 {
	switch {
	case strings.Contains(model, "opus-4-5"), strings.Contains(model, "opus-4-6"):
		return [4]float64{5, 25, 0.5, 6.25}
	case strings.Contains(model, "opus"):
		return [4]float64{15, 75, 1.5, 18.75}
	case strings.Contains(model, "haiku"):
		return [4]float64{1, 5, 0.1, 1.25}
	case strings.HasPrefix(model, "gpt-5"):
		return [4]float64{1.25, 10, 0.125, 0}
	case strings.HasPrefix(model, "gemini"):
		return [4]float64{1.25, 10, 0.31, 0}
	}
	return [4]float64{3, 15, 0.3, 3.75}
}

// costOf computes cost the way pi does: (price / 1e6) * tokens per field,
// total = the four summed in order.
func costOf(model string, u Usage) Cost {
	p := pricesFor(model)
	c := Cost{
		Input:      p[0] / 1000000 * float64(u.Input),
		Output:     p[1] / 1000000 * float64(u.Output),
		CacheRead:  p[2] / 1000000 * float64(u.CacheRead),
		CacheWrite: p[3] / 1000000 * float64(u.CacheWrite),
	}
	c.Total = c.Input + c.Output + c.CacheRead + c.CacheWrite
	return c
}
