package checkpoint

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/facts"
)

// Build assembles a checkpoint mechanically (docs/design/checkpoints.md): pure string
// and structure operations on the messages, language-agnostic heuristics,
// the caps. CheckpointID and PreviousCheckpoint are left for the
// Store to assign.
func Build(in Input) *Checkpoint {
	f := newFolder()
	for i := range in.Messages {
		if m := &in.Messages[i]; m.Role == "toolResult" {
			f.result(m.ToolCallID, m.ToolName, m.IsError)
		}
	}
	for i := range in.Messages {
		f.add(&in.Messages[i])
	}
	for _, c := range in.Compactions {
		f.compaction(c)
	}
	return f.checkpoint(in)
}

// folder is the builder: it reads a branch's messages once, in order
// (root → leaf), and keeps only what the checkpoint shows or decides on —
// the current and previous turns, the first user message, the newest
// pivots, decisions, distinct paths, tools, task items and failures — so
// its memory does not grow with the number of messages (every message of
// a 1 GB branch held to the end was most of a 1.7 GB peak).
type folder struct {
	// Known before the fold, from the whole branch (result): a failed
	// result voids its call's paths wherever it is, and only the calls of
	// results without a tool name need their names remembered.
	failed   map[string]bool
	needName map[string]bool
	names    map[string]string

	n    int     // conversation messages read
	tail Message // the last one

	// Turns: a user message with text and what follows it until the next.
	cur, prev turn    // the current turn; the previous user turn
	first     string  // the text of the first user message with text
	users     int     // user turns
	topic     string  // the last user message that names a task (facts.IsAsk)
	pivots    []pivot // the newest user turns after a long answer
	decisions []dec
	decided   map[string]int // decision text → index in decisions

	// The trailing assistant message, while only tool results follow it
	// (trail points to trailMsg or is nil), and the calls answered since.
	trail     *Message
	trailMsg  Message
	trailDone map[string]bool
	lastCall  *ToolCall // nil or &lastCallV: a copy per call was garbage
	lastCallV ToolCall

	read, mod, compRead, compMod recency
	tools                        map[string]bool

	tasks     map[string]bool // task-list item → still open
	taskOrder []string
	lastFail  map[string]*fail
	recovered []string
	seenRec   map[string]bool
	seenFail  map[string]bool // failures the messages show, recorded or not
}

// turn is one user message and what the agent did until the next one.
// The messages are copies held in the turn, not pointers to copies: a
// copy of every answer on the heap was a seventh of what folding a 1 GB
// branch allocated.
type turn struct {
	user      Message // hasUser false for activity before the first user message
	answer    Message // the last assistant message with text in the turn
	hasUser   bool
	hasAnswer bool
	n         int // messages in the turn
}

// lastAnswer is the turn's answer, nil when it has none.
func (t *turn) lastAnswer() *Message {
	if !t.hasAnswer {
		return nil
	}
	return &t.answer
}

// pivot is a user turn (its index among user turns) after a long answer.
type pivot struct {
	idx  int
	gist string
}

type dec struct {
	what string
	when time.Time
}

type fail struct{ tool, err string }

func newFolder() *folder {
	return &folder{failed: map[string]bool{}, needName: map[string]bool{}, names: map[string]string{},
		decided: map[string]int{}, tools: map[string]bool{}, tasks: map[string]bool{},
		lastFail: map[string]*fail{}, seenRec: map[string]bool{}, seenFail: map[string]bool{}}
}

// result tells the folder, before the fold, of a tool result on the branch.
func (f *folder) result(callID, toolName string, isError bool) {
	if isError {
		f.failed[callID] = true
	}
	if toolName == "" {
		f.needName[callID] = true
	}
}

// compaction adds a compaction's file lists (older than any message's).
func (f *folder) compaction(c CompactionInfo) {
	for _, p := range c.ReadFiles {
		f.compRead.Add(p)
	}
	for _, p := range c.ModifiedFiles {
		f.compMod.Add(p)
	}
}

// add folds in the next message of the branch. What is not the agent's
// conversation (our own resume messages, other extensions' custom
// messages) is skipped. m is not retained: what is kept is copied.
func (f *folder) add(m *Message) {
	switch m.Role {
	case "user", "assistant", "toolResult", "bashExecution":
	default:
		return
	}
	f.n++
	f.tail = *m
	f.turn(m)
	f.trailing(m)
	f.calls(m)
	f.openItems(m)
}

// turn cuts turns at user messages with text, recording decisions (a
// short reply to a long answer) and pivots (a user turn after one).
func (f *folder) turn(m *Message) {
	if m.Role == "user" && strings.TrimSpace(m.Text) != "" {
		if f.cur.hasUser || f.cur.n > 0 {
			if what, ok := decisionAt(m, f.cur.lastAnswer()); ok {
				f.decide(what, m.Time)
			}
			if f.users > 0 && f.cur.hasAnswer && runeLen(f.cur.answer.Text) > longAgentChars {
				f.pivots = append(f.pivots, pivot{idx: f.users, gist: gist(m.Text, GistChars)})
				// The thread shows at most MaxExchanges pivots, none of
				// the last two user turns.
				if len(f.pivots) > MaxExchanges+2 {
					f.pivots = append(f.pivots[:0], f.pivots[1:]...)
				}
			}
			if f.cur.hasUser {
				f.prev = f.cur
			}
		}
		if f.users == 0 {
			f.first = m.Text
		}
		f.cur = turn{user: *m, hasUser: true}
		f.users++
		if facts.IsAsk(m.Text) {
			f.topic = m.Text // the last message that names a task
		}
	}
	f.cur.n++
	if m.Role == "assistant" && strings.TrimSpace(m.Text) != "" {
		f.cur.answer, f.cur.hasAnswer = *m, true
	}
}

// decide records a decision. Of the same words only the copy sorted first
// is shown (decisions are sorted by time, stably): a repeat is kept only
// when it is earlier, in place of the one before (blanked: never shown).
func (f *folder) decide(what string, when time.Time) {
	if i, ok := f.decided[what]; ok {
		if !when.Before(f.decisions[i].when) {
			return
		}
		f.decisions[i].what = ""
	}
	f.decided[what] = len(f.decisions)
	f.decisions = append(f.decisions, dec{what: what, when: when})
}

// trailing tracks the last assistant message and the results after it,
// for a call that never returned (pendingCall).
func (f *folder) trailing(m *Message) {
	switch m.Role {
	case "assistant":
		// One copy and one set, reused: most messages are an assistant's.
		f.trailMsg = *m
		f.trail = &f.trailMsg
		if f.trailDone == nil {
			f.trailDone = map[string]bool{}
		}
		clear(f.trailDone)
	case "toolResult":
		if f.trail != nil {
			f.trailDone[m.ToolCallID] = true
		}
	default:
		f.trail = nil
	}
	if n := len(m.ToolCalls); n > 0 {
		f.lastCallV = m.ToolCalls[n-1]
		f.lastCall = &f.lastCallV
	}
}

// calls records the tool names and the paths of calls whose result did
// not fail.
func (f *folder) calls(m *Message) {
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		if f.needName[tc.ID] {
			f.names[tc.ID] = tc.Name
		}
		if n := strings.TrimSpace(Clean(tc.Name)); n != "" {
			f.tools[n] = true
		}
		if f.failed[tc.ID] {
			continue
		}
		c := tc.facts().of(tc.Name)
		to := &f.read
		if c.modify {
			to = &f.mod
		}
		for _, p := range c.paths {
			to.Add(p)
		}
		for _, p := range c.writes {
			f.mod.Add(p)
		}
	}
}

// checkpoint is the checkpoint of what was folded, with in's metadata and
// recorded state.
func (f *folder) checkpoint(in Input) *Checkpoint {
	cp := &Checkpoint{Schema: Schema, SchemaVersion: SchemaVersion}
	cp.Meta.SessionKey = in.SessionKey
	cp.Meta.SessionFile = in.SessionFile
	cp.Meta.SessionID = in.SessionID
	cp.Meta.CreatedAt = in.Now.UTC().Format(time.RFC3339)
	cp.Meta.Trigger = in.Trigger
	if cp.Meta.Trigger == "" {
		cp.Meta.Trigger = TriggerManual
	}
	cp.Meta.CompactionCount = in.CompactionCount
	cp.Meta.TokenUsage = TokenUsage{InputTokens: in.InputTokens, ContextWindow: in.ContextWindow}
	if in.ContextWindow > 0 {
		u := float64(in.InputTokens) / float64(in.ContextWindow)
		cp.Meta.TokenUsage.Utilization = math.Round(u*10000) / 10000
	}
	cp.Meta.Channel, cp.Meta.AgentID = channelAndAgent(in.SessionKey, in.SessionFile)

	st := in.State
	if st == nil {
		st = &State{}
	}
	f.working(cp, in, st)
	cp.Decisions = f.decisionsWith(st)
	cp.Resources = f.resources(st)
	cp.Thread = f.thread()
	cp.OpenItems, cp.Learnings = f.openAndLearnings(st)
	return cp
}

func (f *folder) working(cp *Checkpoint, in Input, st *State) {
	w := &cp.Working
	if f.topic != "" {
		w.Topic = gist(f.topic, TopicChars)
	} else if f.users > 0 && st.Thread.Topic == "" {
		w.Topic = gist(f.cur.user.Text, TopicChars)
	} else if st.Thread.Topic != "" {
		w.Topic = gist(st.Thread.Topic, TopicChars)
	}
	if f.n == 0 {
		w.Status = StatusIdle
		w.NextAction = "No conversation yet; wait for the user's first message."
		return
	}
	tail := f.tail
	pending := f.pendingCall()
	switch {
	case pending != nil:
		w.Interrupted = true
		w.LastToolCall = &ToolCallRef{Name: pending.Name, ParamsSummary: paramsSummary(pending.Args)}
		w.Status = StatusInProgress
		w.NextAction = fmt.Sprintf("The %q call never returned a result: check whether it ran, then continue with: %s", pending.Name, orNone(w.Topic))
	case in.SplitTurn:
		w.Interrupted = true
		if tc := f.lastCall; tc != nil {
			w.LastToolCall = &ToolCallRef{Name: tc.Name, ParamsSummary: paramsSummary(tc.Args)}
		}
		w.Status = StatusInProgress
		w.NextAction = "Compaction cut this turn in the middle; resume it: " + orNone(w.Topic)
	case tail.Role == "user" || tail.Role == "bashExecution":
		w.Status = StatusInProgress
		w.NextAction = "Answer the user's last message: " + gist(f.lastUserText(), GistChars)
	case tail.Role == "toolResult" || (tail.Role == "assistant" && tail.StopReason == "toolUse"):
		w.Status = StatusInProgress
		name := tail.ToolName
		if name == "" && len(tail.ToolCalls) > 0 {
			name = tail.ToolCalls[len(tail.ToolCalls)-1].Name
		}
		w.NextAction = fmt.Sprintf("Continue the task after the last %q result: %s", name, orNone(w.Topic))
	case tail.Role == "assistant" && (tail.StopReason == "aborted" || tail.StopReason == "error"):
		w.Status = StatusWaiting
		w.NextAction = fmt.Sprintf("The last reply ended with %q; ask the user whether to retry: %s", tail.StopReason, orNone(w.Topic))
	default:
		w.Status = StatusWaiting
		w.NextAction = "Wait for the user's reply to: " + orNone(gist(tail.Text, GistChars))
	}
	if !w.Interrupted && w.Status == StatusWaiting && !tail.Time.IsZero() && in.Now.Sub(tail.Time) > idleAfter {
		w.Status = StatusIdle
		w.NextAction = fmt.Sprintf("Idle since %s; last reply: %s", tail.Time.UTC().Format(time.RFC3339), orNone(gist(tail.Text, GistChars)))
	}
}

// shownCalls are the calls whose arguments the checkpoint may show: the
// trailing message's (one may never have returned) and the last one.
func (f *folder) shownCalls() []*ToolCall {
	var calls []*ToolCall
	if f.trail != nil {
		for i := range f.trail.ToolCalls {
			calls = append(calls, &f.trail.ToolCalls[i])
		}
	}
	if f.lastCall != nil {
		calls = append(calls, f.lastCall)
	}
	return calls
}

// pendingCall is a tool call of the trailing assistant message with no
// result after it (not for aborted/error replies: pi drops those anyway).
func (f *folder) pendingCall() *ToolCall {
	m := f.trail
	if m == nil || m.StopReason == "aborted" || m.StopReason == "error" {
		return nil
	}
	for j := range m.ToolCalls {
		if !f.trailDone[m.ToolCalls[j].ID] {
			return &m.ToolCalls[j]
		}
	}
	return nil
}

// lastUserText is the last user message with text: the current turn's.
func (f *folder) lastUserText() string {
	if f.users == 0 {
		return ""
	}
	return f.cur.user.Text
}

// decisionsWith merges the recorded decisions into the folded ones in
// time order; the newest MaxDecisions are kept, numbered from the session
// start so ids stay stable across checkpoints.
func (f *folder) decisionsWith(st *State) []Decision {
	all := append([]dec{}, f.decisions...)
	for _, d := range st.Decisions {
		t, _ := time.Parse(time.RFC3339, d.When)
		all = append(all, dec{what: d.What, when: t})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].when.Before(all[j].when) })
	seen := map[string]bool{}
	var out []Decision
	for _, d := range all {
		w := oneLine(d.what, 400)
		if w == "" || seen[w] {
			continue
		}
		seen[w] = true
		when := ""
		if !d.when.IsZero() {
			when = d.when.UTC().Format(time.RFC3339)
		}
		out = append(out, Decision{ID: fmt.Sprintf("d%d", len(out)+1), What: w, When: when})
	}
	if len(out) > MaxDecisions {
		out = out[len(out)-MaxDecisions:]
	}
	return out
}

// thread: summary = first user message + " ... " + last user message (100
// characters each); key exchanges = the first user message, user messages
// that follow a long agent answer (pivots) and the last two user/agent
// pairs, at most MaxExchanges, 120-character gists.
func (f *folder) thread() Thread {
	var th Thread
	if f.users == 0 {
		return th
	}
	th.Summary = gist(f.first, SummaryEndChars)
	if f.users > 1 {
		th.Summary += " ... " + gist(f.cur.user.Text, SummaryEndChars)
	}
	// The tail: last two pairs (user + agent answer).
	last := []turn{f.cur}
	if f.users > 1 {
		last = []turn{f.prev, f.cur}
	}
	var tail []Exchange
	for _, t := range last {
		tail = append(tail, Exchange{Role: "user", Gist: gist(t.user.Text, GistChars)})
		if t.hasAnswer {
			tail = append(tail, Exchange{Role: "agent", Gist: gist(t.answer.Text, GistChars)})
		}
	}
	tailFrom := max(0, f.users-2)
	var head []Exchange
	if tailFrom > 0 {
		head = append(head, Exchange{Role: "user", Gist: gist(f.first, GistChars)})
	}
	// Pivots between the first and the tail, newest kept when over the cap.
	var pivots []Exchange
	for _, p := range f.pivots {
		if p.idx < tailFrom {
			pivots = append(pivots, Exchange{Role: "user", Gist: p.gist})
		}
	}
	room := max(0, MaxExchanges-len(head)-len(tail))
	if len(pivots) > room {
		pivots = pivots[len(pivots)-room:]
	}
	th.KeyExchanges = append(append(head, pivots...), tail...)
	if len(th.KeyExchanges) > MaxExchanges {
		th.KeyExchanges = th.KeyExchanges[len(th.KeyExchanges)-MaxExchanges:]
	}
	return th
}

// resources lists files read and modified from tool-call paths (failed
// calls do not count) before the recorded state's, before the
// compactions' file lists (older), and the deduplicated tool names.
func (f *folder) resources(st *State) Resources {
	var read, mod recency
	for _, p := range st.Resources.FilesRead {
		read.Add(p)
	}
	for _, p := range st.Resources.FilesModified {
		mod.Add(p)
	}
	tools := map[string]bool{}
	for _, t := range st.Resources.ToolsUsed {
		tools[Clean(t)] = true
	}
	for t := range f.tools {
		tools[t] = true
	}
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > MaxTools {
		names = names[:MaxTools]
	}
	return Resources{FilesRead: nonNil(newest(MaxFiles, &f.read, &read, &f.compRead)),
		FilesModified: nonNil(newest(MaxFiles, &f.mod, &mod, &f.compMod)), ToolsUsed: names}
}

// openItems finds, mechanically, task-list items ("- [ ] …") the agent
// wrote, tool failures, and failures a later call of the same tool got
// past (what went wrong and was worked around). The markup is
// language-neutral.
func (f *folder) openItems(m *Message) {
	if m.Role == "assistant" && mayHaveCheckbox(m.Text) {
		for _, sm := range checkbox().FindAllStringSubmatch(m.Text, -1) {
			item := oneLine(sm[2], 200)
			if _, ok := f.tasks[item]; !ok {
				f.taskOrder = append(f.taskOrder, item)
			}
			f.tasks[item] = sm[1] == " "
		}
	}
	if m.Role != "toolResult" {
		return
	}
	tool := m.ToolName
	if tool == "" {
		tool = f.names[m.ToolCallID]
	}
	if m.IsError {
		f.lastFail[tool] = &fail{tool: tool, err: firstLine(m.Text)}
		f.seenFail[failKey(tool, firstLine(m.Text))] = true
	} else if fl := f.lastFail[tool]; fl != nil {
		r := fmt.Sprintf("%q failed, then worked on retry: %s", fl.tool, orNone(gist(fl.err, GistChars)))
		if !f.seenRec[r] { // a repeat changes nothing: dedupeCap keeps the first
			f.seenRec[r] = true
			f.recovered = append(f.recovered, r)
		}
		delete(f.lastFail, tool)
	}
}

// openAndLearnings: open items are the task-list items never ticked and
// the tools whose last call failed; learnings the failures worked around;
// plus what the state recorded.
func (f *folder) openAndLearnings(st *State) (open, learnings []string) {
	for _, t := range f.taskOrder {
		if f.tasks[t] {
			open = append(open, t)
		}
	}
	var tools []string
	for t := range f.lastFail {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		open = append(open, fmt.Sprintf("Last %q call failed: %s", t, orNone(gist(f.lastFail[t].err, GistChars))))
	}
	open = dedupeCap(append(append([]string{}, st.OpenItems...), open...), MaxOpenItems)
	recovered := append([]string{}, f.recovered...)
	for _, e := range st.Thread.Errors {
		if f.seenFail[failKey(e.Tool, e.Error)] {
			continue // already an open item or a "then worked on retry" learning
		}
		recovered = append(recovered, fmt.Sprintf("%q failed: %s", e.Tool, orNone(gist(e.Error, GistChars))))
	}
	learnings = dedupeCap(append(append([]string{}, st.Learnings...), recovered...), MaxLearnings)
	return open, learnings
}

// recency is a set of strings ordered by when each was last added.
type recency struct {
	at map[string]int
	n  int
}

func (r *recency) Add(s string) {
	if r.at == nil {
		r.at = map[string]int{}
	}
	r.n++
	r.at[s] = r.n
}

// byRecency is r's items, most recent first.
func (r *recency) byRecency() []string {
	out := make([]string, 0, len(r.at))
	for s := range r.at {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return r.at[out[i]] > r.at[out[j]] })
	return out
}

// newest lists at most n items, most recent first, of sets given newest
// first: an item counts where it was added last.
func newest(n int, sets ...*recency) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range sets {
		for _, s := range r.byRecency() {
			if len(out) == n {
				return out
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}
