package lint

import (
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// lines reports lines pi's loader drops or misreads.
func (c *checker) lines() {
	s := c.s
	for _, m := range s.Malformed {
		switch {
		case m.Truncated:
			c.report(RuleTornLine, m.Line, lineKey(m.Line),
				"the last line is torn: %s without a final newline that do not parse (%s) — a write cut short; pi skips it", sizeStr(m.Bytes), m.Err)
		case len(m.Objects) > 0:
			msg := fmt.Sprintf("%d JSON records glued on one line (%s); pi drops all of them", len(m.Objects), strings.Join(m.Objects, ", "))
			if m.HidesCompaction() {
				msg += " — one is a compaction that never took effect"
			}
			c.report(RuleGluedLine, m.Line, lineKey(m.Line), "%s", msg)
		default:
			c.report(RuleMalformedLine, m.Line, lineKey(m.Line),
				"not valid JSON (%s, %s); pi skips the line silently", m.Err, sizeStr(m.Bytes))
		}
	}
	if s.Size > 0 && !s.EndsWithNewline && !c.lastLineTorn() {
		c.report(RuleMissingNewline, s.Lines, "eof",
			"the file ends without a newline after line %d: the next append by pi glues onto this record and both are lost", s.Lines)
	}
	for _, l := range s.NonObjects {
		c.report(RuleNonObjectLine, l, lineKey(l), "valid JSON but not an object; pi loads it as an entry with no type or id")
	}
	for _, l := range s.ExtraHeaders {
		c.report(RuleExtraHeader, l, lineKey(l), "a second session header (the first is on line %d); pi loads it as a plain entry — were two sessions concatenated?", s.Header.Line)
	}
}

func (c *checker) lastLineTorn() bool {
	n := len(c.s.Malformed)
	return n > 0 && c.s.Malformed[n-1].Truncated
}

// invalidHeader reports a file pi would wipe on open.
func (c *checker) invalidHeader(err *transcript.InvalidHeaderError) {
	if err.Line == 0 {
		c.report(RuleInvalidHeader, 0, "header", "no parseable line at all: pi treats the file as an empty session and overwrites it")
		return
	}
	c.report(RuleInvalidHeader, err.Line, "header",
		"the first record is not a session header ({\"type\":\"session\",\"id\":…}): pi treats the file as empty and overwrites it on open")
}

// maxVersion is the newest session version a known writer puts in its
// header: 4, which the OpenClaw 2026.9 Gateway writes on every session it
// creates (its SessionManager's CURRENT_SESSION_VERSION; pi 1.6.0 writes
// 3). Its entries are v3's — ids and parentIds, the custom role — and both
// pi and OpenClaw read any version ≥ 3 without migrating it, as ctxtool's
// reader does; a higher number is a writer nobody here has seen.
const maxVersion = 4

// header checks the header of a loaded session.
func (c *checker) header() {
	h := c.s.Header
	if h.Version < 1 || h.Version > maxVersion {
		c.reportAt(RuleInvalidHeader, Warning, h.Line, "header-version",
			"unknown session version %d (pi writes 1–3, OpenClaw 2026.9 writes 4): a newer writer, or a corrupt header", h.Version)
	}
}

// tree checks ids and parent links.
func (c *checker) tree() {
	s := c.s
	v2 := s.Version >= 2
	for i, e := range s.Entries {
		if v2 && e.ID() == "" {
			c.report(RuleMissingID, e.Line, lineKey(e.Line), "%s entry without an id", entryKind(e))
			continue
		}
		if v2 {
			if winner := s.ByID(e.ID()); winner != e {
				f := c.report(RuleDuplicateID, e.Line, "id:"+e.ID()+"@"+fmt.Sprint(e.Line),
					"entry id %q is used again on line %d; pi keeps only that later entry, so children of this one hang off the other", e.ID(), winner.Line)
				setEntry(f, e)
			}
		}
		if e.ParentID() != "" && s.ByID(e.ParentID()) == nil {
			if c.onPath[i] {
				lost := 0
				for j := 0; j < i; j++ {
					if !c.onPath[j] {
						lost++
					}
				}
				f := c.report(RuleBrokenParent, e.Line, "parent:"+e.ID(),
					"parentId %q names no entry: pi's context starts here and the %d earlier entries are not on the path", e.ParentID(), lost)
				setEntry(f, e)
			} else {
				f := c.reportAt(RuleBrokenParent, Warning, e.Line, "parent:"+e.ID(),
					"parentId %q names no entry (this entry is off the path to the leaf)", e.ParentID())
				setEntry(f, e)
			}
		}
		switch e.Type() {
		case "label":
			if e.TargetID() != "" && s.ByID(e.TargetID()) == nil {
				c.report(RuleDanglingRef, e.Line, "label:"+e.ID(), "label targets %q, which names no entry", e.TargetID())
			}
		case "branch_summary":
			if e.FromID() != "" && e.FromID() != "root" && s.ByID(e.FromID()) == nil {
				c.report(RuleDanglingRef, e.Line, "from:"+e.ID(), "branch summary fromId %q names no entry", e.FromID())
			}
		}
	}
	c.cycles()
	c.unreachable()
}

// cycles finds parent cycles. Every cycle has an entry whose parent is not
// earlier in the file (parents normally precede children), so only those
// entries start a walk; a normal file costs one comparison per entry.
func (c *checker) cycles() {
	s := c.s
	inCycle := map[*transcript.Entry]bool{}
	onLeafPath := false
	if p := c.ctx.Path; len(p) > 0 && p[0].ParentID() != "" && s.ByID(p[0].ParentID()) != nil {
		// The path walk from the leaf only stops at an existing parent when
		// it came back to an entry it had seen: the leaf runs into a cycle.
		onLeafPath = true
	}
	const maxSteps = 10_000_000
	steps := 0
	for _, e := range s.Entries {
		p := s.ByID(e.ParentID())
		if e.ParentID() == "" || p == nil || p.Line < e.Line || inCycle[e] {
			continue
		}
		var members []*transcript.Entry
		seen := map[*transcript.Entry]bool{}
		for cur := e; cur != nil && !seen[cur] && steps < maxSteps; steps++ {
			seen[cur] = true
			members = append(members, cur)
			if cur.ParentID() == "" {
				break
			}
			next := s.ByID(cur.ParentID())
			if next == e {
				first := members[0]
				lines := make([]string, 0, len(members))
				for _, m := range members {
					inCycle[m] = true
					if m.Line < first.Line {
						first = m
					}
					lines = append(lines, fmt.Sprint(m.Line))
				}
				sev, what := Warning, "it is off the path to the leaf, but pi's /tree and any branch into it never return"
				if onLeafPath && c.leafReaches(members) {
					sev, what = Error, "the leaf's path runs into it, so pi hangs while loading the session"
				}
				f := c.reportAt(RuleParentCycle, sev, first.Line, "cycle:"+first.ID(),
					"parent links form a cycle through %d entries (lines %s): %s", len(members), strings.Join(lines, ", "), what)
				setEntry(f, first)
				break
			}
			cur = next
		}
	}
}

// leafReaches reports whether the leaf's parent walk enters one of the
// given entries.
func (c *checker) leafReaches(members []*transcript.Entry) bool {
	set := map[*transcript.Entry]bool{}
	for _, m := range members {
		set[m] = true
	}
	for _, e := range c.ctx.Path {
		if set[e] {
			return true
		}
	}
	return false
}

// unreachable reports each run of consecutive entries that are off the
// path to the leaf, once.
func (c *checker) unreachable() {
	if !c.enabled(RuleUnreachable) {
		return
	}
	entries := c.s.Entries
	start := 0
	if r := c.rootCompaction(); r != nil {
		for start < len(entries) && entries[start] != r {
			start++ // history the foreign format's compaction replaced
		}
	}
	for i := start; i < len(entries); {
		if c.onPath[i] {
			i++
			continue
		}
		j := i
		for j < len(entries) && !c.onPath[j] {
			j++
		}
		first, last := entries[i], entries[j-1]
		what := fmt.Sprintf("line %d is", first.Line)
		if j-i > 1 {
			what = fmt.Sprintf("%d entries (lines %d–%d) are", j-i, first.Line, last.Line)
		}
		f := c.report(RuleUnreachable, first.Line, "off:"+first.ID(), "%s not on the path to the leaf (line %d): pi never sends them", what, c.leafLine())
		setEntry(f, first)
		i = j
	}
}

func (c *checker) leafLine() int {
	if l := c.s.Leaf(); l != nil {
		return l.Line
	}
	return 0
}

func setEntry(f *Finding, e *transcript.Entry) {
	if f != nil && e != nil && !strings.HasPrefix(e.ID(), "v1:") {
		f.EntryID = e.ID()
	}
}

func lineKey(line int) string { return fmt.Sprintf("line:%d", line) }

// entryKind names an entry for messages: "assistant message", "compaction".
func entryKind(e *transcript.Entry) string {
	if e.Type() == "message" && e.Role() != "" {
		return e.Role() + " message"
	}
	if e.Type() == "" {
		return "untyped"
	}
	return e.Type()
}

// sizeStr writes a byte count for humans.
func sizeStr(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
