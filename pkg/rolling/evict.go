// Package rolling implements ctxtool's rolling context window
// (docs/design/rolling-window.md): instead of summarising old history, the
// oldest messages of the active context are evicted and replaced by a short
// eviction note that tells the agent what left its window and how to search
// for it. The messages stay in the session file (and in the recall index), so
// nothing is lost and no model call is made.
//
// On disk an eviction is an appended `compaction` entry whose summary is the
// note and whose firstKeptEntryId is the first kept message: the only entry
// pi and OpenClaw understand that removes older entries from the rebuilt
// context (docs/design/pi-baseline.md), so both load the result natively.
//
// It must not call a model: the summarising fallback for sessions recall
// cannot cover is injected (FallbackFunc), and sizes come from
// estimate.Measure with the command's options (Roller.Size).
package rolling

import (
	"math"
	"strconv"
	"time"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Defaults of the rolling mode (config compaction.rolling.*).
const (
	DefaultTargetUtilization = 0.8
	DefaultMinKeepMessages   = 10
)

// Message is one message of the active context with its token estimate.
type Message struct {
	Entry  *transcript.Entry
	Role   string
	Tokens int
}

// EvictInput is everything Evict decides on. It is explicit (no session, no
// files) so that the token math can be tested on its own.
type EvictInput struct {
	// Messages is the active context in order (pi's buildSessionContext);
	// a compactionSummary, if any, is first.
	Messages []Message
	// TokensBefore is the best estimate of the whole context, including
	// what no message accounts for (system prompt, tools). 0 = Σ Tokens.
	TokensBefore      int
	ContextWindow     int
	TargetUtilization float64 // ≤ 0: DefaultTargetUtilization
	MinKeepMessages   int     // < 0: 0; the default is applied by callers
	// NoteTokens sizes the eviction note that will replace the evicted
	// messages, given the first kept index; nil = no note.
	NoteTokens func(firstKept int) int
	// Correction is added to every kept estimate: the difference between a
	// prediction and the measured context after the roll (see Roller.plan).
	Correction int
}

// Eviction is the outcome of Evict.
type Eviction struct {
	// FirstKept is the index in Messages of the first kept message;
	// 0 means nothing is evicted.
	FirstKept int
	Kept      []Message
	Evicted   []Message
	// Replaced is the previous compaction summary when it was evicted (it is
	// always the first message, so any eviction replaces it). It is not
	// counted in EvictedCount/EvictedTokens, which describe conversation
	// messages.
	Replaced *Message

	EvictedCount   int
	EvictedTokens  int
	ReplacedTokens int
	// NoteTokens is the size of the note included in KeptTokens.
	NoteTokens int
	// KeptTokens is the context after eviction: TokensBefore − everything
	// evicted + the note.
	KeptTokens   int
	TargetTokens int
	// TargetMet is false when minKeepMessages or tool-call pairing stopped
	// eviction above the target.
	TargetMet bool
	// Step is the size of the last indivisible span evicted (from the
	// previous valid cut to FirstKept): how far under the target the
	// eviction may land.
	Step int
	// FirstEvicted / LastEvicted bound the evicted conversation messages in
	// time (zero when none carries a timestamp).
	FirstEvicted, LastEvicted time.Time
	// Reason explains why nothing (or less than needed) was evicted.
	Reason string
}

// Evict is the rolling window's rollingEvict with explicit inputs: it evicts the
// shortest prefix of the context that brings it to TargetUtilization of the
// window (note included), keeps at least MinKeepMessages messages, and only
// cuts where no tool result would lose its call: the first kept message is
// never a toolResult, and no kept toolResult answers an evicted call. It
// makes no model call and does not look at content.
func Evict(in EvictInput) Eviction {
	n := len(in.Messages)
	target := in.TargetUtilization
	if target <= 0 {
		target = DefaultTargetUtilization
	}
	minKeep := in.MinKeepMessages
	if minKeep < 0 {
		minKeep = 0
	}
	z := newCutSizes(in)
	ev := Eviction{TargetTokens: int(math.Floor(target * float64(in.ContextWindow)))}
	if z.before <= ev.TargetTokens {
		ev.KeptTokens = z.before
		ev.Kept = in.Messages
		ev.TargetMet = true
		ev.Reason = "already at or under the target"
		return ev
	}
	best, last, prevCut := z.shortestCut(ev.TargetTokens, minKeep)
	switch {
	case best > 0:
		ev.TargetMet = true
		ev.Step = z.prefix[best] - z.prefix[prevCut]
	case last > 0:
		best = last
		ev.Reason = "minKeepMessages (" + strconv.Itoa(minKeep) + ") stops eviction above the target"
		if n-last > minKeep {
			ev.Reason = "no later cut point is valid (a tool call and its results stay together), so eviction stops above the target"
		}
	default:
		ev.KeptTokens = z.before
		ev.Kept = in.Messages
		ev.Reason = "nothing can be evicted: no valid cut point leaves minKeepMessages (" + strconv.Itoa(minKeep) + ") messages"
		if n <= minKeep {
			ev.Reason = "nothing can be evicted: the context has " + strconv.Itoa(n) + " messages, minKeepMessages is " + strconv.Itoa(minKeep)
		}
		return ev
	}
	z.evictBefore(&ev, best)
	return ev
}

// cutSizes answers Evict's size questions about a cut at i (evicting
// Messages[:i]).
type cutSizes struct {
	in     EvictInput
	prefix []int // prefix[i] = Σ tokens of Messages[:i]
	// before is the whole context before eviction.
	before int
}

func newCutSizes(in EvictInput) cutSizes {
	n := len(in.Messages)
	prefix := make([]int, n+1) // prefix[i] = Σ tokens of Messages[:i]
	for i, m := range in.Messages {
		prefix[i+1] = prefix[i] + m.Tokens
	}
	before := in.TokensBefore
	if before <= 0 {
		before = prefix[n]
	}
	return cutSizes{in: in, prefix: prefix, before: before}
}

// note is the size of the note that replaces Messages[:i].
func (z cutSizes) note(i int) int {
	if z.in.NoteTokens == nil {
		return 0
	}
	return z.in.NoteTokens(i)
}

// kept is the context left after evicting Messages[:i], the note not
// included.
func (z cutSizes) kept(i int) int {
	n := len(z.in.Messages)
	k := z.before - z.prefix[i]
	if floor := z.prefix[n] - z.prefix[i]; k < floor {
		k = floor // never claim less than the kept messages themselves
	}
	return k + z.in.Correction
}

// shortestCut looks for the first valid cut that brings the context (note
// included) to target tokens while keeping minKeep messages. It returns
// that cut (best, -1: none), the last valid cut it tried (-1: none) and
// the valid cut tried before the last one (0: none).
func (z cutSizes) shortestCut(target, minKeep int) (best, last, prevCut int) {
	msgs := z.in.Messages
	n := len(msgs)
	valid := validCuts(msgs)
	// Evict at least one conversation message: replacing only a previous
	// note or summary would rewrite the window without freeing it, and
	// would not be idempotent.
	lo := 1
	if n > 0 && msgs[0].Role == "compactionSummary" {
		lo = 2
	}
	best, last = -1, -1
	for i := lo; i < n && n-i >= minKeep; i++ {
		if !valid[i] {
			continue
		}
		if last > 0 {
			prevCut = last
		}
		last = i
		if z.kept(i) > target {
			continue
		}
		if z.kept(i)+z.note(i) <= target {
			best = i
			break
		}
	}
	return best, last, prevCut
}

// evictBefore records in ev the eviction of Messages[:best].
func (z cutSizes) evictBefore(ev *Eviction, best int) {
	ev.FirstKept = best
	ev.Kept = z.in.Messages[best:]
	ev.Evicted = z.in.Messages[:best]
	var sp rangeBuilder
	for i := range ev.Evicted {
		m := &ev.Evicted[i]
		if m.Role == "compactionSummary" {
			ev.Replaced = m
			ev.ReplacedTokens += m.Tokens
			continue
		}
		sp.add(m.Entry, m.Tokens)
	}
	ev.EvictedCount, ev.EvictedTokens = sp.Messages, sp.Tokens
	ev.FirstEvicted, ev.LastEvicted = sp.first, sp.last
	ev.NoteTokens = z.note(best)
	ev.KeptTokens = z.kept(best) + ev.NoteTokens
}

// validCuts marks the indices i where the context may start after evicting
// Messages[:i]: i must be a valid pi cut point (never a toolResult, and an
// entry pi can name: v2/v3 entries need an id), and no toolResult at or
// after i may answer a tool call made before i.
func validCuts(msgs []Message) []bool {
	n := len(msgs)
	valid := make([]bool, n+1)
	callAt := map[string]int{}
	// blocked[c+1]++ and blocked[j+1]-- for each result j answering call c:
	// every cut in (c, j] would orphan it.
	diff := make([]int, n+2)
	for j, m := range msgs {
		e := m.Entry
		if e == nil {
			continue
		}
		for _, id := range e.ToolCallIDs {
			callAt[id] = j
		}
		if m.Role == "toolResult" && e.ToolCallID != "" {
			if c, ok := callAt[e.ToolCallID]; ok && c < j {
				diff[c+1]++
				diff[j+1]--
			}
		}
	}
	blocked := 0
	for i := 0; i < n; i++ {
		blocked += diff[i]
		m := msgs[i]
		valid[i] = blocked == 0 && m.Role != "toolResult" && m.Role != "compactionSummary" &&
			m.Entry != nil && m.Entry.ID() != ""
	}
	return valid
}
