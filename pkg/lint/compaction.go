package lint

import (
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// compactions checks every compaction on the path. The one in force (the
// last) shapes the context pi sends; earlier ones are history, so their
// findings are notes.
func (c *checker) compactions() {
	path := c.ctx.Path
	var active []int // pi's chars/4 of the context at each path index
	// first is each id's first path index, what pi's scan for a
	// firstKeptEntryId finds: one map for the path instead of a scan of
	// the prefix per compaction (quadratic: 72 s of a 1 GB lint).
	first := make(map[string]int, len(path))
	for i := len(path) - 1; i >= 0; i-- {
		first[path[i].ID()] = i
	}
	for i, e := range path {
		if e.Type() != "compaction" {
			continue
		}
		sev := func(def Severity) Severity {
			if e != c.ctx.Compaction {
				return Note
			}
			return def
		}
		superseded := ""
		if e != c.ctx.Compaction {
			superseded = fmt.Sprintf(" (superseded by the compaction on line %d)", c.ctx.Compaction.Line)
		}
		kept := keptStart(first, path, i)
		c.keptOffPath(e, kept, path, i, sev(Error), superseded)
		if kept >= 0 {
			c.splitsToolPair(path, kept, i, sev(Error), superseded)
		}
		if i == 0 {
			// a new history (a foreign root compaction, or compact
			// --truncate's rewrite): nothing before it to reclaim here
			if c.rootCompaction() != nil {
				continue // no summary needed either (see rootCompaction)
			}
			c.emptySummary(e, sev(Warning), superseded)
			continue
		}
		if c.enabled(RuleCompactionNoGain) {
			if active == nil {
				active = estimate.ActiveTokens(path)
			}
			before, after := 0, active[i]
			if i > 0 {
				before = active[i-1]
			}
			if after >= before {
				f := c.reportAt(RuleCompactionNoGain, sev(Warning), e.Line, "nogain:"+e.ID(),
					"the context is %d tokens before this compaction and %d after it (pi's chars/4): it reclaims nothing%s", before, after, superseded)
				setEntry(f, e)
			}
		}
		c.emptySummary(e, sev(Warning), superseded)
	}
}

// keptStart is the path index of the compaction's first kept entry, found
// the way pi's buildSessionContext finds it (-1: nothing kept).
func keptStart(first map[string]int, path []*transcript.Entry, ci int) int {
	id := path[ci].FirstKeptEntryID()
	if id == "" {
		return -1
	}
	if k, ok := first[id]; ok && k < ci {
		return k
	}
	return -1
}

// keptOffPath reports a firstKeptEntryId that names nothing on the path
// before the compaction. An empty one keeps nothing on purpose.
func (c *checker) keptOffPath(e *transcript.Entry, kept int, path []*transcript.Entry, ci int, sev Severity, superseded string) {
	if kept >= 0 {
		return
	}
	var why string
	switch id := e.FirstKeptEntryID(); {
	case c.s.Version < 2:
		idx := e.FirstKeptEntryIndex()
		if idx <= 0 {
			return // absent or the header: keeps nothing on purpose
		}
		if t := c.entryAtIndex(idx); t == nil {
			why = fmt.Sprintf("firstKeptEntryIndex %d names no loaded record (a malformed line shifted the index, or it is past the end)", idx)
		} else {
			why = fmt.Sprintf("firstKeptEntryIndex %d names line %d, which is not before the compaction", idx, t.Line)
		}
	case id == "":
		return
	case c.s.ByID(id) == nil:
		why = fmt.Sprintf("firstKeptEntryId %q names no entry", id)
	default:
		t := c.s.ByID(id)
		where := "on another branch"
		for k := ci + 1; k < len(path); k++ {
			if path[k] == t {
				where = "after the compaction"
			}
		}
		if t == e {
			where = "the compaction itself"
		}
		why = fmt.Sprintf("firstKeptEntryId %q is line %d, %s", id, t.Line, where)
	}
	lost := 0
	for k := ci - 1; k >= 0 && path[k].Type() != "compaction"; k-- {
		if path[k].ProducesMessage() {
			lost++
		}
	}
	if ci == 0 && c.s.Version >= 2 && len(path) > 1 && path[1].ID() == e.FirstKeptEntryID() {
		// compact --truncate's rewrite: the compaction is the root and
		// names the entry after it; pi keeps every entry after it, the
		// same context as the compaction appended to the full file
		return
	}
	f := c.reportAt(RuleCompactionKeptOff, sev, e.Line, "kept:"+e.ID(),
		"%s: pi keeps nothing from before this compaction, so the %d messages since the previous one survive only in the summary%s", why, lost, superseded)
	setEntry(f, e)
}

// entryAtIndex is the entry at pi's loader index (v1 firstKeptEntryIndex).
func (c *checker) entryAtIndex(idx int) *transcript.Entry {
	for _, e := range c.s.Entries {
		if e.Index == idx {
			return e
		}
		if e.Index > idx {
			break
		}
	}
	return nil
}

// splitsToolPair reports a kept region that starts inside a tool turn: a
// kept tool result whose call lies before the cut.
func (c *checker) splitsToolPair(path []*transcript.Entry, kept, ci int, sev Severity, superseded string) {
	comp := path[ci]
	cut := path[kept]
	// Calls of the turn the cut falls in: walk back to the user message.
	before := map[string]*transcript.Entry{}
	for k := kept - 1; k >= 0; k-- {
		p := path[k]
		if p.Type() == "message" && p.Role() == "user" {
			break
		}
		if p.Type() == "message" && p.Role() == "assistant" {
			for _, id := range p.ToolCallIDs {
				if before[id] == nil {
					before[id] = p
				}
			}
		}
	}
	for k := kept; k < ci; k++ {
		r := path[k]
		if r.Type() == "message" && r.Role() == "user" {
			break
		}
		if r.Type() != "message" || r.Role() != "toolResult" {
			continue
		}
		call := before[r.ToolCallID]
		if call == nil && k != kept {
			continue
		}
		where := "whose tool call is not in the context"
		if call != nil {
			where = fmt.Sprintf("whose tool call is on line %d, before the cut", call.Line)
		}
		f := c.reportAt(RuleCompactionSplits, sev, comp.Line, "split:"+comp.ID(),
			"the kept region starts at line %d, inside a tool turn: it keeps the tool result on line %d (%q) %s — the provider rejects it (earendil-works/pi#8667)%s",
			cut.Line, r.Line, r.ToolCallID, where, superseded)
		setEntry(f, comp)
		return
	}
}

// emptySummary reports a compaction whose summary says nothing.
func (c *checker) emptySummary(e *transcript.Entry, sev Severity, superseded string) {
	if !c.enabled(RuleCompactionEmpty) {
		return
	}
	if e.Chars == 0 {
		f := c.reportAt(RuleCompactionEmpty, sev, e.Line, "empty:"+e.ID(), "the summary is empty: the history it replaced is lost%s", superseded)
		setEntry(f, e)
		return
	}
	if e.Chars > 4000 {
		return // a skeleton is short; do not read long summaries back
	}
	m, err := c.s.Message(e)
	if err != nil || m == nil {
		return
	}
	if emptySkeleton(m.Summary) {
		f := c.reportAt(RuleCompactionEmpty, sev, e.Line, "empty:"+e.ID(),
			"the summary is an empty skeleton (headings with nothing under them): the history it replaced is lost (openclaw/openclaw#120663)%s", superseded)
		setEntry(f, e)
	}
}

var (
	skeletonHeading = lazyre.New(`^(#{1,6}\s.*|\*\*[^*]+:?\*\*:?|---+|===+)$`)
	skeletonFiller  = lazyre.New(`(?i)^[-*•\s\[\]x]*(none|nothing|n/?a|tbd|empty|not applicable|no prior history|no history|\(none\)|\(empty\)|no (progress|decisions|constraints|next steps|blockers|context|todos|asks))[^a-z0-9]*(yet|so far|captured|recorded|noted|to report|at this time)?[.!]?$`)
)

// emptySkeleton reports whether a summary has only headings and filler
// ("None.", "No prior history.") under them.
func emptySkeleton(summary string) bool {
	for _, line := range strings.Split(summary, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || skeletonHeading().MatchString(line) || skeletonFiller().MatchString(line) {
			continue
		}
		// Bare markers ("- ", "- [ ]", "1.") say nothing either.
		if strings.Trim(line, "-*•[]x0123456789. ") == "" {
			continue
		}
		return false
	}
	return true
}
