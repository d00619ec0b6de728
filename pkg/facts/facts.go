// Package facts finds, in the text of a session, the statements an agent
// cannot resume its work without — decisions, constraints and prohibitions,
// numbers with their context, identifiers, open requests and errors — each
// with the line of the session it came from, and tells whether a later text
// (a summary, a kept tail, a memory note) still carries it.
//
// It is a detector, not an understanding: it matches cue words and shapes
// (paths, URLs, hashes, "port 31686", "we decided to …", "never …"). Its job
// is to make forgetting visible and cheap to avoid. Compaction keeps what it
// finds in its extractive summaries and audits every summary with it; the
// memory flush and the linter reuse it.
//
// Use:
//
//	srcs, _ := facts.FromEntries(session, entries) // or build []facts.Source by hand
//	found := facts.Detect(srcs)
//	dropped := facts.Missing(found, summary, keptTailText)
//
// The API is stable: Class values, Fact fields and the functions below are
// relied on by other packages and by the JSON that `compact --audit` prints.
//
// It reads text only: no model, no I/O, no session writes.
package facts

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Class is the kind of a fact.
type Class string

// The classes, in the order a resumed agent needs them when room is short.
const (
	// Constraint is a rule or prohibition: "never log the api_secret
	// field", "do not restart X during business hours", "must stay on Go
	// 1.22".
	Constraint Class = "constraint"
	// Request is an ask or promise that may still be open: "please also add
	// a --verbose flag", "TODO: migrate the cron job", "can you check …?".
	// The detector cannot know whether it was done; it keeps them all.
	Request Class = "request"
	// Decision is a choice made: "we decided to use SQLite for the cache",
	// "going with option B", "switched to the v2 API instead of v1".
	Decision Class = "decision"
	// Error is a failure seen: an error tool result's first line, or a line
	// such as "panic: …", "Error: …", "connection refused".
	Error Class = "error"
	// Number is a number with its context: a port, version, limit, size,
	// duration or percentage ("port 31686", "v1.24.3", "512 MB", "85%",
	// "max 200 connections").
	Number Class = "number"
	// Identifier is an opaque token that must be copied exactly: URL, path,
	// UUID, hash, host:port, ticket/issue id, long numeric id.
	Identifier Class = "identifier"
)

// classes lists every class in rank order (most needed first).
var classes = []Class{Constraint, Request, Decision, Error, Number, Identifier}

// Classes returns a copy of every class in rank order.
func Classes() []Class { return slices.Clone(classes) }

// Rank is the position of c in Classes (lower = needed more); unknown
// classes rank last.
func (c Class) Rank() int {
	for i, x := range classes {
		if x == c {
			return i
		}
	}
	return len(classes)
}

// Fact is one detected fact.
type Fact struct {
	Class Class `json:"class"`
	// Kind refines the class: for identifiers url, path, uuid, hash,
	// hostport, ticket, issue, id; for numbers port, version, percent,
	// size, duration, count; empty for the sentence classes.
	Kind string `json:"kind,omitempty"`
	// Value is what must survive verbatim: the identifier, the number as
	// written (with its unit), or for sentence classes the sentence.
	Value string `json:"value"`
	// Sentence is the shortest sentence (or line) that carries the fact,
	// at most MaxSentence characters; for sentence classes it equals Value.
	Sentence string `json:"sentence"`
	// Line is the 1-based session line of the first occurrence, Lines all
	// lines it occurs on (sorted, de-duplicated).
	Line  int   `json:"line"`
	Lines []int `json:"lines,omitempty"`
	// EntryID and Role are those of the first occurrence.
	EntryID string `json:"entryId,omitempty"`
	Role    string `json:"role,omitempty"`
	// Origin is the most conversational role it was seen in: "user" beats
	// "assistant" beats tool output. Summaries rank by it.
	Origin string `json:"origin,omitempty"`
	// Seq is the position of the last source it was seen in (higher =
	// more recent).
	Seq int `json:"-"`
}

// Key identifies a fact for de-duplication: class plus normalised value.
func (f Fact) Key() string { return string(f.Class) + "\x00" + keyOf(f.Class, f.Value) }

func keyOf(c Class, v string) string {
	switch c {
	case Identifier:
		return v
	case Number:
		return strings.ToLower(strings.Join(strings.Fields(v), " "))
	}
	return normalize(v)
}

// Source is one piece of session text: a message, a tool call's
// arguments, a tool result.
type Source struct {
	Text    string
	Line    int
	EntryID string
	// Role is the message role: user, assistant, toolResult,
	// bashExecution, custom, branchSummary, compactionSummary; "toolCall"
	// for an assistant's tool-call arguments.
	Role string
	// IsError marks a tool result the tool flagged as failed.
	IsError bool
}

// MaxSentence bounds Fact.Sentence (in runes), as OpenClaw bounds a tool
// failure line (240).
const MaxSentence = 240

// Detect finds the facts of srcs, de-duplicated by Key, in order of first
// appearance. A fact seen several times keeps its first line, every line in
// Lines, the shortest carrying sentence, and the most conversational origin.
func Detect(srcs []Source) []Fact {
	groups := make([][]Fact, len(srcs))
	for i, s := range srcs {
		groups[i] = Scan(s)
	}
	return Merge(groups)
}

// Scan finds the facts of one source (de-duplicated within it). Callers
// that look at the same text more than once (a summary and its audit)
// scan each message once and Merge the results.
func Scan(s Source) []Fact {
	d := &detector{index: map[string]int{}}
	d.source(0, s)
	return d.out
}

// Merge de-duplicates scanned facts the way Detect does; groups are in
// session order (a group's index is its recency).
func Merge(groups [][]Fact) []Fact {
	d := &detector{index: map[string]int{}}
	for i, g := range groups {
		for _, f := range g {
			d.add(f, i)
		}
	}
	for i := range d.out {
		sort.Ints(d.out[i].Lines)
		d.out[i].Lines = uniqInts(d.out[i].Lines)
		if len(d.out[i].Lines) > 0 {
			d.out[i].Line = d.out[i].Lines[0]
		}
	}
	return d.out
}

type detector struct {
	out   []Fact
	index map[string]int
}

func (d *detector) add(f Fact, seq int) {
	f.Sentence = clip(f.Sentence, MaxSentence)
	if f.Class != Identifier && f.Class != Number {
		f.Value = f.Sentence
	}
	k := f.Key()
	if i, ok := d.index[k]; ok {
		g := &d.out[i]
		g.Lines = append(g.Lines, f.Line)
		if originRank(f.Role) < originRank(g.Origin) {
			g.Origin = f.Role
			if f.Sentence != "" && (f.Class == Identifier || f.Class == Number) {
				g.Sentence = f.Sentence // a conversational sentence explains it better
			}
		} else if f.Sentence != "" && runeLen(f.Sentence) < runeLen(g.Sentence) && originRank(f.Role) == originRank(g.Origin) {
			g.Sentence = f.Sentence
		}
		if seq > g.Seq {
			g.Seq = seq
		}
		return
	}
	f.Lines = []int{f.Line}
	f.Origin = f.Role
	f.Seq = seq
	d.index[k] = len(d.out)
	d.out = append(d.out, f)
}

// originRank orders roles by how much a resumed agent trusts them as
// statements of the work: the user's words first, tool output last.
func originRank(role string) int {
	switch role {
	case "user":
		return 0
	case "assistant", "custom", "branchSummary", "compactionSummary":
		return 1
	case "toolCall":
		return 2
	}
	return 3
}

// OriginRank exposes originRank for ranking summaries.
func OriginRank(role string) int { return originRank(role) }

// Tier ranks a fact for keeping (lower is kept first), the one ranking
// the extractive summary, its identifier retry and the agents' PreCompact
// instructions share.
// Tiers: the user's constraints first, then open requests, decisions,
// errors, numbers, identifiers; facts seen only in tool output lower, and
// statements found there (a README's "must", a skill's rules) lower still,
// below the agent's answers, so a document the agent read does not push
// out what the user and agent said.
func Tier(f Fact) int {
	t := f.Class.Rank()
	switch OriginRank(f.Origin) {
	case 2: // tool-call arguments
		t += 2
	case 3: // tool output: below what the conversation said
		t += 3
		switch f.Class {
		case Constraint, Decision, Request:
			t = max(t, TierDocStatement)
		}
	}
	return t
}

// TierDocStatement is the tier of a rule or decision found in tool output
// (a file, a page): below the agent's own answers.
const TierDocStatement = 6

func (d *detector) source(seq int, s Source) {
	if strings.TrimSpace(s.Text) == "" {
		return
	}
	base := Fact{Line: s.Line, EntryID: s.EntryID, Role: s.Role}
	if s.IsError {
		if l := errorLine(s.Text); l != "" {
			f := base
			f.Class, f.Sentence = Error, l
			d.add(f, seq)
		}
	}
	for _, sen := range Sentences(s.Text) {
		d.sentence(seq, base, s.Role, sen)
	}
}

// sentence classifies one sentence and collects its identifiers and
// numbers.
func (d *detector) sentence(seq int, base Fact, role, sen string) {
	ids, rest := findIdentifiers(sen)
	for _, id := range ids {
		f := base
		f.Class, f.Kind, f.Value, f.Sentence = Identifier, id.kind, id.value, around(sen, id.value)
		d.add(f, seq)
	}
	if isToolOutput(role) && reLogLine().MatchString(sen) {
		return // test/log lines: timings and ids of runs, not facts of the work
	}
	for _, n := range findNumbers(rest) {
		f := base
		f.Class, f.Kind, f.Value, f.Sentence = Number, n.kind, n.value, around(sen, n.value)
		d.add(f, seq)
	}
	if role == "toolCall" {
		return // arguments carry identifiers, not statements
	}
	words := runeLen(sen)
	if words < minSentence {
		return
	}
	if isError(sen, role) {
		d.addSentence(base, Error, sen, seq)
		return
	}
	if isToolOutput(role) && !wholeSentence(sen) && !reRequestAny().MatchString(sen) {
		return // a hard-wrapped fragment of a file or page, not a statement
	}
	lower := strings.ToLower(sen)
	maybeConstraint, maybeDecision := constraintCues.any(lower), decisionCues.any(lower)
	maybeRequest := requestCues.any(lower) || role == "user" || role == "assistant"
	if !maybeConstraint && !maybeDecision && !maybeRequest {
		return
	}
	prose := looksLikeProse(sen)
	switch {
	case prose && maybeConstraint && isConstraint(sen):
		d.addSentence(base, Constraint, sen, seq)
	case prose && maybeDecision && isDecision(sen):
		d.addSentence(base, Decision, sen, seq)
	case maybeRequest && isRequest(sen, role, prose):
		d.addSentence(base, Request, sen, seq)
	}
}

func (d *detector) addSentence(base Fact, c Class, sen string, seq int) {
	f := base
	f.Class, f.Sentence = c, sen
	d.add(f, seq)
}

// isToolOutput reports whether a role is output of a tool (not words
// someone said).
func isToolOutput(role string) bool { return role == "toolResult" || role == "bashExecution" }

// minSentence is the shortest sentence (runes) classified as a statement.
const minSentence = 12

// errorLine is the line of a failed tool's output that says what went
// wrong: the first one with an error cue, else the first non-trivial one.
func errorLine(s string) string {
	first := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if runeLen(l) < 4 {
			continue
		}
		if reErrorCue().MatchString(l) {
			return l
		}
		if first == "" {
			first = l
		}
	}
	return first
}

func uniqInts(xs []int) []int {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// ByClass groups facts by class, keeping their order.
func ByClass(fs []Fact) map[Class][]Fact {
	m := map[Class][]Fact{}
	for _, f := range fs {
		m[f.Class] = append(m[f.Class], f)
	}
	return m
}

// Count returns how many facts each class has (every class present, zero
// when none).
func Count(fs []Fact) map[Class]int {
	m := map[Class]int{}
	for _, c := range classes {
		m[c] = 0
	}
	for _, f := range fs {
		m[f.Class]++
	}
	return m
}

// wholeSentence reports whether a line of tool output is a sentence of its
// own: it does not start in lower case (the tail of a wrapped line) and
// ends with a sentence's punctuation (not cut at the wrap).
func wholeSentence(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	if unicode.IsLower(r) {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(strings.TrimRight(s, " *_`\"')"))
	return strings.ContainsRune(".!?。！？:;", last)
}
