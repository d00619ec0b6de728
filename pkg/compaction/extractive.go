package compaction

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/tokenizer"
)

// Extractive is the built-in summariser: deterministic, offline, free. It
// writes, under the headings of the requested layout, what a resumed agent
// needs in the order it needs it (see the tiers): the user's goal and
// messages in their own words (channel envelopes and injected prompts left
// out), the agent's answers, plans, emphasised conclusions and open
// questions, the commands that failed and whether they were fixed, files
// and commits, then every fact the fact detector (pkg/facts) finds, each
// once, in the shortest sentence that carries it — rules found in tool
// output under their own heading, below what was said. A previous
// summary is updated: its lines are carried by heading, the new region is
// chosen first, and lines the region supersedes go. When the token budget
// binds, the rest is counted in one closing line that points to recall.
// It cannot understand; it can only rank and not forget.
type Extractive struct{}

func init() {
	registerSource("extractive", func(string, Env) (Summarizer, error) { return Extractive{}, nil })
}

// Name implements Summarizer.
func (Extractive) Name() string { return "extractive" }

// Capabilities implements Summarizer: offline, and within its budget.
func (Extractive) Capabilities() Capabilities { return Capabilities{Offline: true, Budgeted: true} }

// Summarize implements Summarizer.
func (Extractive) Summarize(_ context.Context, r *Request) (string, error) {
	layout := r.Layout
	if layout == LayoutNarrative || layout == "" {
		layout = LayoutCheckpoint
	}
	var items []item
	if r.PreviousSummary != "" && r.Kind != KindTurnPrefix {
		items = append(items, summaryItems(r.PreviousSummary, -1)...)
	}
	switch r.Kind {
	case KindMerge:
		for i, p := range r.Partials {
			items = append(items, summaryItems(p, i)...)
		}
	default:
		region := regionItems(r.Messages)
		if hasSlot(items, slotGoal) {
			// the earlier summary states the goal; the region's first ask
			// is one more ask
			for i := range region {
				if region[i].slot == slotGoal {
					region[i].slot, region[i].tier = slotUser, tierUser
				}
			}
		}
		items = append(items, region...)
	}
	out := renderItems(layout, items, extractiveBudget(r))
	if strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("extractive summariser found no text to summarise")
	}
	return out, nil
}

func hasSlot(items []item, s slot) bool {
	for _, it := range items {
		if it.slot == s {
			return true
		}
	}
	return false
}

// extractiveBudget is the request's budget in o200k tokens: BudgetTokens,
// bounded by MaxChars (about 4 characters a token) when that is set.
func extractiveBudget(r *Request) int {
	b := r.BudgetTokens
	if b <= 0 {
		b = DefaultSummaryBudgetTokens
	}
	if r.MaxChars > 0 && r.MaxChars/4 < b {
		b = r.MaxChars / 4
	}
	return b
}

// slot is where an item goes; each layout maps slots to its headings.
type slot int

const (
	slotGoal slot = iota
	slotConstraint
	slotDone
	slotInProgress
	slotBlocked
	slotDecision
	slotNext
	slotAsk // a user's ask (Next Steps, or Pending user asks)
	slotContext
	slotEarlier
	slotUser  // the user's messages in their words
	slotFound // rules and decisions found in tool output (files, pages)
	nSlots
)

// item is one line of the summary.
type item struct {
	slot slot
	text string
	// tier orders items when the budget binds (lower first), seq within a
	// tier (higher = more recent = first) and, inside a section, on output
	// (lower first).
	tier, seq int
	// fact is the detected fact the item carries (nil for goal, progress
	// and carried lines): an item whose fact an earlier item already
	// carries is left out, so every fact appears once.
	fact *facts.Fact
	// carried marks a line of the previous summary; count is how often a
	// repeated failure happened.
	carried bool
	count   int
}

// factTier is the one ranking of facts (facts.Tier), shared with the
// agents' PreCompact instructions and the identifier retry.
func factTier(f facts.Fact) int { return facts.Tier(f) }

const (
	tierGoal         = -2                     // the goal comes first
	tierUser         = -1                     // the user's instructions, in their words
	tierFiles        = 0                      // the files the region modified
	tierQuestion     = 1                      // questions the agent left the user at the end
	tierFailure      = 1                      // commands that failed
	tierEmphasis     = 2                      // what the agent emphasised at the end of a turn
	tierProgress     = 3                      // what was done / being done
	tierAgent        = 3                      // the first sentence of an agent's answer or plan
	tierOldQuestion  = 4                      // questions the agent asked earlier
	tierRequoted     = 4                      // a request sentence of a user message already quoted
	tierDocStatement = facts.TierDocStatement // a rule or decision found in tool output (a file, a page)
	tierFinding      = 5                      // the first sentence of an agent message between calls
	tierCommit       = 5                      // commands that changed something (commits, installs, edits)
	tierMoreEmphasis = 5                      // the rest of a long report's emphasis
	tierUserReport   = 6                      // user messages that ask nothing (reports, answers)
	tierAgentStep    = 9                      // "let me check …" before a tool call
	tierCommand      = 10                     // commands that ran, with their first output line
	tierLookup       = 12                     // read-only commands (ls, grep, git status, …)
)

// itemChars bounds a goal or progress line.
const itemChars = 400

// regionItems turns the region's messages into items: the user's goal
// and messages in their own words (channel envelopes and injected prompts
// left out), what the agent concluded (the first sentence of each of its
// messages, what it emphasised, the questions it left the user), the
// commands that failed and whether a later run succeeded, the files
// touched, and the detected facts.
func regionItems(msgs []*Msg) []item {
	var users []userMsg
	var lastAssistant string
	tools := map[string]int{}
	ops := NewFileOps()
	calls := map[string]callInfo{}
	patched := map[string]bool{}
	var commits []string // hash and subject, oldest first
	var out []item
	lastText := -1 // the last agent message with text
	for i := len(msgs) - 1; i >= 0 && lastText < 0; i-- {
		if msgs[i].Role() == "assistant" && strings.TrimSpace(assistantText(msgs[i].M)) != "" {
			lastText = i
		}
	}
	var fails []failure
	succeeded := map[string]int{} // call key → index of its last success
	for i, mm := range msgs {
		switch mm.Role() {
		case "user":
			t, injected := facts.CleanUserText(msgText(mm.M))
			if injected || t == "" || (strings.HasPrefix(t, "/") && len(t) < 16 && !strings.Contains(t, " ")) {
				continue
			}
			users = append(users, userMsg{mm, t, i})
		case "assistant":
			ops.AddMessage(mm.M)
			for _, b := range mm.M.ToolCalls() {
				tools[b.Name]++
				cmd, shell := commandOf(b.Arguments)
				calls[b.ID] = callInfo{name: b.Name, cmd: cmd, shell: shell}
				for _, m := range rePatchFile().FindAllStringSubmatch(string(b.Arguments), -1) {
					patched[m[1]] = true
				}
			}
			t := strings.TrimSpace(assistantText(mm.M))
			if t == "" || facts.IsInjectedReply(t) {
				continue
			}
			lastAssistant = t
			out = append(out, assistantItems(t, mm.E.Line, i, len(mm.M.ToolCalls()) == 0, i == lastText)...)
		case "toolResult", "bashExecution":
			c := calls[mm.M.ToolCallID]
			text := msgText(mm.M)
			failed := mm.M.IsError || facts.ToolFailed(text)
			if mm.Role() == "bashExecution" {
				c = callInfo{name: "bash", cmd: mm.M.Command, shell: true}
				failed = mm.M.ExitCode != nil && *mm.M.ExitCode != 0
			} else if c.name == "" {
				c.name = mm.M.ToolName
			}
			if failed {
				fails = append(fails, failure{call: c, line: mm.E.Line, seq: i, text: errorText(text)})
			} else {
				succeeded[c.key()] = i
				if c.shell && c.cmd != "" {
					if m := reCommitted().FindStringSubmatch(firstLine(jsonOutput(text))); m != nil {
						// a commit: the commits line names it
						commits = append(commits, m[2]+" "+oneLine(m[3], 60))
					} else if first := firstLine(jsonOutput(text)); first != "" {
						tier := tierCommand
						switch {
						case reLookup().MatchString(c.cmd):
							tier = tierLookup
						case reRepoChange().MatchString(c.cmd) || (reMutating().MatchString(c.cmd) && !strings.Contains(c.cmd, "*** Begin Patch")):
							tier = tierCommit // it changed something
						}
						out = append(out, item{slot: slotDone, text: fmt.Sprintf("Ran `%s` → %s", oneLine(c.cmd, 120), oneLine(first, 100)), tier: tier, seq: i})
					}
				}
			}
		}
	}
	goal := -1
	for k, u := range users {
		if facts.IsAsk(u.text) {
			goal = k
			out = append(out, item{slot: slotGoal, text: oneLine(u.text, 600), tier: tierGoal, seq: 0})
			break
		}
	}
	asks := 0 // instructions seen, newest first
	for k := len(users) - 1; k >= 0; k-- {
		u := users[k]
		if k == goal || facts.IsGreeting(u.text) || facts.IsAck(u.text) || runeLen(u.text) < minUserRunes {
			continue
		}
		tier, limit := tierUser, userTokens
		switch {
		case reDurable().MatchString(u.text):
			// a rule or preference holds until revoked, however old
		case reInstruction().MatchString(u.text):
			if asks++; asks > recentAsks {
				limit = olderUserTokens // most likely done by now: shorter
			}
		default:
			tier = tierUserReport // a report or answer, not an ask
		}
		out = append(out, item{slot: slotUser, text: fmt.Sprintf("line %d: %s", u.m.E.Line, clipTokens(oneLine(u.text, userChars), limit)), tier: tier, seq: u.seq})
	}
	if lastAssistant != "" {
		out = append(out, item{slot: slotInProgress, text: "Last agent message: " + oneLine(lastAssistant, itemChars), tier: tierGoal + 1, seq: len(msgs)})
	}
	if tl := toolLine(tools); tl != "" {
		out = append(out, item{slot: slotDone, text: tl, tier: tierProgress, seq: -1})
	}
	for p := range patched {
		ops.Edited[p] = true
	}
	if cl := commitsLine(commits); cl != "" {
		out = append(out, item{slot: slotDone, text: cl, tier: tierFiles, seq: 0})
	}
	read, modified := ops.Lists()
	if len(modified) > 0 {
		out = append(out, item{slot: slotDone, text: "Modified " + joinCap(modified, 800), tier: tierFiles, seq: 0})
	}
	if len(read) > 0 {
		out = append(out, item{slot: slotDone, text: "Read " + joinCap(read, 400), tier: tierProgress + 1, seq: 0})
	}
	out = append(out, failureItems(fails, succeeded)...)
	quoted := map[int]bool{} // user messages the summary quotes
	for _, u := range users {
		quoted[u.seq] = true
	}
	for _, f := range facts.Merge(msgFacts(msgs)) {
		f := f
		it := factItem(&f)
		if f.Class == facts.Request && f.Origin == "user" && quoted[f.Seq] && it.tier < tierRequoted {
			// the user's message is quoted already; a sentence of it
			// past the quote's clip is worth less than what else was said
			it.tier = tierRequoted
		}
		out = append(out, it)
	}
	return out
}

// userMsg is a user message of the region, in the user's words.
type userMsg struct {
	m    *Msg
	text string
	seq  int
}

const (
	// minUserRunes: shorter user messages ("yes", "做完了") carry no ask.
	minUserRunes = 6
	// userChars and userTokens bound one user message in the summary.
	userChars       = 360
	userTokens      = 90
	olderUserTokens = 45
	// maxEmphasised bounds the emphasised sentences kept per agent message.
	maxEmphasised = 12
	// emphasisTokens: the emphasis of one message that ranks high.
	emphasisTokens = 60
	// recentAsks: the newest user instructions come before the
	// agent's conclusions; older ones after them.
	recentAsks = 12
)

// reInstruction is a user message that asks, instructs or constrains: a
// question, a request or prohibition cue (English or Chinese).
var reInstruction = lazyre.New(`(?i)[?？]|\b(?:please|pls|must|never|always|don't|do not|make sure|remember|should|need|want|let's|can you|could you|would you|add|fix|change|use|stop|keep|install|set|write|update|remove|find|move|create|make|run|check)\b|请|帮我|记得|提醒|不要|别|必须|不能|禁止|以后|一定|改|要求|注意|应该|需要`)

// reDurable is a user message that sets a rule or preference: it holds
// until revoked.
var reDurable = lazyre.New(`(?i)\b(?:must|never|always|don't|do not|make sure|remember|from now on|every (?:day|time)|each time|only)\b|不要|别|必须|不能|禁止|以后|每天|每次|一定|记得|注意|只`)

// reAnnounce is an agent sentence that only announces its next call.
var reAnnounce = lazyre.New(`(?i)^(?:(?:ok(?:ay)?|now|next|first|then|so|great|good),? )?(?:let me|let's|i['’]ll (?:check|look|read|run|try|search|see|start|now)|checking|looking|reading|running|searching|trying)\b|[:：]$`)

// reIntent is an agent sentence announcing what it is about to do: its
// plan for the turn.
var reIntent = lazyre.New(`(?i)^(?:(?:ok(?:ay)?|now|next|first|then|so),? )?(?:i['’]m going to|i['’]ll|i will|we['’]ll|we will|i plan to|the plan is|plan:)`)

// reRepoChange is a command that records work (a commit, a push, a tag):
// its first output line names what was recorded.
var reRepoChange = lazyre.New(`\bgit (?:commit|push|merge|tag|rebase|cherry-pick)\b`)

// reCommitted is git commit's first output line: [branch hash] message.
var reCommitted = lazyre.New(`^\[([\w./-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)`)

// commitsLine lists the region's commits, newest first with their
// subjects while they fit commitChars, the older ones by hash only: what
// was recorded, for `git show`.
func commitsLine(commits []string) string {
	if len(commits) == 0 {
		return ""
	}
	var full, bare []string
	size := 0
	for i := len(commits) - 1; i >= 0; i-- {
		if size+len(commits[i]) <= commitChars && len(bare) == 0 {
			full = append(full, commits[i])
			size += len(commits[i]) + 2
			continue
		}
		bare = append(bare, strings.Fields(commits[i])[0])
	}
	line := fmt.Sprintf("Committed (%d, newest first): %s", len(commits), strings.Join(full, "; "))
	if len(bare) > 0 {
		line += "; older: " + strings.Join(bare, ", ")
	}
	return line
}

// commitChars bounds the commits listed with their subjects.
const commitChars = 160

// reMutating is a command that changes state (creates, edits, installs,
// schedules, restarts …) rather than looking.
var reMutating = lazyre.New(`(?:^|[\s;&|])(?:create|edit|add|set|install|uninstall|rm|mv|cp|mkdir|delete|remove|enable|disable|configure|apply|deploy|restart|kill|chmod|chown|ln)(?:\s|$)`)

// reLookup is a command that only looks: what it found is in the
// messages around it, and it changed nothing.
var reLookup = lazyre.New(`^\s*(?:cd [^;&]+(?:;|&&)\s*)?(?:ls|dir|cat|head|tail|grep|rg|find|sed -n|wc|pwd|echo|which|type|stat|tree|less|git (?:status|log|diff|show|branch|remote)|kubectl (?:logs|get|describe)|Get-ChildItem|Get-Content|Select-String)\b`)

// callInfo is a tool call: its tool and the command (shell) or path it
// names.
type callInfo struct {
	name, cmd string
	shell     bool
}

// rePatchFile is a file an apply_patch call (Codex) adds, updates or
// deletes.
var rePatchFile = lazyre.New(`\*\*\* (?:Add|Update|Delete) File: ([^\s"\\]+)`)

func (c callInfo) key() string { return c.name + "\x00" + c.cmd }

// commandOf is what a tool call runs or touches: its command (joined when
// an argv list), else its path or url, else "".
func commandOf(raw json.RawMessage) (cmd string, shell bool) {
	var args map[string]any
	if json.Unmarshal(raw, &args) != nil {
		return "", false
	}
	for _, k := range []string{"command", "cmd", "path", "file_path", "url", "query"} {
		shell := k == "command" || k == "cmd"
		switch v := args[k].(type) {
		case string:
			return v, shell
		case []any:
			var parts []string
			for _, p := range v {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			if len(parts) >= 3 && (parts[0] == "bash" || parts[0] == "sh") && strings.HasPrefix(parts[1], "-") {
				return parts[2], shell
			}
			return strings.Join(parts, " "), shell
		}
	}
	return "", false
}

// failure is a failed tool call.
type failure struct {
	call      callInfo
	line, seq int
	text      string
}

// failureItems are the failed commands, the same failure once with how
// often it happened, and whether a later run of the same call succeeded.
func failureItems(fails []failure, succeeded map[string]int) []item {
	var out []item
	index := map[string]int{}
	for _, f := range fails {
		k := f.call.name + "\x00" + f.text
		if j, ok := index[k]; ok {
			out[j].count++
			out[j].seq = f.seq
			continue
		}
		what := f.call.name
		if f.call.cmd != "" {
			what += " `" + oneLine(f.call.cmd, 100) + "`"
		}
		text := fmt.Sprintf("line %d: %s failed: %s", f.line, what, oneLine(f.text, 240))
		if s, ok := succeeded[f.call.key()]; ok && s > f.seq {
			text += " (fixed: a later run succeeded)"
		}
		index[k] = len(out)
		out = append(out, item{slot: slotBlocked, text: text, tier: tierFailure, seq: f.seq, count: 1})
	}
	for i := range out {
		if out[i].count > 1 {
			out[i].text += fmt.Sprintf(" (×%d)", out[i].count)
		}
	}
	return out
}

// errorText is what a failed tool said: its first lines (up to three), the
// ones that name the error and its remedy.
func errorText(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "{" || l == "}" {
			continue
		}
		lines = append(lines, l)
		if len(lines) == 4 {
			break
		}
	}
	return strings.Join(lines, " / ")
}

// jsonOutput is the "output" of a tool result written as JSON (Codex's
// shell: {"output": "…", "metadata": …}), else s.
func jsonOutput(s string) string {
	if !strings.HasPrefix(s, `{"output"`) {
		return s
	}
	var v struct {
		Output string `json:"output"`
	}
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	return v.Output
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

var reBold = lazyre.New(`\*\*([^*\n]+)\*\*`)

// assistantItems are what an agent message concluded, in its own
// sentences: its first sentence (what it found or is about to do), the
// sentences it emphasised, and, at the end of a turn, the questions it
// left the user.
func assistantItems(t string, line, seq int, endOfTurn, last bool) []item {
	var out []item
	var ss []string
	n, spent := 0, 0
	for _, l := range strings.Split(t, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "|") || strings.HasPrefix(l, "```") {
			continue // tables and code are not sentences
		}
		bold := reBold().MatchString(l)
		l = reBold().ReplaceAllString(l, "$1")
		ls := facts.Sentences(l)
		if bold && n < maxEmphasised && len(ls) > 0 {
			// an emphasised line is kept whole: a list item or heading
			// of the agent's conclusions; past emphasisTokens a message
			// is a report, and the rest of its emphasis ranks lower
			text := oneLine(strings.Join(ls, " "), 240)
			tier := tierEmphasis
			if spent > emphasisTokens || !endOfTurn {
				tier = tierMoreEmphasis
			}
			spent += countTokens(text)
			out = append(out, item{slot: slotDecision, text: text, tier: tier, seq: seq})
			n++
		}
		ss = append(ss, ls...)
	}
	if len(ss) == 0 {
		return nil
	}
	if first := ss[0]; runeLen(first) >= 12 {
		tier, sl := tierAgent, slotDone
		switch {
		case reIntent().MatchString(first):
			sl = slotDecision // the plan for the turn
		case !endOfTurn && reAnnounce().MatchString(first):
			tier = tierAgentStep // "let me check …" before a tool call
		case !endOfTurn:
			tier = tierFinding // what it found before its next call
		}
		out = append(out, item{slot: sl, text: fmt.Sprintf("line %d: %s", line, oneLine(first, 240)), tier: tier, seq: seq})
	}
	if endOfTurn {
		var qs []string
		for _, s := range ss {
			if strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") {
				qs = append(qs, s)
			}
		}
		keep, tier := 3, tierQuestion
		if !last {
			keep, tier = 1, tierOldQuestion // the user has answered since, most likely
		}
		if len(qs) > keep {
			qs = qs[len(qs)-keep:]
		}
		for _, q := range qs {
			out = append(out, item{slot: slotNext, text: "Agent asked: " + oneLine(q, 240), tier: tier, seq: seq})
		}
	}
	return out
}

// clipTokens cuts s to about n o200k tokens (whole runes, an ellipsis).
func clipTokens(s string, n int) string {
	for countTokens(s) > n {
		r := []rune(strings.TrimSuffix(s, "…"))
		s = string(r[:len(r)*4/5]) + "…"
	}
	return s
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// factItem places a fact: statements under their own headings, numbers in
// their sentence, identifiers bare when they come from tool output (the
// sentence around them is usually a log line) and in their sentence when
// someone said them.
func factItem(f *facts.Fact) item {
	it := item{text: f.Sentence, tier: factTier(*f), seq: f.Seq, fact: f}
	switch f.Class {
	case facts.Constraint:
		it.slot = slotConstraint
	case facts.Request:
		it.slot = slotNext
		if f.Origin == "user" {
			it.slot = slotAsk
		}
	case facts.Decision:
		it.slot = slotDecision
	case facts.Error:
		it.slot = slotBlocked
		it.text = fmt.Sprintf("line %d: %s", f.Line, f.Sentence)
	case facts.Number:
		it.slot = slotContext
	default:
		it.slot = slotContext
		if facts.OriginRank(f.Origin) >= 2 || u16len(f.Sentence) > 200 {
			it.text = f.Value
		}
	}
	if facts.OriginRank(f.Origin) >= 3 && (f.Class == facts.Constraint || f.Class == facts.Decision || f.Class == facts.Request) {
		// a file's or page's rule is not the user's: it gets its own
		// heading, with the line it was read on
		it.slot = slotFound
		it.text = fmt.Sprintf("line %d: %s", f.Line, f.Sentence)
	}
	it.text = oneLine(it.text, facts.MaxSentence+20)
	return it
}

func toolLine(tools map[string]int) string {
	if len(tools) == 0 {
		return ""
	}
	names := make([]string, 0, len(tools))
	total := 0
	for n, c := range tools {
		names = append(names, n)
		total += c
	}
	sort.Slice(names, func(i, j int) bool {
		if tools[names[i]] != tools[names[j]] {
			return tools[names[i]] > tools[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s ×%d", n, tools[n])
	}
	return fmt.Sprintf("%d tool calls: %s", total, strings.Join(parts, ", "))
}

func joinCap(items []string, max int) string {
	var b strings.Builder
	for i, it := range items {
		if b.Len()+len(it)+2 > max {
			fmt.Fprintf(&b, " …and %d more", len(items)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it)
	}
	return b.String()
}

// headingSlots maps the headings of every layout (ours, pi's, OpenClaw's,
// the single-pass summary's) to slots, so a previous summary written by any of them is
// carried forward under the right heading.
var headingSlots = map[string]slot{
	"## Goal": slotGoal, "## Original request (verbatim)": slotGoal, "## Original Request": slotGoal, "## Request": slotGoal,
	"## Constraints & Preferences": slotConstraint, "## Constraints/Rules": slotConstraint,
	"## Key Decisions": slotDecision, "## Decisions": slotDecision,
	"## Next Steps": slotNext, "## Open TODOs": slotNext, "## Pending user asks": slotAsk,
	"## Critical Context": slotContext, "## Exact identifiers": slotContext, "## Needed for what follows": slotContext,
	"## Context for Suffix": slotContext, "## User requests (their words)": slotUser,
	"## Found in files and tool output": slotFound,
	"## Work so far":                    slotDone, "## Early Progress": slotDone, "## Tool Failures": slotBlocked,
}

// reLabel is a section label of Claude Code's compact summary, with what
// follows it on the line; labelSlots places its lines.
var reLabel = lazyre.New(`(?i)^(?:\d+\.\s*)?(analysis|summary|primary request and intent|key technical concepts|files and code sections|errors and fixes|problem solving|all user messages|pending tasks|current work|optional next step):\s*(.*)$`)

var labelSlots = map[string]slot{"analysis": slotEarlier, "summary": slotEarlier, "primary request and intent": slotGoal,
	"key technical concepts": slotContext, "files and code sections": slotContext, "errors and fixes": slotBlocked,
	"problem solving": slotDecision, "all user messages": slotUser, "pending tasks": slotNext, "current work": slotInProgress,
	"optional next step": slotNext}

var subSlots = map[string]slot{"### Done": slotDone, "### In Progress": slotInProgress, "### Blocked": slotBlocked}

// carriedTier ranks a previous summary's lines by where they stood.
var carriedTier = [nSlots]int{slotGoal: tierGoal, slotConstraint: 0, slotAsk: 1, slotNext: 1, slotDecision: 2, slotBlocked: 3,
	slotContext: 4, slotInProgress: 6, slotDone: 6, slotEarlier: 6, slotUser: 0, slotFound: tierDocStatement}

var (
	reListMark = lazyre.New(`^\s*(?:[-*•]\s+)?(?:\d+[.)]\s+)?(?:\[[ xX]\]\s+)?`)
	reNoneLine = lazyre.New(`(?i)^(?:none\.?|none captured\.?|no prior history\.?|no earlier history\.?)$`)
)

// summaryItems turns an earlier summary (or a partial one) into items: one
// per line, list markers and numbering stripped (they are rendered again),
// placed by heading.
func summaryItems(summary string, part int) []item {
	var out []item
	n := 0
	for _, sec := range parseSections(summary) {
		s, ok := headingSlots[sec.Heading]
		if !ok {
			s = slotEarlier
			if sec.Heading != "" {
				out = append(out, item{slot: slotEarlier, text: "(" + strings.TrimPrefix(sec.Heading, "## ") + ")", tier: carriedTier[slotEarlier], seq: part*100000 + n})
				n++
			}
		}
		cur := s
		for _, line := range sec.Lines {
			t := strings.TrimSpace(line)
			if sub, ok := subSlots[t]; ok && s != slotEarlier {
				cur = sub
				continue
			}
			if t == "---" || t == "**Turn Context (split turn):**" || strings.HasPrefix(t, "[… ") {
				continue
			}
			if s == slotEarlier {
				// Claude Code's summaries have no "## " headings but
				// numbered labels ("1. Primary Request and Intent:")
				if m := reLabel().FindStringSubmatch(t); m != nil {
					cur = labelSlots[strings.ToLower(m[1])]
					if t = strings.TrimSpace(m[2]); t == "" {
						continue
					}
				}
			}
			t = strings.TrimSpace(reListMark().ReplaceAllString(t, ""))
			if t == "" || reNoneLine().MatchString(t) || strings.HasPrefix(t, "…and ") {
				continue
			}
			out = append(out, item{slot: cur, text: t, tier: carriedTier[cur], seq: part*100000 + n, carried: part < 0})
			n++
		}
	}
	return out
}

// layoutSections says, per layout, which slots go under which heading.
type layoutSection struct {
	heading string
	slots   []slot
	// sub are ### sub-headings, one per slot (checkpoint progress).
	sub []string
	// numbered renders the lines as 1., 2., …
	numbered bool
	// checkbox prefixes lines with [x] (done) or [ ] (in progress).
	checkbox bool
}

func layoutOf(l Layout) []layoutSection {
	switch l {
	case LayoutSafeguard:
		return []layoutSection{
			{heading: "## Decisions", slots: []slot{slotGoal, slotDecision}},
			{heading: "## Open TODOs", slots: []slot{slotInProgress, slotNext, slotBlocked, slotDone}},
			{heading: "## Constraints/Rules", slots: []slot{slotConstraint}},
			{heading: "## Pending user asks", slots: []slot{slotUser, slotAsk}},
			{heading: "## Exact identifiers", slots: []slot{slotContext, slotFound, slotEarlier}},
		}
	case LayoutTurnPrefix:
		return []layoutSection{
			{heading: "## Request", slots: []slot{slotGoal, slotUser, slotAsk, slotConstraint, slotNext}},
			{heading: "## Work so far", slots: []slot{slotDone, slotDecision, slotBlocked, slotInProgress}},
			{heading: "## Needed for what follows", slots: []slot{slotContext, slotFound, slotEarlier}},
		}
	}
	return []layoutSection{
		{heading: "## Goal", slots: []slot{slotGoal}},
		{heading: "## User requests (their words)", slots: []slot{slotUser}},
		{heading: "## Constraints & Preferences", slots: []slot{slotConstraint}},
		{heading: "## Progress", slots: []slot{slotDone, slotInProgress, slotBlocked}, sub: []string{"### Done", "### In Progress", "### Blocked"}, checkbox: true},
		{heading: "## Key Decisions", slots: []slot{slotDecision}},
		{heading: "## Next Steps", slots: []slot{slotAsk, slotNext}, numbered: true},
		{heading: "## Critical Context", slots: []slot{slotContext}},
		{heading: "## Found in files and tool output", slots: []slot{slotFound}},
		{heading: "## Earlier context", slots: []slot{slotEarlier}},
	}
}

// renderItems chooses the items that fit budget o200k tokens, in tier
// order, leaving out items whose fact (or text) is already carried, and
// renders them under the layout's headings in the order they happened.
func renderItems(l Layout, items []item, budget int) string {
	secs := layoutOf(l)
	// fixed cost: headings, sub-headings, "- None." lines, the closing note
	const noteReserve = 24
	c := chooseItems(items, budget-layoutCost(secs)-noteReserve)

	bySlot := make([][]item, nSlots)
	for i, it := range items {
		if c.chosen[i] {
			bySlot[it.slot] = append(bySlot[it.slot], it)
		}
	}
	for s := range bySlot {
		sort.SliceStable(bySlot[s], func(a, b int) bool { return bySlot[s][a].seq < bySlot[s][b].seq })
	}
	var blocks []sectionBlock
	for _, sec := range secs {
		if lines, ok := sectionLines(sec, bySlot); ok {
			blocks = append(blocks, sectionBlock{sec.heading, lines})
		}
	}
	if c.left > 0 && len(blocks) > 0 {
		last := &blocks[len(blocks)-1]
		from := ""
		if l := minInt(c.leftLines); l > 0 {
			from = fmt.Sprintf("; the first from line %d", l)
		}
		last.lines = append(last.lines, fmt.Sprintf("- …and %d more items not kept (summary budget %d tokens%s); they are still in the session file, and `ctxtool search` finds them in the recall index", c.left, budget, from))
	}
	parts := make([]string, len(blocks))
	for i, bl := range blocks {
		parts[i] = bl.heading + "\n" + strings.Join(bl.lines, "\n")
	}
	return strings.Join(parts, "\n\n")
}

// sectionBlock is one rendered section of a summary.
type sectionBlock struct {
	heading string
	lines   []string
}

// layoutCost is what a layout's headings and sub-headings cost, each with
// a "- None." line.
func layoutCost(secs []layoutSection) int {
	fixed := 0
	for _, s := range secs {
		fixed += countTokens(s.heading) + 4
		for _, h := range s.sub {
			fixed += countTokens(h) + 4
		}
	}
	return fixed
}

// itemChoice is what chooseItems kept (chosen, by item index) and how many
// items it left out for lack of room, with the lines of their facts.
type itemChoice struct {
	chosen    []bool
	left      int
	leftLines []int
}

// chooseItems picks items in tier order, newest first within a tier, while
// they fit room tokens, skipping an item whose text or fact an item
// already chosen carries. With a previous summary, its lines that the
// region supersedes are left out, and the region is chosen first with all
// the room but what the carried lines need, at most carriedShare of it:
// the new region gets its share however long the old summary was.
func chooseItems(items []item, room int) itemChoice {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := items[order[a]], items[order[b]]
		if x.tier != y.tier {
			return x.tier < y.tier
		}
		return x.seq > y.seq
	})
	c := itemChoice{chosen: make([]bool, len(items))}
	carried := facts.NewCorpus()
	seenText := map[string]bool{}
	superseded := supersededItems(items)
	carriedCost := 0
	for i, it := range items {
		if it.carried && !superseded[i] {
			carriedCost += countTokens(it.text) + 3
		}
	}
	left := map[int]bool{}
	pass := func(want func(item) bool, room int) int {
		for _, i := range order {
			it := items[i]
			if c.chosen[i] || superseded[i] || !want(it) {
				continue
			}
			key := strings.ToLower(strings.Join(strings.Fields(it.text), " "))
			if seenText[key] {
				continue
			}
			if it.fact != nil && carried.Has(*it.fact) {
				continue // an item already chosen says it
			}
			cost := countTokens(it.text) + 3
			if cost > room {
				left[i] = true
				continue
			}
			delete(left, i)
			room -= cost
			c.chosen[i] = true
			seenText[key] = true
			carried.Add(it.text)
		}
		return room
	}
	all := func(item) bool { return true }
	if carriedCost == 0 {
		pass(all, room)
	} else {
		reserve := min(carriedCost, room*carriedShare/100)
		rest := pass(func(it item) bool { return !it.carried }, room-reserve)
		pass(all, rest+reserve)
	}
	for i := range left {
		c.left++
		if items[i].fact != nil {
			c.leftLines = append(c.leftLines, items[i].fact.Line)
		}
	}
	return c
}

// carriedShare is the most of the room (percent) the previous summary's
// lines are guaranteed before the region is chosen.
const carriedShare = 45

// supersededItems marks the previous summary's lines that a statement of
// the region replaces: the same content words (at least three, 60 % of the
// carried line's) with different numbers — "the job runs every day at
// 12:00" after the user said "the job runs every day at 07:00".
func supersededItems(items []item) map[int]bool {
	out := map[int]bool{}
	type said struct {
		words map[string]bool
		nums  string
	}
	var region []said
	for _, it := range items {
		if it.carried || (it.tier > tierEmphasis && it.fact == nil) {
			continue
		}
		if it.fact != nil && facts.OriginRank(it.fact.Origin) > 1 {
			continue // tool output does not change what was agreed
		}
		n := numbersOf(it.text)
		if n == "" {
			continue
		}
		w := map[string]bool{}
		for _, x := range contentWordsOf(it.text) {
			w[x] = true
		}
		region = append(region, said{w, n})
	}
	for i, it := range items {
		if !it.carried {
			continue
		}
		n := numbersOf(it.text)
		if n == "" {
			continue
		}
		ws := contentWordsOf(it.text)
		if len(ws) < 3 {
			continue
		}
		for _, r := range region {
			hit := 0
			for _, w := range ws {
				if r.words[w] {
					hit++
				}
			}
			if 10*hit >= 6*len(ws) && r.nums != n && !strings.Contains(r.nums, n) {
				out[i] = true
				break
			}
		}
	}
	return out
}

var (
	reNums       = lazyre.New(`\d+(?:[.:]\d+)*`)
	reLetterRuns = lazyre.New(`\p{L}{3,}`)
)

func numbersOf(s string) string { return strings.Join(reNums().FindAllString(s, -1), " ") }

func contentWordsOf(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range reLetterRuns().FindAllString(strings.ToLower(s), -1) {
		if !seen[w] && !stopWord[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

var stopWord = map[string]bool{"the": true, "and": true, "for": true, "are": true, "not": true, "with": true, "that": true, "this": true, "from": true, "must": true, "will": true, "now": true, "also": true, "only": true, "line": true}

// sectionLines renders a section from the chosen items by slot; ok is
// false when the section is left out.
func sectionLines(sec layoutSection, bySlot [][]item) (lines []string, ok bool) {
	for k, s := range sec.slots {
		sub := slotLines(sec, s, bySlot[s])
		if len(sec.sub) > 0 {
			if k > 0 {
				lines = append(lines, "")
			}
			lines = append(lines, sec.sub[k])
			lines = append(lines, listLines(sub, false)...)
			if len(sub) == 0 {
				lines = append(lines, "- None.")
			}
			continue
		}
		lines = append(lines, sub...)
	}
	if len(sec.sub) == 0 {
		if (sec.slots[0] == slotEarlier || sec.slots[0] == slotUser || sec.slots[0] == slotFound) && len(lines) == 0 {
			return nil, false // no earlier context: no heading
		}
		lines = listLines(lines, sec.numbered)
		if len(lines) == 0 {
			lines = []string{"- None."}
		}
	}
	return lines, true
}

// slotLines are the lines of one slot's items: ticked or not in a checkbox
// section, bare identifiers grouped in the context slot.
func slotLines(sec layoutSection, s slot, items []item) []string {
	if s == slotContext {
		return groupBareIdentifiers(items)
	}
	var sub []string
	for _, it := range items {
		line := it.text
		if sec.checkbox {
			switch s {
			case slotDone:
				line = "[x] " + line
			case slotInProgress:
				line = "[ ] " + line
			}
		}
		sub = append(sub, line)
	}
	return sub
}

// identifierGroups labels the lines bare identifiers are grouped on, by
// facts' identifier kinds.
var identifierGroups = map[string]string{"path": "Files", "url": "URLs", "hash": "Hashes", "uuid": "UUIDs",
	"hostport": "Hosts", "ticket": "Tickets", "issue": "Issues", "id": "Ids"}

// groupBareIdentifiers renders context items. Identifiers found without a
// sentence worth keeping (commit hashes, paths, ids) go on one line per
// kind — "Hashes: 5a3eb40, 6838135" — instead of a line each: the same
// values verbatim, readable by a resumed agent, and fewer tokens than the
// budget charged for them. Everything else stays a line of its own, in
// order.
func groupBareIdentifiers(items []item) []string {
	var lines, kinds []string
	groups := map[string][]string{}
	for _, it := range items {
		label := ""
		switch {
		case it.fact != nil && it.fact.Class == facts.Identifier && it.text == it.fact.Value:
			label = identifierGroups[it.fact.Kind]
		case it.fact == nil && !strings.ContainsAny(it.text, " \t") && len(it.text) <= 120:
			label = "Other identifiers" // carried from an earlier summary's list
		}
		if label == "" {
			lines = append(lines, it.text)
			continue
		}
		if groups[label] == nil {
			kinds = append(kinds, label)
		}
		groups[label] = append(groups[label], it.text)
	}
	for _, k := range kinds {
		if len(groups[k]) == 1 {
			lines = append(lines, groups[k][0])
			continue
		}
		lines = append(lines, k+": "+strings.Join(groups[k], ", "))
	}
	return lines
}

func listLines(lines []string, numbered bool) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if numbered {
			out[i] = fmt.Sprintf("%d. %s", i+1, l)
		} else {
			out[i] = "- " + l
		}
	}
	return out
}

func minInt(xs []int) int {
	m := 0
	for _, x := range xs {
		if x > 0 && (m == 0 || x < m) {
			m = x
		}
	}
	return m
}

var (
	o200kOnce sync.Once
	o200k     *tokenizer.Tokenizer
)

// countTokens is the o200k size of s, the unit of the summary budget (pi's
// chars/4 when the tokenizer cannot load).
func countTokens(s string) int {
	o200kOnce.Do(func() { o200k, _ = tokenizer.Get(string(tokenizer.O200k)) })
	if o200k == nil {
		return (u16len(s) + 3) / 4
	}
	return o200k.Count(s)
}

// parseSections splits a summary into its "## " sections; text before the
// first heading has an empty heading. File-list blocks are dropped: the new
// summary carries fresh cumulative lists.
func parseSections(s string) []section {
	s = stripFileBlocks(s)
	var out []section
	cur := section{}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "## ") {
			if cur.Heading != "" || strings.TrimSpace(strings.Join(cur.Lines, "")) != "" {
				out = append(out, cur)
			}
			cur = section{Heading: strings.TrimSpace(line)}
			continue
		}
		cur.Lines = append(cur.Lines, line)
	}
	if cur.Heading != "" || strings.TrimSpace(strings.Join(cur.Lines, "")) != "" {
		out = append(out, cur)
	}
	for i := range out {
		out[i].Lines = trimBlank(out[i].Lines)
	}
	return out
}

// section is one "## heading" block; Lines are its body lines.
type section struct {
	Heading string
	Lines   []string
}

var reFileBlock = lazyre.New(`(?s)<(read-files|modified-files)>.*?</(read-files|modified-files)>`)

func stripFileBlocks(s string) string {
	return strings.TrimSpace(reFileBlock().ReplaceAllString(s, ""))
}

func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
