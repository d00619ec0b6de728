package sessiongen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// PlantedFact is a distinctive identifier planted in a generated session so
// recall and compaction tests can look for it later.
type PlantedFact struct {
	Kind    string // "path", "uuid", "hash", "port", "url", "cjk", "decision"
	Value   string // the exact string to search for
	Text    string // the sentence it was planted in
	Line    int    // 1-based line of the entry holding it
	EntryID string // entry id (synthetic in v1)
	Role    string // message role of that entry
	Turn    int    // 0-based user turn
}

type pendingFact struct {
	idx   int
	where string // "user", "tool", "assistant"
}

// planFacts queues the facts due at this turn: they are spread over the
// first FactsWithin of the session, the first one in turn 0.
func (g *gen) planFacts() {
	if g.noFacts {
		return
	}
	for g.factsDone < g.o.Facts && g.progress() >= g.o.FactsWithin*float64(g.factsDone)/float64(g.o.Facts) {
		i := g.factsDone
		g.factsDone++
		f := g.makeFact(FactKinds[i%len(FactKinds)])
		g.facts = append(g.facts, f)
		where := "user"
		switch f.Kind {
		case "path", "hash", "port":
			where = "tool"
		case "decision":
			where = "assistant"
		}
		g.pending = append(g.pending, pendingFact{len(g.facts) - 1, where})
	}
}

// plant appends the sentences of pending facts meant for this kind of
// entry to text.
func (g *gen) plant(text, where string) string {
	if g.noFacts {
		return text
	}
	keep := g.pending[:0]
	for _, p := range g.pending {
		if p.where != where {
			keep = append(keep, p)
			continue
		}
		if where == "tool" {
			text = strings.TrimSuffix(text, "\n") + "\n" + g.facts[p.idx].Text + "\n"
		} else {
			text += " " + g.facts[p.idx].Text
		}
		g.just = append(g.just, p.idx)
	}
	g.pending = keep
	return text
}

// placed records where the facts planted into the entry just written are.
func (g *gen) placed(role string) {
	for _, i := range g.just {
		f := &g.facts[i]
		f.Line, f.EntryID, f.Role, f.Turn = g.b.Lines(), g.b.Leaf(), role, g.turn
	}
	g.just = g.just[:0]
}

// placedFacts drops facts that never found an entry (e.g. their turn
// ended with an aborted assistant and the session ended).
func placedFacts(fs []PlantedFact) []PlantedFact {
	out := fs[:0]
	for _, f := range fs {
		if f.Line > 0 {
			out = append(out, f)
		}
	}
	return out
}

func (g *gen) makeFact(kind string) PlantedFact {
	r := g.r
	f := PlantedFact{Kind: kind}
	switch kind {
	case "path":
		f.Value = fmt.Sprintf("/srv/%s-%s/%s/config/%s.toml", pick(r, nouns), pick(r, nouns), hexString(r, 6), pick(r, nouns))
		f.Text = "# active config: " + f.Value
	case "uuid":
		f.Value = uuidFrom(r)
		f.Text = "The tenant id for the migration is " + f.Value + "."
	case "hash":
		f.Value = hexString(r, 40)
		f.Text = f.Value + " (HEAD -> release) fix " + pick(r, nouns) + " " + pick(r, adjs) + " state"
	case "port":
		f.Value = fmt.Sprintf("%s-gw-%s:%d", pick(r, nouns), hexString(r, 4), 61000+r.IntN(4000))
		f.Text = "staging gateway listening on " + f.Value
	case "url":
		f.Value = fmt.Sprintf("https://%s-%s.%s.internal:%d/api/v2/%s", pick(r, nouns), hexString(r, 4), pick(r, nouns), 8000+r.IntN(1000), pick(r, nouns))
		f.Text = "The artifact endpoint is " + f.Value + " (needs the VPN)."
	case "cjk":
		f.Value = pick(r, cjkCodes) + pick(r, cjkThings) + "第" + pick(r, cjkNums) + pick(r, cjkPhases)
		f.Text = "项目代号：" + f.Value + "，请记住。"
	case "decision":
		fam := techs[r.IntN(len(techs))]
		a := pick(r, fam)
		bb := pick(r, fam)
		for bb == a {
			bb = pick(r, fam)
		}
		f.Value = fmt.Sprintf("use %s instead of %s for the %s %s", a, bb, pick(r, nouns), pick(r, nouns))
		f.Text = "Decision (" + hexString(r, 4) + "): we " + f.Value + ", because it keeps the " + pick(r, nouns) + " " + pick(r, adjs) + "."
	}
	return f
}

func uuidFrom(r *rand.Rand) string {
	h := hexString(r, 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + string("89ab"[r.IntN(4)]) + h[17:20] + "-" + h[20:]
}
