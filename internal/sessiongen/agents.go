package sessiongen

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// Claude Code and Codex transcripts, written the way those agents write
// them (shapes taken from the real files in ../shared/fixtures/wild), with
// the ground truth a test needs, computed here from each agent's own rules
// and not by ctxtool's readers:
//
//   - ContextTokens is Σ ceil(chars/4) over the messages the agent would
//     send next (pi's per-message heuristic: text, thinking, tool name +
//     JSON arguments, tool result text), after the last compaction;
//   - UsageTokens is the context size the file's usage record states for
//     the last reply, by the agent's rule (Claude Code: input +
//     cache_creation + cache_read; Codex: last_token_usage.total_tokens).
//
// Claude Code files carry the traps of real ones: one line per content
// block repeating message.id and usage, parallel tool results hanging off
// different blocks, progress lines as side branches and as chain links,
// system/file-history-snapshot/queue-operation lines, and compactions
// (compact_boundary + isCompactSummary). Codex files carry event_msg echoes,
// token_count records after the reply, turn_context, developer messages and
// compacted replacement histories; Legacy writes the 2025 shape.

// AgentOptions control GenerateClaudeCode and GenerateCodex.
type AgentOptions struct {
	Seed uint64
	// Turns is the number of user turns (0 = 12); TargetBytes > 0 keeps
	// adding turns until the file holds at least that many bytes.
	Turns       int
	TargetBytes int64
	// ToolCallsPerTurn is the most tool calls per turn (0 = 4), made up to
	// ParallelToolCalls at a time (0 = 3).
	ToolCallsPerTurn  int
	ParallelToolCalls int
	// ToolResultBytes is the typical size of a tool result (0 = 1500).
	ToolResultBytes int
	Thinking        bool
	// Compactions spread over the session: evenly over its bytes when
	// TargetBytes is set (as Options.Compactions does for pi, so the
	// formats compare at one cadence), else over its turns.
	Compactions int
	// Fact is planted in the first user message (for recall tests).
	Fact string
	// Legacy writes Codex's 2025 rollout shape (no envelope, no usage).
	Legacy bool
}

// AgentResult is what a file holds, by the agent's own rules.
type AgentResult struct {
	Lines           int
	Bytes           int64
	ContextMessages int
	ContextTokens   int
	// UsageTokens is the last reply's usage record (0 when the file has
	// none).
	UsageTokens int
	// Window is the model_context_window a Codex file states.
	Window   int
	FactLine int
	Model    string
}

type agentGen struct {
	o    AgentOptions
	r    *rand.Rand
	c    *corpus
	w    *bufio.Writer
	cw   *countingWriter
	line int
	now  time.Time
	// context the agent would send: chars per message, and Σ ceil(chars/4).
	ctx      []int
	ctxTok   int
	usage    int
	sysTok   int
	res      AgentResult
	b        []byte
	uuidSeed uint64
	compact  sched
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newAgentGen(w io.Writer, o AgentOptions) *agentGen {
	o.Turns = cmp.Or(o.Turns, 12)
	o.ToolCallsPerTurn = cmp.Or(o.ToolCallsPerTurn, 4)
	o.ParallelToolCalls = cmp.Or(o.ParallelToolCalls, 3)
	o.ToolResultBytes = cmp.Or(o.ToolResultBytes, 1500)
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	cw := &countingWriter{w: w}
	return &agentGen{o: o, r: r, c: newCorpus(r), cw: cw, w: bufio.NewWriterSize(cw, 1<<20),
		now: DefaultStart, sysTok: 4200, compact: sched{n: o.Compactions}}
}

func (g *agentGen) more(turn int) bool {
	if g.o.TargetBytes > 0 {
		return g.written() < g.o.TargetBytes
	}
	return turn < g.o.Turns
}

func (g *agentGen) written() int64 { return g.cw.n + int64(g.w.Buffered()) }

func (g *agentGen) emit() {
	g.b = append(g.b, '\n')
	g.w.Write(g.b)
	g.b = g.b[:0]
	g.line++
}

func (g *agentGen) tick() string {
	g.now = g.now.Add(time.Duration(200+g.r.IntN(3000)) * time.Millisecond)
	return g.now.UTC().Format("2006-01-02T15:04:05.000Z")
}

func (g *agentGen) uuid() string {
	g.uuidSeed++
	a, b := g.r.Uint64(), g.r.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(a), uint16(a>>32), uint16(a>>48)&0xfff, uint16(b)&0xfff, b>>16)
}

func (g *agentGen) kv(k string)  { g.b = append(formats.AppendString(append(g.b, ','), k), ':') }
func (g *agentGen) str(s string) { g.b = formats.AppendString(g.b, s) }
func (g *agentGen) num(n int)    { g.b = strconv.AppendInt(g.b, int64(n), 10) }

func heur(chars int) int { return (chars + 3) / 4 }

func (g *agentGen) contextTokens() int { return g.ctxTok }

// add puts a message of chars UTF-16 units into the context.
func (g *agentGen) add(chars int) {
	g.ctx = append(g.ctx, chars)
	g.ctxTok += heur(chars)
}

// reset empties the context (a compaction).
func (g *agentGen) reset() { g.ctx, g.ctxTok = g.ctx[:0], 0 }

func units(s string) int { u, _, _ := measure(s); return u }

// toolCall is one generated call: its JSON arguments (JSON.stringify form)
// and result.
type toolCall struct {
	id, name, args, result string
}

func (g *agentGen) makeCall(prefix string) toolCall {
	var tc toolCall
	tc.id = prefix + hexString(g.r, 24)
	switch g.r.IntN(3) {
	case 0:
		p := goPath(g.r)
		tc.name = "Read"
		tc.args = `{"file_path":` + string(formats.AppendString(nil, "/home/dev/acme/"+p)) + `}`
		tc.result = slice(g.r, g.c.code, g.c.codeLines, g.size())
	case 1:
		tc.name = "Bash"
		cmd := "go test ./" + goPath(g.r)
		tc.args = `{"command":` + string(formats.AppendString(nil, cmd)) + `,"timeout":120000}`
		tc.result = g.c.tests[g.r.IntN(len(g.c.tests))]
	default:
		tc.name = "Grep"
		tc.args = `{"pattern":"func ` + ident(g.r, true) + `","path":"."}`
		tc.result = slice(g.r, g.c.grep, g.c.grepLines, g.size())
	}
	return tc
}

func (g *agentGen) size() int {
	return g.o.ToolResultBytes/2 + g.r.IntN(g.o.ToolResultBytes)
}

func (g *agentGen) prose(n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(g.c.sentences[g.r.IntN(len(g.c.sentences))])
	}
	return sb.String()
}

func (g *agentGen) compactAt(turn int) bool {
	if g.o.Compactions == 0 || turn == 0 {
		return false
	}
	if g.o.TargetBytes > 0 {
		due := g.compact.due(float64(g.written()) / float64(g.o.TargetBytes))
		if due {
			g.compact.done++
		}
		return due
	}
	every := max(2, g.o.Turns/(g.o.Compactions+1))
	return turn%every == 0 && turn/every <= g.o.Compactions
}

// GenerateClaudeCode writes a Claude Code transcript.
func GenerateClaudeCode(w io.Writer, o AgentOptions) (*AgentResult, error) {
	g := newAgentGen(w, o)
	session := g.uuid()
	cwd := "/home/dev/acme"
	model := "claude-sonnet-4-5-20250929"
	g.res.Model = model
	base := func(typ, uuid, parent string, side bool) {
		g.b = append(g.b, `{"parentUuid":`...)
		if parent == "" {
			g.b = append(g.b, "null"...)
		} else {
			g.str(parent)
		}
		g.b = append(g.b, `,"isSidechain":false,"userType":"external","cwd":`...)
		g.str(cwd)
		g.kv("sessionId")
		g.str(session)
		g.b = append(g.b, `,"version":"2.1.39","gitBranch":"main","type":`...)
		g.str(typ)
		_ = side
	}
	tail := func(uuid string) {
		g.kv("uuid")
		g.str(uuid)
		g.kv("timestamp")
		g.str(g.tick())
		g.b = append(g.b, '}')
		g.emit()
	}
	progress := func(parent, hook string) string {
		u := g.uuid()
		base("progress", u, parent, false)
		g.b = append(g.b, `,"data":{"type":"hook_progress","hookEvent":`...)
		g.str(hook)
		g.b = append(g.b, `,"hookName":"PostToolUse:Bash","command":"callback"},"parentToolUseID":"toolu_x","toolUseID":"toolu_x"`...)
		tail(u)
		return u
	}
	// file-history-snapshot first, then hook progress lines that are links
	// of the chain (Claude Code 2.1.38 parents the first user line on them).
	g.b = append(g.b, `{"type":"file-history-snapshot","messageId":"`...)
	g.b = append(g.b, g.uuid()...)
	g.b = append(g.b, `","snapshot":{"trackedFileBackups":{}},"isSnapshotUpdate":false}`...)
	g.emit()
	last := progress("", "SessionStart")
	last = progress(last, "SessionStart")
	prevUsage := 0
	for turn := 0; g.more(turn); turn++ {
		if g.compactAt(turn) {
			// /compact: boundary (a new root) + the summary as a user line.
			b := g.uuid()
			g.b = append(g.b, `{"parentUuid":null,"logicalParentUuid":`...)
			g.str(last)
			g.b = append(g.b, `,"isSidechain":false,"userType":"external","cwd":`...)
			g.str(cwd)
			g.kv("sessionId")
			g.str(session)
			g.b = append(g.b, `,"version":"2.1.39","gitBranch":"main","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false`...)
			g.b = append(g.b, `,"level":"info","compactMetadata":{"trigger":"manual","preTokens":`...)
			g.num(g.sysTok + g.contextTokens())
			g.b = append(g.b, '}')
			tail(b)
			summary := "This session is being continued from a previous conversation. Summary: " + g.prose(6)
			u := g.uuid()
			base("user", u, b, false)
			g.b = append(g.b, `,"message":{"role":"user","content":`...)
			g.str(summary)
			g.b = append(g.b, `},"isVisibleInTranscriptOnly":true,"isCompactSummary":true`...)
			tail(u)
			g.reset()
			g.add(units(summary))
			last = u
			prevUsage = 0
		}
		// The user's prompt.
		text := g.prose(1 + g.r.IntN(3))
		if turn == 0 && g.o.Fact != "" {
			text += " " + g.o.Fact
		}
		u := g.uuid()
		base("user", u, last, false)
		g.b = append(g.b, `,"message":{"role":"user","content":`...)
		g.str(text)
		g.b = append(g.b, `},"thinkingMetadata":{"maxThinkingTokens":31999},"todos":[],"permissionMode":"default"`...)
		tail(u)
		if turn == 0 && g.o.Fact != "" {
			g.res.FactLine = g.line
		}
		g.add(units(text))
		last = u
		if g.r.IntN(4) == 0 {
			g.b = append(g.b, `{"type":"queue-operation","operation":"enqueue","timestamp":"`...)
			g.b = append(g.b, g.tick()...)
			g.b = append(g.b, `","sessionId":`...)
			g.str(session)
			g.b = append(g.b, `,"content":"queued note"}`...)
			g.emit()
		}
		calls := g.r.IntN(g.o.ToolCallsPerTurn + 1)
		for step := 0; ; step++ {
			n := 0
			if calls > 0 {
				n = 1 + g.r.IntN(min(calls, g.o.ParallelToolCalls))
				calls -= n
			}
			// One assistant message, one line per block.
			msgID := "msg_01" + hexString(g.r, 22)
			var blocks []string // encoded blocks
			chars := 0
			if g.o.Thinking {
				th := g.prose(2)
				blocks = append(blocks, `{"type":"thinking","thinking":`+string(formats.AppendString(nil, th))+`,"signature":"`+hexString(g.r, 40)+`"}`)
				chars += units(th)
			}
			var said string
			if n == 0 {
				said = g.prose(2 + g.r.IntN(4))
			} else if g.r.IntN(2) == 0 {
				said = "Let me look at that."
			}
			if said != "" {
				blocks = append(blocks, `{"type":"text","text":`+string(formats.AppendString(nil, said))+`}`)
				chars += units(said)
			}
			var tcs []toolCall
			for i := 0; i < n; i++ {
				tc := g.makeCall("toolu_01")
				tcs = append(tcs, tc)
				blocks = append(blocks, `{"type":"tool_use","id":"`+tc.id+`","name":"`+tc.name+`","input":`+tc.args+`,"caller":{"type":"direct"}}`)
				chars += units(tc.name) + units(tc.args)
			}
			if len(blocks) == 0 {
				said = "Done."
				blocks = append(blocks, `{"type":"text","text":"Done."}`)
				chars += 5
			}
			// Usage: what this request carried (system + context so far).
			ctxNow := g.sysTok + g.contextTokens()
			cacheRead := min(prevUsage, ctxNow-3)
			cacheCreate := ctxNow - 3 - cacheRead
			g.usage = 3 + cacheCreate + cacheRead
			prevUsage = ctxNow
			blockUUID := make([]string, len(blocks))
			for i, blk := range blocks {
				bu := g.uuid()
				blockUUID[i] = bu
				base("assistant", bu, last, false)
				_ = 0
				// base wrote type before message; Claude Code writes message first,
				// key order does not matter to readers.
				g.b = append(g.b, `,"message":{"model":`...)
				g.str(model)
				g.b = append(g.b, `,"id":"`...)
				g.b = append(g.b, msgID...)
				g.b = append(g.b, `","type":"message","role":"assistant","content":[`...)
				g.b = append(g.b, blk...)
				g.b = append(g.b, `],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":`...)
				g.num(cacheCreate)
				g.b = append(g.b, `,"cache_read_input_tokens":`...)
				g.num(cacheRead)
				g.b = append(g.b, `,"output_tokens":`...)
				out := 12
				if i == len(blocks)-1 {
					out = heur(chars) + 7
				}
				g.num(out)
				g.b = append(g.b, `,"service_tier":"standard"}},"requestId":"req_011C`...)
				g.b = append(g.b, hexString(g.r, 16)...)
				g.b = append(g.b, '"')
				tail(bu)
				last = bu
			}
			g.add(chars)
			if n == 0 {
				break
			}
			// Progress lines hang off the tool_use blocks; each result hangs
			// off its own call's block, answered last-first as in real files.
			firstTool := len(blocks) - n
			for i := n - 1; i >= 0; i-- {
				progress(blockUUID[firstTool+i], "PostToolUse")
			}
			for i := n - 1; i >= 0; i-- {
				tc := tcs[i]
				ru := g.uuid()
				base("user", ru, blockUUID[firstTool+i], false)
				g.b = append(g.b, `,"message":{"role":"user","content":[{"tool_use_id":"`...)
				g.b = append(g.b, tc.id...)
				g.b = append(g.b, `","type":"tool_result","content":`...)
				g.str(tc.result)
				g.b = append(g.b, `,"is_error":false}]},"toolUseResult":{"stdout":`...)
				g.str(tc.result)
				g.b = append(g.b, `,"stderr":"","interrupted":false},"sourceToolAssistantUUID":`...)
				g.str(blockUUID[firstTool+i])
				tail(ru)
				g.add(units(tc.result))
				last = ru
			}
		}
		// Hook summary and turn duration: chain links, not messages.
		s := g.uuid()
		base("system", s, last, false)
		g.b = append(g.b, `,"subtype":"stop_hook_summary","hookCount":1,"hookInfos":[],"hookErrors":[],"preventedContinuation":false,"stopReason":"","hasOutput":true,"level":"suggestion"`...)
		tail(s)
		last = s
		g.res.UsageTokens = g.usage
	}
	if err := g.w.Flush(); err != nil {
		return nil, err
	}
	g.res.Lines, g.res.Bytes = g.line, g.cw.n
	g.res.ContextMessages, g.res.ContextTokens = len(g.ctx), g.contextTokens()
	return &g.res, nil
}

// GenerateCodex writes a Codex CLI rollout (Legacy: the 2025 shape).
func GenerateCodex(w io.Writer, o AgentOptions) (*AgentResult, error) {
	if o.Legacy {
		o.Compactions = 0 // the 2025 shape has no compacted records
	}
	g := newAgentGen(w, o)
	id := g.uuid()
	model := "gpt-5.2-codex"
	window := 258400
	g.res.Model = model
	if !o.Legacy {
		g.res.Window = window
	}
	var ts string
	env := func(typ string) {
		ts = g.tick()
		if o.Legacy {
			return
		}
		g.b = append(g.b, `{"timestamp":"`...)
		g.b = append(g.b, ts...)
		g.b = append(g.b, `","type":"`...)
		g.b = append(g.b, typ...)
		g.b = append(g.b, `","payload":`...)
	}
	end := func() {
		if !o.Legacy {
			g.b = append(g.b, '}')
		}
		g.emit()
	}
	instructions := "You are Codex, a coding agent. " + g.prose(8)
	if o.Legacy {
		g.b = append(g.b, `{"id":`...)
		g.str(id)
		g.b = append(g.b, `,"timestamp":"`...)
		g.b = append(g.b, g.tick()...)
		g.b = append(g.b, `","instructions":`...)
		g.str(instructions)
		g.b = append(g.b, '}')
		g.emit()
	} else {
		env("session_meta")
		g.b = append(g.b, `{"id":`...)
		g.str(id)
		g.b = append(g.b, `,"timestamp":"`...)
		g.b = append(g.b, ts...)
		g.b = append(g.b, `","cwd":"/home/dev/acme","originator":"codex_cli_rs","cli_version":"0.105.0","source":"cli","model_provider":"openai","base_instructions":{"text":`...)
		g.str(instructions)
		g.b = append(g.b, `}}`...)
		end()
	}
	state := func() {
		if o.Legacy {
			g.b = append(g.b, `{"record_type":"state"}`...)
			g.emit()
		}
	}
	message := func(role, kind, text string) {
		env("response_item")
		g.b = append(g.b, `{"type":"message","role":"`...)
		g.b = append(g.b, role...)
		g.b = append(g.b, `","content":[{"type":"`...)
		g.b = append(g.b, kind...)
		g.b = append(g.b, `","text":`...)
		g.str(text)
		g.b = append(g.b, `}]}`...)
		end()
	}
	event := func(typ, field, text string) {
		if o.Legacy {
			return
		}
		env("event_msg")
		g.b = append(g.b, `{"type":"`...)
		g.b = append(g.b, typ...)
		g.b = append(g.b, `","`...)
		g.b = append(g.b, field...)
		g.b = append(g.b, `":`...)
		g.str(text)
		g.b = append(g.b, '}')
		end()
	}
	total := 0
	tokenCount := func(chars int) {
		if o.Legacy {
			return
		}
		input := g.sysTok + g.contextTokens()
		out := heur(chars) + 5
		g.usage = input + out
		total += g.usage
		env("event_msg")
		g.b = append(g.b, `{"type":"token_count","info":{"total_token_usage":{"input_tokens":`...)
		g.num(total)
		g.b = append(g.b, `,"cached_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0,"total_tokens":`...)
		g.num(total)
		g.b = append(g.b, `},"last_token_usage":{"input_tokens":`...)
		g.num(input)
		g.b = append(g.b, `,"cached_input_tokens":`...)
		g.num(input / 2)
		g.b = append(g.b, `,"output_tokens":`...)
		g.num(out)
		g.b = append(g.b, `,"reasoning_output_tokens":0,"total_tokens":`...)
		g.num(g.usage)
		g.b = append(g.b, `},"model_context_window":`...)
		g.num(window)
		g.b = append(g.b, `},"rate_limits":null}`...)
		end()
	}
	dev := "<permissions instructions>sandbox_mode is workspace-write. " + g.prose(3) + "</permissions instructions>"
	message("developer", "input_text", dev)
	g.add(units(dev))
	envc := "<environment_context>\n  <cwd>/home/dev/acme</cwd>\n  <shell>bash</shell>\n</environment_context>"
	message("user", "input_text", envc)
	g.add(units(envc))
	var users []string
	for turn := 0; g.more(turn); turn++ {
		if g.compactAt(turn) {
			// Remote compaction: the history is replaced by the recent user
			// messages and an opaque compaction item.
			keep := users[max(0, len(users)-2):]
			env("compacted")
			g.b = append(g.b, `{"message":"","replacement_history":[`...)
			g.reset()
			for i, u := range keep {
				if i > 0 {
					g.b = append(g.b, ',')
				}
				g.b = append(g.b, `{"type":"message","role":"user","content":[{"type":"input_text","text":`...)
				g.str(u)
				g.b = append(g.b, `}]}`...)
				g.add(units(u))
			}
			if len(keep) > 0 {
				g.b = append(g.b, ',')
			}
			g.b = append(g.b, `{"type":"compaction","encrypted_content":"gAAAA`...)
			g.b = append(g.b, hexString(g.r, 200)...)
			g.b = append(g.b, `"}]}`...)
			end()
			event("context_compacted", "note", "")
		}
		if !o.Legacy {
			env("turn_context")
			g.b = append(g.b, `{"turn_id":"t`...)
			g.num(turn)
			g.b = append(g.b, `","cwd":"/home/dev/acme","approval_policy":"never","model":"`...)
			g.b = append(g.b, model...)
			g.b = append(g.b, `","summary":"auto"}`...)
			end()
		}
		text := g.prose(1 + g.r.IntN(3))
		if turn == 0 && g.o.Fact != "" {
			text += " " + g.o.Fact
		}
		message("user", "input_text", text)
		if turn == 0 && g.o.Fact != "" {
			g.res.FactLine = g.line
		}
		event("user_message", "message", text)
		state()
		users = append(users, text)
		g.add(units(text))
		calls := g.r.IntN(g.o.ToolCallsPerTurn + 1)
		for {
			n := 0
			if calls > 0 {
				n = 1 + g.r.IntN(min(calls, g.o.ParallelToolCalls))
				calls -= n
			}
			chars := 0
			if g.o.Thinking || g.r.IntN(2) == 0 {
				th := "**Planning**\n\n" + g.prose(2)
				event("agent_reasoning", "text", th)
				env("response_item")
				g.b = append(g.b, `{"type":"reasoning","summary":[{"type":"summary_text","text":`...)
				g.str(th)
				g.b = append(g.b, `}],"content":null,"encrypted_content":"gAAAA`...)
				g.b = append(g.b, hexString(g.r, 120)...)
				g.b = append(g.b, `"}`...)
				end()
				chars += units(th)
			}
			var tcs []toolCall
			for i := 0; i < n; i++ {
				tc := g.makeCall("call_")
				tcs = append(tcs, tc)
				env("response_item")
				g.b = append(g.b, `{"type":"function_call","name":"`...)
				g.b = append(g.b, tc.name...)
				g.b = append(g.b, `","arguments":`...)
				g.str(tc.args)
				g.b = append(g.b, `,"call_id":"`...)
				g.b = append(g.b, tc.id...)
				g.b = append(g.b, `"}`...)
				end()
				chars += units(tc.name) + units(tc.args)
			}
			if n == 0 {
				said := g.prose(2 + g.r.IntN(4))
				event("agent_message", "message", said)
				message("assistant", "output_text", said)
				chars += units(said)
			}
			tokenCount(chars)
			g.add(chars)
			state()
			if n == 0 {
				break
			}
			for _, tc := range tcs {
				env("response_item")
				g.b = append(g.b, `{"type":"function_call_output","call_id":"`...)
				g.b = append(g.b, tc.id...)
				g.b = append(g.b, `","output":`...)
				g.str(tc.result)
				g.b = append(g.b, '}')
				end()
				g.add(units(tc.result))
			}
		}
		event("task_complete", "last_agent_message", "")
		g.res.UsageTokens = g.usage
	}
	if err := g.w.Flush(); err != nil {
		return nil, err
	}
	g.res.Lines, g.res.Bytes = g.line, g.cw.n
	g.res.ContextMessages, g.res.ContextTokens = len(g.ctx), g.contextTokens()
	if o.Legacy {
		g.res.UsageTokens = 0
	}
	return &g.res, nil
}
