package compaction

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Audit says which facts of the summarised region a compaction dropped:
// the facts pkg/facts finds in the summarised messages (and the previous
// summary they replace) that appear neither in the new summary nor in the
// kept messages.
type Audit struct {
	// Facts counts the facts of the summarised region, per class in
	// ByClass.
	Facts   int                 `json:"facts"`
	ByClass map[facts.Class]int `json:"byClass"`
	// Dropped lists the facts that did not survive, in session order, with
	// their lines; DroppedByClass counts them.
	Dropped        []facts.Fact        `json:"dropped"`
	DroppedByClass map[facts.Class]int `json:"droppedByClass"`
	// DroppedMattered counts the dropped facts someone said or used (the
	// user, the agent, a tool call's arguments, a failed tool);
	// DroppedBulk those seen only in tool output nobody referred to (a
	// download page's hashes): dropping them is right.
	DroppedMattered int `json:"droppedMattered"`
	DroppedBulk     int `json:"droppedBulk"`
}

// maxDetailsDropped bounds the dropped facts written into the entry's
// details (the JSON output lists them all).
const maxDetailsDropped = 50

// DetailsAudit is the audit as the compaction entry's details.audit
// stores it: the counts and the first dropped facts.
type DetailsAudit struct {
	Facts          int                 `json:"facts"`
	Dropped        int                 `json:"dropped"`
	DroppedByClass map[facts.Class]int `json:"droppedByClass"`
	// DroppedFacts are the first 50 dropped facts (class, value, line).
	DroppedFacts []DroppedFact `json:"droppedFacts,omitempty"`
}

// DroppedFact is one dropped fact in details.audit.
type DroppedFact struct {
	Class facts.Class `json:"class"`
	Value string      `json:"value"`
	Line  int         `json:"line"`
}

// ForDetails shortens the audit for the compaction entry.
func (a *Audit) ForDetails() *DetailsAudit {
	if a == nil {
		return nil
	}
	d := &DetailsAudit{Facts: a.Facts, Dropped: len(a.Dropped), DroppedByClass: a.DroppedByClass}
	for i, f := range a.Dropped {
		if i == maxDetailsDropped {
			break
		}
		d.DroppedFacts = append(d.DroppedFacts, DroppedFact{Class: f.Class, Value: oneLine(f.Value, 160), Line: f.Line})
	}
	return d
}

// regionFacts are the facts of what a compaction replaces: the messages
// it summarises and the previous summary (whose facts it must carry).
func regionFacts(p *Preparation, msgs ...[]*Msg) []facts.Fact {
	var groups [][]facts.Fact
	if p.PreviousSummary != "" && p.PrevCompaction != nil {
		groups = append(groups, facts.Scan(facts.Source{Text: stripFileBlocks(p.PreviousSummary), Line: p.PrevCompaction.Line,
			EntryID: p.PrevCompaction.ID(), Role: "compactionSummary"}))
	}
	return facts.Merge(append(groups, msgFacts(msgs...)...))
}

// keptText is the text of the kept messages, as the fact detector reads it.
func keptText(s *transcript.Session, p *Preparation) (string, error) {
	msgs, err := loadMsgs(s, p.Kept)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range msgs {
		for _, src := range facts.FromMessage(m.E, m.M) {
			b.WriteString(src.Text)
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// audit checks which of found a summary (with the kept text) still
// carries.
func audit(found []facts.Fact, summary, kept string) *Audit {
	a := &Audit{Facts: len(found), ByClass: facts.Count(found)}
	a.Dropped = facts.Missing(found, summary, kept)
	if a.Dropped == nil {
		a.Dropped = []facts.Fact{}
	}
	a.DroppedByClass = facts.Count(a.Dropped)
	for _, f := range a.Dropped {
		if isBulk(f) {
			a.DroppedBulk++
		} else {
			a.DroppedMattered++
		}
	}
	return a
}

// droppedIdentifiers are the identifier values an audit found missing,
// in the order the extractive summariser ranks facts (factTier: said by
// the user before the agent before a tool call's arguments before bulk
// tool output; then distinctive shapes — URLs, paths, UUIDs, tickets,
// full hashes — before short hashes and numeric ids; recent before old),
// so the retry's bounded list asks for what mattered first.
func (a *Audit) droppedIdentifiers() []string {
	var ids []facts.Fact
	for _, f := range a.Dropped {
		if f.Class == facts.Identifier {
			ids = append(ids, f)
		}
	}
	weight := func(f facts.Fact) int {
		switch {
		case f.Kind == "id" || (f.Kind == "hash" && len(f.Value) < 12):
			return 2
		case f.Kind == "hash":
			return 1
		}
		return 0
	}
	sort.SliceStable(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if ta, tb := factTier(a), factTier(b); ta != tb {
			return ta < tb
		}
		if wa, wb := weight(a), weight(b); wa != wb {
			return wa < wb
		}
		return a.Seq > b.Seq
	})
	out := make([]string, len(ids))
	for i, f := range ids {
		out[i] = f.Value
	}
	return out
}

// isBulk reports whether a fact was seen only in tool output (never said,
// never a tool call's argument) and is not a failure: a page's hashes, a
// listing's paths.
func isBulk(f facts.Fact) bool { return facts.OriginRank(f.Origin) >= 3 && f.Class != facts.Error }

// maxRetryIdentifiers bounds the identifiers listed in a retry request.
const maxRetryIdentifiers = 40

// identifierRetryInstruction asks the model to put the identifiers it
// dropped back (OpenClaw's quality guard feedback, for every strategy).
func identifierRetryInstruction(ids []string) string {
	more := ""
	if len(ids) > maxRetryIdentifiers {
		more = fmt.Sprintf(" (and %d more)", len(ids)-maxRetryIdentifiers)
		ids = ids[:maxRetryIdentifiers]
	}
	return "The previous attempt dropped identifiers the agent needs. Copy each of these exactly, in the section where it belongs: " +
		strings.Join(ids, ", ") + more + "."
}
