package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// CustomType marks the custom_message entries restore --append writes; the
// builder ignores them so a resume text never becomes the "topic".
const CustomType = "ctxtool.checkpoint"

// Thresholds of the structural heuristics (docs/design/checkpoints.md).
const (
	longAgentChars  = 500              // an agent answer this long is a likely decision point
	shortReplyChars = 50               // a user reply shorter than this after one is a decision
	idleAfter       = 30 * time.Minute // no activity for this long = idle
)

// Message is the part of one transcript message the builder reads. The
// transcript adapter fills it from the session's branch (root → leaf).
type Message struct {
	EntryID    string
	Role       string // user, assistant, toolResult, bashExecution, custom, …
	CustomType string
	Text       string // text blocks joined; thinking excluded
	ToolCalls  []ToolCall
	ToolCallID string // toolResult
	ToolName   string // toolResult
	IsError    bool   // toolResult
	StopReason string // assistant
	Time       time.Time
}

// ToolCall is one toolCall block of an assistant message.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// CompactionInfo is a compaction entry on the branch.
type CompactionInfo struct {
	ReadFiles, ModifiedFiles []string
}

// Input is everything Build needs; no model, no clock of its own.
type Input struct {
	SessionKey, SessionFile string
	// SessionID is the session header's id ("" without one).
	SessionID   string
	Trigger     string
	Messages    []Message // branch order, root → leaf
	Compactions []CompactionInfo
	// SplitTurn: the last compaction cut a turn and nothing followed it.
	SplitTurn       bool
	CompactionCount int
	InputTokens     int
	ContextWindow   int
	Now             time.Time
	State           *State // incremental state to bundle (may be nil)
}

// Build assembles a checkpoint mechanically (docs/design/checkpoints.md): pure string
// and structure operations on the messages, language-agnostic heuristics,
// the caps. CheckpointID and PreviousCheckpoint are left for the
// Store to assign.
func Build(in Input) *Checkpoint {
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

	msgs := conversation(in.Messages)
	st := in.State
	if st == nil {
		st = &State{}
	}
	turns := splitTurns(msgs)
	buildWorking(cp, msgs, turns, in, st)
	cp.Decisions = buildDecisions(turns, st)
	cp.Resources = buildResources(msgs, in.Compactions, st)
	cp.Thread = buildThread(turns)
	cp.OpenItems, cp.Learnings = buildOpenAndLearnings(msgs, st)
	return cp
}

// conversation drops what is not the agent's conversation: our own resume
// messages and other extensions' custom messages.
func conversation(in []Message) []Message {
	out := make([]Message, 0, len(in))
	for _, m := range in {
		switch m.Role {
		case "user", "assistant", "toolResult", "bashExecution":
			out = append(out, m)
		}
	}
	return out
}

// turn is one user message and what the agent did until the next one.
type turn struct {
	user   *Message // nil for activity before the first user message
	answer *Message // the last assistant message with text in the turn
	msgs   []Message
}

func splitTurns(msgs []Message) []turn {
	var turns []turn
	cur := turn{}
	for i := range msgs {
		m := &msgs[i]
		if m.Role == "user" && strings.TrimSpace(m.Text) != "" {
			if cur.user != nil || len(cur.msgs) > 0 {
				turns = append(turns, cur)
			}
			cur = turn{user: m}
		}
		cur.msgs = append(cur.msgs, *m)
		if m.Role == "assistant" && strings.TrimSpace(m.Text) != "" {
			cur.answer = m
		}
	}
	if cur.user != nil || len(cur.msgs) > 0 {
		turns = append(turns, cur)
	}
	return turns
}

func userTurns(turns []turn) []turn {
	var out []turn
	for _, t := range turns {
		if t.user != nil {
			out = append(out, t)
		}
	}
	return out
}

func buildWorking(cp *Checkpoint, msgs []Message, turns []turn, in Input, st *State) {
	w := &cp.Working
	uts := userTurns(turns)
	if len(uts) > 0 {
		w.Topic = gist(uts[len(uts)-1].user.Text, TopicChars)
	} else if st.Thread.Topic != "" {
		w.Topic = gist(st.Thread.Topic, TopicChars)
	}
	if len(msgs) == 0 {
		w.Status = StatusIdle
		w.NextAction = "No conversation yet; wait for the user's first message."
		return
	}
	tail := msgs[len(msgs)-1]
	pending := pendingCall(msgs)
	switch {
	case pending != nil:
		w.Interrupted = true
		w.LastToolCall = &ToolCallRef{Name: pending.Name, ParamsSummary: paramsSummary(pending.Args)}
		w.Status = StatusInProgress
		w.NextAction = fmt.Sprintf("The %q call never returned a result: check whether it ran, then continue with: %s", pending.Name, orNone(w.Topic))
	case in.SplitTurn:
		w.Interrupted = true
		if tc := lastCall(msgs); tc != nil {
			w.LastToolCall = &ToolCallRef{Name: tc.Name, ParamsSummary: paramsSummary(tc.Args)}
		}
		w.Status = StatusInProgress
		w.NextAction = "Compaction cut this turn in the middle; resume it: " + orNone(w.Topic)
	case tail.Role == "user" || tail.Role == "bashExecution":
		w.Status = StatusInProgress
		w.NextAction = "Answer the user's last message: " + gist(lastUserText(msgs), GistChars)
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

// pendingCall is a tool call of the trailing assistant message with no
// result after it (not for aborted/error replies: pi drops those anyway).
func pendingCall(msgs []Message) *ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != "assistant" {
			if m.Role == "toolResult" {
				continue
			}
			return nil
		}
		if m.StopReason == "aborted" || m.StopReason == "error" {
			return nil
		}
		done := map[string]bool{}
		for _, r := range msgs[i+1:] {
			if r.Role == "toolResult" {
				done[r.ToolCallID] = true
			}
		}
		for j := range m.ToolCalls {
			if !done[m.ToolCalls[j].ID] {
				return &m.ToolCalls[j]
			}
		}
		return nil
	}
	return nil
}

func lastCall(msgs []Message) *ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		if n := len(msgs[i].ToolCalls); n > 0 {
			return &msgs[i].ToolCalls[n-1]
		}
	}
	return nil
}

func lastUserText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.TrimSpace(msgs[i].Text) != "" {
			return msgs[i].Text
		}
	}
	return ""
}

// buildDecisions applies the structural heuristic: a short user
// reply right after a long agent answer is a decision. No keywords, so it
// works in any language. Recorded decisions from the state are merged in
// time order; the newest MaxDecisions are kept, numbered from the session
// start so ids stay stable across checkpoints.
func buildDecisions(turns []turn, st *State) []Decision {
	type dec struct {
		what string
		when time.Time
	}
	var all []dec
	for i := 1; i < len(turns); i++ {
		if what, ok := decisionAt(turns[i].user, turns[i-1].answer); ok {
			all = append(all, dec{what: what, when: turns[i].user.Time})
		}
	}
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

// decisionAt is the decision heuristic for one user message: reply is a
// short user message (under 50 characters) and answer the last agent
// answer with text before it (nil when the previous turn had none) and over
// 500 characters. It returns the decision's text. Both the builder and the
// incremental capture (capture.go) use it, so the same reply gives the same
// words and a recorded decision dedupes against the rebuilt one.
func decisionAt(reply, answer *Message) (string, bool) {
	if reply == nil || answer == nil {
		return "", false
	}
	r := strings.TrimSpace(reply.Text)
	if utf8.RuneCountInString(r) >= shortReplyChars || runeLen(answer.Text) <= longAgentChars {
		return "", false
	}
	return fmt.Sprintf("User replied %q to: %s", oneLine(r, shortReplyChars), gist(lastParagraph(answer.Text), GistChars)), true
}

// buildThread: summary = first user message + " ... " + last user
// message (100 characters each); key exchanges = the first user message,
// user messages that follow a long agent answer (pivots) and the last two
// user/agent pairs, at most MaxExchanges, 120-character gists.
func buildThread(turns []turn) Thread {
	uts := userTurns(turns)
	var th Thread
	if len(uts) == 0 {
		return th
	}
	first, last := uts[0], uts[len(uts)-1]
	th.Summary = gist(first.user.Text, SummaryEndChars)
	if len(uts) > 1 {
		th.Summary += " ... " + gist(last.user.Text, SummaryEndChars)
	}
	// The tail: last two pairs (user + agent answer).
	tailFrom := max(0, len(uts)-2)
	var tail []Exchange
	for _, t := range uts[tailFrom:] {
		tail = append(tail, Exchange{Role: "user", Gist: gist(t.user.Text, GistChars)})
		if t.answer != nil {
			tail = append(tail, Exchange{Role: "agent", Gist: gist(t.answer.Text, GistChars)})
		}
	}
	var head []Exchange
	if tailFrom > 0 {
		head = append(head, Exchange{Role: "user", Gist: gist(first.user.Text, GistChars)})
	}
	// Pivots between the first and the tail, newest kept when over the cap.
	var pivots []Exchange
	for i := 1; i < tailFrom; i++ {
		prev := previousAnswer(turns, uts[i].user)
		if prev != nil && runeLen(prev.Text) > longAgentChars {
			pivots = append(pivots, Exchange{Role: "user", Gist: gist(uts[i].user.Text, GistChars)})
		}
	}
	room := MaxExchanges - len(head) - len(tail)
	if room < 0 {
		room = 0
	}
	if len(pivots) > room {
		pivots = pivots[len(pivots)-room:]
	}
	th.KeyExchanges = append(append(head, pivots...), tail...)
	if len(th.KeyExchanges) > MaxExchanges {
		th.KeyExchanges = th.KeyExchanges[len(th.KeyExchanges)-MaxExchanges:]
	}
	return th
}

// previousAnswer is the answer of the turn before the one u starts.
func previousAnswer(turns []turn, u *Message) *Message {
	for i := 1; i < len(turns); i++ {
		if turns[i].user == u {
			return turns[i-1].answer
		}
	}
	return nil
}

// File-operation classification of tool names (lower case substrings).
var (
	modifyTools = []string{"write", "edit", "create", "patch", "replace", "delete", "remove", "move", "rename", "insert", "append", "mkdir"}
	pathKeys    = []string{"path", "file_path", "filePath", "file", "filename", "notebook_path", "target_file"}
)

func isModifyCall(tc ToolCall) bool {
	name := strings.ToLower(tc.Name)
	var args map[string]json.RawMessage
	_ = json.Unmarshal(tc.Args, &args)
	if raw, ok := args["command"]; ok && strings.Contains(name, "edit") {
		var cmd string
		if json.Unmarshal(raw, &cmd) == nil && (cmd == "view" || cmd == "read") {
			return false
		}
	}
	for _, w := range modifyTools {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// callPaths are the file paths named by a tool call's arguments.
func callPaths(tc ToolCall) []string {
	var args map[string]json.RawMessage
	if json.Unmarshal(tc.Args, &args) != nil {
		return nil
	}
	var out []string
	for _, k := range pathKeys {
		raw, ok := args[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, s)
		}
	}
	if raw, ok := args["paths"]; ok {
		var ss []string
		if json.Unmarshal(raw, &ss) == nil {
			out = append(out, ss...)
		}
	}
	clean := out[:0]
	for _, p := range out {
		p = strings.TrimSpace(Clean(p))
		if p != "" && len(p) <= 500 && !strings.ContainsAny(p, "\n\t") {
			clean = append(clean, p)
		}
	}
	return clean
}

// recency is an ordered set whose Add moves an item to the front.
type recency struct {
	order []string
	pos   map[string]int
}

func (r *recency) Add(s string) {
	if r.pos == nil {
		r.pos = map[string]int{}
	}
	r.order = append(r.order, s)
	r.pos[s] = len(r.order) - 1
}

// List returns items most recent first, at most n.
func (r *recency) List(n int) []string {
	var out []string
	for i := len(r.order) - 1; i >= 0 && len(out) < n; i-- {
		if r.pos[r.order[i]] == i {
			out = append(out, r.order[i])
		}
	}
	return out
}

// buildResources collects files read and modified from tool-call paths
// (failed calls do not count), the compactions' file lists (older), the
// recorded state, and the deduplicated tool names.
func buildResources(msgs []Message, comps []CompactionInfo, st *State) Resources {
	var read, mod recency
	for _, c := range comps {
		for _, p := range c.ReadFiles {
			read.Add(p)
		}
		for _, p := range c.ModifiedFiles {
			mod.Add(p)
		}
	}
	for _, p := range st.Resources.FilesRead {
		read.Add(p)
	}
	for _, p := range st.Resources.FilesModified {
		mod.Add(p)
	}
	failed := map[string]bool{}
	for _, m := range msgs {
		if m.Role == "toolResult" && m.IsError {
			failed[m.ToolCallID] = true
		}
	}
	tools := map[string]bool{}
	for _, t := range st.Resources.ToolsUsed {
		tools[Clean(t)] = true
	}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if n := strings.TrimSpace(Clean(tc.Name)); n != "" {
				tools[n] = true
			}
			if failed[tc.ID] {
				continue
			}
			for _, p := range callPaths(tc) {
				if isModifyCall(tc) {
					mod.Add(p)
				} else {
					read.Add(p)
				}
			}
		}
	}
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > MaxTools {
		names = names[:MaxTools]
	}
	return Resources{FilesRead: nonNil(read.List(MaxFiles)), FilesModified: nonNil(mod.List(MaxFiles)), ToolsUsed: names}
}

var checkbox = regexp.MustCompile(`(?m)^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$`)

// buildOpenAndLearnings finds, mechanically:
//   - open items: markdown task-list items ("- [ ] …") the agent wrote and
//     never ticked, and tools whose last call failed;
//   - learnings: tool failures that a later call of the same tool got past
//     (what went wrong and was worked around);
//
// plus what the state recorded. The markup is language-neutral.
func buildOpenAndLearnings(msgs []Message, st *State) (open, learnings []string) {
	tasks := map[string]bool{}
	var taskOrder []string
	type fail struct{ tool, err string }
	lastFail := map[string]*fail{}
	var recovered []string
	seenFail := map[string]bool{} // failures the messages show, recorded or not
	names := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
		}
		if m.Role == "assistant" {
			for _, sm := range checkbox.FindAllStringSubmatch(m.Text, -1) {
				item := oneLine(sm[2], 200)
				if _, ok := tasks[item]; !ok {
					taskOrder = append(taskOrder, item)
				}
				tasks[item] = sm[1] == " "
			}
		}
		if m.Role != "toolResult" {
			continue
		}
		tool := m.ToolName
		if tool == "" {
			tool = names[m.ToolCallID]
		}
		if m.IsError {
			lastFail[tool] = &fail{tool: tool, err: firstLine(m.Text)}
			seenFail[failKey(tool, firstLine(m.Text))] = true
		} else if f := lastFail[tool]; f != nil {
			recovered = append(recovered, fmt.Sprintf("%q failed, then worked on retry: %s", f.tool, orNone(gist(f.err, GistChars))))
			delete(lastFail, tool)
		}
	}
	for _, t := range taskOrder {
		if tasks[t] {
			open = append(open, t)
		}
	}
	var tools []string
	for t := range lastFail {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		open = append(open, fmt.Sprintf("Last %q call failed: %s", t, orNone(gist(lastFail[t].err, GistChars))))
	}
	open = dedupeCap(append(append([]string{}, st.OpenItems...), open...), MaxOpenItems)
	for _, e := range st.Thread.Errors {
		if seenFail[failKey(e.Tool, e.Error)] {
			continue // already an open item or a "then worked on retry" learning
		}
		recovered = append(recovered, fmt.Sprintf("%q failed: %s", e.Tool, orNone(gist(e.Error, GistChars))))
	}
	learnings = dedupeCap(append(append([]string{}, st.Learnings...), recovered...), MaxLearnings)
	return open, learnings
}

// failKey identifies a tool failure by tool and error gist, so an error the
// capture recorded matches the same failure read from the messages.
func failKey(tool, err string) string { return tool + "\x00" + gist(err, GistChars) }

// dedupeCap removes duplicates (first occurrence wins) and keeps the last n.
func dedupeCap(items []string, n int) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, it := range items {
		it = oneLine(it, 400)
		if it == "" || seen[it] {
			continue
		}
		seen[it] = true
		out = append(out, it)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// gist is the first n characters of a message, whitespace collapsed.
func gist(s string, n int) string { return oneLine(s, n) }

func runeLen(s string) int { return utf8.RuneCountInString(strings.TrimSpace(s)) }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lastParagraph is where an agent's proposal or question usually sits.
func lastParagraph(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n\n"); i >= 0 && len(strings.TrimSpace(s[i:])) > 0 {
		return s[i:]
	}
	return s
}

// paramsSummary is a tool call's arguments as compact JSON, cut to a gist.
func paramsSummary(args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		return gist(string(args), GistChars)
	}
	return gist(buf.String(), GistChars)
}
