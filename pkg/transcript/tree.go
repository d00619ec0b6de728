package transcript

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// Leaf is pi's leaf after loading: the last entry in file order.
func (s *Session) Leaf() *Entry {
	if len(s.Entries) == 0 {
		return nil
	}
	return s.Entries[len(s.Entries)-1]
}

// Branch returns the root→leaf path of the leaf.
func (s *Session) Branch() []*Entry { return s.PathTo(s.Leaf()) }

// PathTo returns the root→e path, walking parentId until a root or a parent
// that does not exist (pi stops there too). Cycles end the walk.
func (s *Session) PathTo(e *Entry) []*Entry {
	// A walk longer than the session has entries went round a cycle; only
	// then is a seen-set needed (one for every walk was 20% of a 1 GB
	// compact --dry-run). The chain is walked twice, to count and then to
	// fill a path of exactly that length from its end: grown by append, the
	// path of a 1 GB session left four times its size as garbage on every
	// walk.
	n, limit := 0, len(s.Entries)+1
	pos := s.position(e)
	for cur, p := e, pos; cur != nil; {
		if n == limit {
			return s.pathToCyclic(e)
		}
		n++
		if cur.forms.parent() == idNone {
			break
		}
		cur, p = s.Parent(cur, p)
	}
	if n == 0 {
		return nil // e is nil: callers test for a nil path
	}
	path := make([]*Entry, n)
	for cur, p, i := e, pos, n-1; i >= 0; i-- {
		path[i] = cur
		if i > 0 {
			cur, p = s.Parent(cur, p)
		}
	}
	return path
}

// Parent is the entry cur.ParentID names (ByID: the last one with that
// id) and its position in s.Entries, given cur's (-1: unknown), for a
// walk up the parent chain. In a session without duplicate ids the entry
// before cur in file order is that parent whenever its id matches, as
// nearly always in an append-only file, and takes no lookup in the id
// index: one per entry (then a map) was 7% of the CPU of a 1 GB estimate.
func (s *Session) Parent(cur *Entry, pos int) (*Entry, int) {
	if pos > 0 && len(s.dups) == 0 && cur.forms.parent() != idNone {
		if p := s.Entries[pos-1]; cur.childOf(p) {
			return p, pos - 1
		}
	}
	if p := s.byID.positionOfKey(cur.parentKey()); p >= 0 {
		return s.Entries[p], p
	}
	return nil, -1
}

// pathToCyclic is PathTo for a parent chain with a cycle: the walk ends at
// the first entry seen twice.
func (s *Session) pathToCyclic(e *Entry) []*Entry {
	var rev []*Entry
	seen := map[*Entry]bool{}
	for cur := e; cur != nil && !seen[cur]; {
		seen[cur] = true
		rev = append(rev, cur)
		if cur.forms.parent() == idNone {
			break
		}
		cur = s.byID.getKey(cur.parentKey())
	}
	reverse(rev)
	return rev
}

func reverse(rev []*Entry) {
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
}

// ContextMessage is one message of the rebuilt context and the entry that
// produced it.
type ContextMessage struct {
	Entry *Entry
	// Role: user, assistant, toolResult, bashExecution, custom,
	// compactionSummary or branchSummary.
	Role string
}

// Tokens is pi's heuristic estimate of the message.
func (m ContextMessage) Tokens() int { return m.Entry.Tokens() }

// ModelRef is the model pi derives from the path.
type ModelRef struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// Context is the result of pi's buildSessionContext.
type Context struct {
	Messages      []ContextMessage
	Path          []*Entry
	Compaction    *Entry // the compaction in force, nil if none
	Model         *ModelRef
	ThinkingLevel string
	// KeptStart is the path index of the first kept entry before the
	// compaction (-1 when nothing before the compaction is kept).
	KeptStart int
	// CompactionIndex is the path index of Compaction (-1 if none).
	CompactionIndex int

	branchOf *Session // set by Session.Context
}

// Context rebuilds the active context exactly as pi's buildSessionContext.
func (s *Session) Context() *Context {
	c := BuildContext(s.Branch())
	c.branchOf = s
	return c
}

// IsBranchOf reports whether the context is s.Context(), so that its Path is
// s.Branch() and need not be walked again.
func (c *Context) IsBranchOf(s *Session) bool { return c.branchOf == s }

// BuildContext rebuilds the context from a root→leaf path.
func BuildContext(path []*Entry) *Context {
	c := &Context{Path: path, ThinkingLevel: "off", KeptStart: -1, CompactionIndex: -1}
	var model *Entry // the last entry that sets the model
	edits := false
	reset := -1 // the last OpenClaw reset boundary
	defer func() {
		if edits {
			c.applyEdits()
		}
	}()
	for i, e := range path {
		switch e.Type() {
		case "context_edit":
			edits = true
		case "thinking_level_change":
			c.ThinkingLevel = e.ThinkingLevel()
		case "model_change":
			model = e
		case "message":
			if e.Role() == "assistant" {
				model = e
			}
		case "compaction":
			c.Compaction = e
			c.CompactionIndex = i
		case "reset":
			reset = i
		}
	}
	if model != nil {
		c.Model = &ModelRef{Provider: model.Provider(), ModelID: model.Model()}
	}
	if reset > c.CompactionIndex {
		c.Compaction, c.CompactionIndex = nil, -1
		c.afterReset(path, reset)
		return c
	}
	if c.Compaction == nil {
		// Room for every entry (most produce a message): grown by append,
		// a 1 GB session's context was copied a dozen times over, and the
		// last copy held two arrays at once at the peak.
		if len(path) > 0 {
			c.Messages = make([]ContextMessage, 0, len(path))
		}
		for _, e := range path {
			c.appendEntry(e)
		}
		return c
	}
	// pi finds the compaction's index by id: the first path entry with that
	// id; its first kept entry is the first before it with the id it
	// names. One pass finds both (a pass each was a third of the CPU of
	// rebuilding a 1 GB session's context, every entry a cache miss).
	kept, at := c.Compaction.FirstKeptEntryID(), c.Compaction.key()
	keptKey := packed(kept)
	for i, e := range path {
		if e.Type() == "compaction" && e.is(at) {
			c.CompactionIndex = i
			break
		}
		if c.KeptStart < 0 && kept != "" && e.is(keptKey) {
			c.KeptStart = i
		}
	}
	n := len(path) - c.CompactionIndex // the summary, then what follows
	if c.KeptStart >= 0 {
		n += c.CompactionIndex - c.KeptStart
	}
	c.Messages = make([]ContextMessage, 0, n+1)
	c.Messages = append(c.Messages, ContextMessage{Entry: c.Compaction, Role: "compactionSummary"})
	if sys := c.Compaction.SystemMessage(); sys != nil {
		// pi 1.6.0 sends it before the summary; it follows it here so that
		// Messages[0] stays the summary the writers check. Sizes and
		// estimates do not depend on the order.
		c.Messages = append(c.Messages, ContextMessage{Entry: sys, Role: "system"})
	}
	if c.KeptStart >= 0 {
		for _, e := range path[c.KeptStart:c.CompactionIndex] {
			if e.Type() == "message" && e.Role() == "system" {
				continue // replayed from the compaction (buildContextEntries)
			}
			c.appendEntry(e)
		}
	}
	for _, e := range path[c.CompactionIndex+1:] {
		c.appendEntry(e)
	}
	return c
}

// KeptStarts maps the path index of every compaction on a root→leaf path
// to the path index of its first kept entry — the first entry before it
// with the id its firstKeptEntryId names, as pi's buildSessionContext finds
// it —, or -1 when it keeps nothing from before itself. Only the ids that
// compactions name are remembered: a map of every id on the path was 1.5
// million inserts per estimate of a 1 GB session. One walk from the leaf
// finds them: a compaction names its id before the walk reaches the
// entries before it, and the last of those the walk meets is the first on
// the path (two walks from the root, each entry looked up in the map, were
// 65 ms at 1 GB); a bit per id number spares the lookup of the entries no
// compaction names.
func KeptStarts(path []*Entry) map[int]int {
	first := map[packedID]int{} // named id → first path index met since named, -1 until met
	var named idBits
	var compactions []int
	for i := len(path) - 1; i >= 0; i-- {
		e := path[i]
		if named.has(e.id) {
			if _, ok := first[e.key()]; ok {
				first[e.key()] = i
			}
		}
		if e.Type() != "compaction" {
			continue
		}
		compactions = append(compactions, i)
		if id := e.FirstKeptEntryID(); id != "" {
			if k := packed(id); !namedID(first, k) {
				first[k] = -1
				named.add(k.v)
			}
		}
	}
	return keptByCompaction(path, compactions, first)
}

// keptByCompaction maps each compaction's path index to its first kept
// entry's: the first path index found for the id it names (first), if
// that entry comes before it, else -1.
func keptByCompaction(path []*Entry, compactions []int, first map[packedID]int) map[int]int {
	out := make(map[int]int, len(compactions))
	for _, i := range compactions {
		out[i] = -1
		if id := path[i].FirstKeptEntryID(); id != "" {
			if k := first[packed(id)]; k >= 0 && k < i {
				out[i] = k
			}
		}
	}
	return out
}

// idBits is a set of id numbers' low bits: has never misses an id added,
// and seldom holds one that was not.
type idBits [1 << 12]uint64

func (b *idBits) add(v uint32)      { v &= 1<<18 - 1; b[v>>6] |= 1 << (v & 63) }
func (b *idBits) has(v uint32) bool { v &= 1<<18 - 1; return b[v>>6]&(1<<(v&63)) != 0 }

// namedID reports whether a compaction after the walk's point named k.
func namedID(first map[packedID]int, k packedID) bool { _, ok := first[k]; return ok }

// applyEdits applies pi 1.6.0's context_edit entries (buildSessionProjection):
// the latest edit of an entry among the context's entries replaces its
// content (user, assistant, toolResult and custom messages) or, with a
// null replacement, removes its message. An edited message's entry is a
// copy sized by the replacement, in no session's entries.
func (c *Context) applyEdits() {
	from := 0
	if c.Compaction != nil {
		from = c.CompactionIndex + 1
		if c.KeptStart >= 0 {
			from = c.KeptStart
		}
	}
	latest := map[string]*Entry{}
	for _, e := range c.Path[from:] {
		if e.Type() == "context_edit" && e.TargetID() != "" {
			latest[e.TargetID()] = e
		}
	}
	if len(latest) == 0 {
		return
	}
	out := c.Messages[:0]
	for _, m := range c.Messages {
		ed := latest[m.Entry.ID()]
		if ed == nil || m.Entry == c.Compaction {
			out = append(out, m)
			continue
		}
		r := ed.rareOrNone()
		if r.replaceNull {
			continue
		}
		if r.replacement == nil {
			out = append(out, m)
			continue
		}
		switch m.Role {
		case "user", "assistant", "toolResult", "custom":
			cp := *m.Entry
			cs := r.replacement
			cp.Images, cp.Wide = count32(cs.images), count32(cs.wide)
			switch m.Role {
			case "user":
				cp.Chars = cs.text
				if cs.isString {
					cp.Chars = cs.strLen
				}
			case "assistant":
				// A string replacement becomes one text block (pi).
				cp.Chars = cs.text + cs.thinking + cs.toolCalls
				if cs.isString {
					cp.Chars = cs.strLen
				}
			default:
				cp.Chars = cs.customChars()
			}
			m.Entry = &cp
		}
		out = append(out, m)
	}
	c.Messages = out
}

func (c *Context) appendEntry(e *Entry) {
	if e.ProducesMessage() && !e.excluded() {
		c.Messages = append(c.Messages, ContextMessage{Entry: e, Role: e.Role()})
	}
}

// OpenClaw 2026.9 (session version 4) adds two things to pi's tree, read
// here as its context builder reads them (openclaw dist
// session-D9cHHQGH.mjs, packages/agent-core/src/harness/session/session.ts:
// resolveSessionContextWindow, iterateSessionContextEntries,
// projectSessionEntryMessage; selectResetKeptEntries in
// tool-result-pairing-*.mjs):
//
//   - a "reset" entry {reason, firstKeptEntryId?} (/new, /reset, a
//     session reset) is a boundary like a compaction: the context starts
//     after the last reset or compaction on the path, whichever is later.
//     A reset brings no summary; of the entries from its firstKeptEntryId
//     to it (the "preserve-tail" reset) only the user and assistant
//     messages and the tool results that answer their calls are kept.
//   - a message with excludeFromContext:true (a context-free command's
//     prompt and answer, a nested tool's activity record) is shown but
//     not sent: it is not in the context — unless a reset kept it.
//
// pi writes excludeFromContext only on its bashExecution messages (!!
// commands), which pi's own buildSessionContext keeps in the context (its
// convertToLlm drops them as it sends): those stay in.

// excluded: an OpenClaw message that is not sent (excludeFromContext).
func (e *Entry) excluded() bool {
	return e.ExcludeFromContext && e.Type() == "message" && e.Role() != "bashExecution"
}

// afterReset builds the context after the OpenClaw reset at path[reset].
func (c *Context) afterReset(path []*Entry, reset int) {
	start := reset
	if kept := path[reset].FirstKeptEntryID(); kept != "" {
		k := packed(kept)
		for i, e := range path[:reset] {
			if e.is(k) {
				start, c.KeptStart = i, i
				break
			}
		}
	}
	c.Messages = make([]ContextMessage, 0, len(path)-start)
	calls := map[string]bool{}
	for _, e := range path[start:reset] {
		if e.Type() != "message" {
			continue
		}
		switch e.Role() {
		case "assistant":
			for _, id := range e.ToolCallIDs {
				calls[id] = true
			}
		case "toolResult":
			if !calls[e.ToolCallID] {
				continue
			}
			delete(calls, e.ToolCallID)
		case "user":
		default:
			continue
		}
		// Kept by the reset: sent even when excludeFromContext.
		c.Messages = append(c.Messages, ContextMessage{Entry: e, Role: e.Role()})
	}
	for _, e := range path[reset+1:] {
		c.appendEntry(e)
	}
}

// HeuristicTokens is Σ pi estimateTokens over the context.
func (c *Context) HeuristicTokens() int {
	n := 0
	for _, m := range c.Messages {
		n += m.Tokens()
	}
	return n
}

// UsageEstimate is pi's estimateContextTokens: the last trusted assistant
// usage plus the heuristic of the messages after it.
type UsageEstimate struct {
	Tokens         int
	UsageTokens    int
	TrailingTokens int
	// LastUsageIndex is the context index of the anchor, -1 without one.
	LastUsageIndex int
}

// EstimateContextTokens reproduces pi's estimateContextTokens.
func (c *Context) EstimateContextTokens() UsageEstimate {
	u := UsageEstimate{LastUsageIndex: -1}
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if e := c.Messages[i].Entry; c.Messages[i].Role == "assistant" && e.UsageTrusted() {
			u.LastUsageIndex = i
			u.UsageTokens = e.Usage.ContextTokens()
			break
		}
	}
	for i := u.LastUsageIndex + 1; i < len(c.Messages); i++ {
		u.TrailingTokens += c.Messages[i].Tokens()
	}
	u.Tokens = u.UsageTokens + u.TrailingTokens
	return u
}

// UsageStale reports pi's getContextUsage "unknown" case: the path has a
// compaction and no trusted assistant usage after it, so any usage anchor
// predates the compaction and overstates the context.
func (c *Context) UsageStale() bool {
	if c.Compaction == nil {
		return false
	}
	after := c.Path[c.CompactionIndex+1:]
	for i := len(after) - 1; i >= 0; i-- {
		if e := after[i]; e.Type() == "message" && e.Role() == "assistant" && e.StopReason() != "aborted" && e.StopReason() != "error" {
			return e.Usage.ContextTokens() <= 0
		}
	}
	return true
}

// TreeProblem is a defect of the entry tree that pi's loader cannot cope
// with: its walk from the leaf never ends.
type TreeProblem struct {
	// Kind is "duplicate id" or "parent cycle".
	Kind  string
	ID    string // the duplicated id, or an id on the cycle
	Lines []int  // lines of the entries involved, in file order
}

func (p TreeProblem) String() string {
	ls := make([]string, len(p.Lines))
	for i, l := range p.Lines {
		ls[i] = strconv.Itoa(l)
	}
	if p.Kind == "duplicate id" {
		return fmt.Sprintf("entry id %q is on lines %s", p.ID, strings.Join(ls, ", "))
	}
	if len(p.Lines) == 1 {
		return fmt.Sprintf("the entry on line %s is its own parent (a parentId cycle)", ls[0])
	}
	return fmt.Sprintf("the entries on lines %s are each other's ancestors (a parentId cycle)", strings.Join(ls, ", "))
}

// TreeProblems lists duplicate entry ids and parentId cycles, in file
// order. Writers refuse a session that has any: pi would hang on it.
func (s *Session) TreeProblems() []TreeProblem {
	return append(s.duplicateIDs(), s.parentCycles()...)
}

// duplicateIDs lists each id more than one entry has, with all their
// lines, in one pass over the entries.
func (s *Session) duplicateIDs() []TreeProblem {
	if len(s.dups) == 0 {
		return nil
	}
	lines := map[string][]int{}
	for _, d := range s.dups {
		lines[d.ID()] = nil
	}
	for _, e := range s.Entries {
		if l, ok := lines[e.ID()]; ok {
			lines[e.ID()] = append(l, e.Line)
		}
	}
	var out []TreeProblem
	for _, d := range s.dups {
		if l := lines[d.ID()]; l != nil {
			out = append(out, TreeProblem{Kind: "duplicate id", ID: d.ID(), Lines: l})
			lines[d.ID()] = nil
		}
	}
	return out
}

// parentCycles follows each entry's parents, colouring entries (by
// position) on the current walk 1 and finished ones 2: a walk that meets
// a 1 went round a cycle. A map of colours by entry and a map lookup per
// parent were 9% of a 1 GB roll.
func (s *Session) parentCycles() []TreeProblem {
	var out []TreeProblem
	color := make([]uint8, len(s.Entries))
	var walk []int
	for start := range s.Entries {
		walk = walk[:0]
		cur, pos := s.Entries[start], start
		for cur != nil && pos >= 0 && color[pos] == 0 {
			color[pos] = 1
			walk = append(walk, pos)
			if cur.forms.parent() == idNone {
				cur = nil
				break
			}
			cur, pos = s.Parent(cur, pos)
		}
		if cur != nil && pos >= 0 && color[pos] == 1 {
			p := TreeProblem{Kind: "parent cycle", ID: cur.ID()}
			on := false
			for _, w := range walk {
				on = on || w == pos
				if on {
					p.Lines = append(p.Lines, s.Entries[w].Line)
				}
			}
			sort.Ints(p.Lines)
			out = append(out, p)
		}
		for _, w := range walk {
			color[w] = 2
		}
	}
	return out
}

// Writable reports why ctxtool must not append to this session (nil when
// it may): pi cannot load its entry tree (a parentId cycle, which duplicate
// ids can create: pi's walk from the leaf never ends), or its file is not a
// regular, writable file. Duplicate ids without a cycle load in pi (the
// later entry wins, in pi as in ctxtool) and do not stop an append; they do
// stop Rewrite, whose re-parenting could close a cycle.
func (s *Session) Writable() error {
	if s.ReadOnly() {
		return &formats.ReadOnlyError{File: s.File, Format: s.Format()}
	}
	if s.File == "-" || s.fi == nil {
		return fmt.Errorf("%s: cannot write to standard input; give a session file path", s.File)
	}
	if err := s.PiLoadable(); err != nil {
		return err
	}
	_, err := WritablePath(s.File)
	return err
}

// PiLoadable returns a TreeError when pi's loader cannot load the session:
// a parentId cycle (which duplicate ids can create) makes its walk from the
// leaf never end.
func (s *Session) PiLoadable() error {
	var cycles []TreeProblem
	for _, p := range s.TreeProblems() {
		if p.Kind == "parent cycle" {
			cycles = append(cycles, p)
		}
	}
	if len(cycles) > 0 {
		return &TreeError{File: s.File, Problems: cycles}
	}
	return nil
}

// Rewritable is Writable for Rewrite: duplicate ids refuse too.
func (s *Session) Rewritable() error {
	if err := s.Writable(); err != nil {
		return err
	}
	if probs := s.TreeProblems(); len(probs) > 0 {
		return &TreeError{File: s.File, Problems: probs}
	}
	return nil
}
