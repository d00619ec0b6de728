package recalltest

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// The labelled query set recall's ranking is measured on: sessions of
// several agents (pi, pi under an OpenClaw agent directory, Claude Code,
// Codex) with planted facts, and for each fact the queries a user would
// type — the identifier alone, the fact's own words (an exact-phrase
// lookup), and a paraphrased question that shares only some of its words
// (so the AND query fails and ranking among partial matches decides).
// Every session plants the same kinds of facts with its own identifiers,
// so the common words of a query match every session and only the rare
// ones tell the right chunk.

// Loc is a labelled line: a hit covering it is relevant.
type Loc struct {
	File string
	Line int
}

// EvalQuery is one labelled query.
type EvalQuery struct {
	// Kind: "identifier", "phrase", "paraphrase" or "topic".
	Kind, Query string
	// Relevant lines (the fact's; one per query here).
	Relevant []Loc
}

// paraphrases are questions about DefaultFacts' facts ({s} is the
// session's identifier), in other words than the fact's.
var paraphrases = map[string]string{
	"path":        "where is the rotation config for the quokka%s ledger kept",
	"order-id":    "why did ORD-%s-QXZ need its refund looked at",
	"decision":    "what did we decide about locking with key %s77 for settlement",
	"tool-output": "the zanzibar%s wal checksum problem when the tests ran",
	"bash":        "what TTL did we export as KESTREL_TOKEN_TTL_%s",
	"thinking":    "why was the marmoset%s test flaky",
	"branch":      "the capybara%s sharding idea we abandoned",
	"cjk":         "什么时候运行迁移脚本%s号",
}

// topics are questions about a kind of fact without its identifier: every
// pi session's fact of that kind is relevant (nDCG@10 counts how many of
// the ten best hits are).
var topics = map[string]string{
	"decision":    "which locks did we choose for the nightly settlement job",
	"tool-output": "checksum mismatch in a segment of the wal archive",
	"path":        "the ledger rotation yaml config",
	"bash":        "the token TTL we export in the deploy env",
	"branch":      "the sharding plan on the abandoned branch",
}

// identifiers are each fact's identifier alone.
var identifiers = map[string]string{
	"path":        "quokka%s",
	"order-id":    "ORD-%s-QXZ",
	"decision":    "%s77",
	"tool-output": "zanzibar%s",
	"bash":        "KESTREL_TOKEN_TTL_%s",
	"thinking":    "marmoset%s",
	"branch":      "capybara%s",
	"cjk-short":   "鲲鹏%s",
}

// WriteEvalCorpus writes piSessions pi sessions (every third under an
// OpenClaw agent's directory) and agentSessions Claude Code and as many
// Codex sessions under dir, and returns their labelled queries.
func WriteEvalCorpus(t testing.TB, dir string, piSessions, agentSessions int) []EvalQuery {
	t.Helper()
	qs, err := writeEvalCorpus(dir, piSessions, agentSessions)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func writeEvalCorpus(dir string, piSessions, agentSessions int) ([]EvalQuery, error) {
	var qs []EvalQuery
	byTopic := map[string][]Loc{}
	for i := 0; i < piSessions; i++ {
		seed := uint64(2000 + i)
		sub := filepath.Join(dir, "pi")
		if i%3 == 2 {
			sub = filepath.Join(dir, "openclaw", "agents", fmt.Sprintf("agent%d", i%2), "sessions")
		}
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(sub, fmt.Sprintf("s%02d.jsonl", i))
		facts, err := WriteFile(p, Options{Seed: seed, Turns: 60, Facts: DefaultFacts(seed), Compactions: 2})
		if err != nil {
			return nil, err
		}
		s := fmt.Sprintf("%04x", seed%0xffff)
		for _, f := range facts {
			rel := []Loc{{p, f.Line}}
			if _, ok := topics[f.Name]; ok {
				byTopic[f.Name] = append(byTopic[f.Name], rel[0])
			}
			qs = append(qs, EvalQuery{Kind: "phrase", Query: f.Query, Relevant: rel})
			if q, ok := identifiers[f.Name]; ok {
				qs = append(qs, EvalQuery{Kind: "identifier", Query: fmt.Sprintf(q, s), Relevant: rel})
			}
			if q, ok := paraphrases[f.Name]; ok {
				qs = append(qs, EvalQuery{Kind: "paraphrase", Query: fmt.Sprintf(q, s), Relevant: rel})
			}
		}
	}
	names := make([]string, 0, len(byTopic))
	for n := range byTopic {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		qs = append(qs, EvalQuery{Kind: "topic", Query: topics[n], Relevant: byTopic[n]})
	}
	agents := []struct {
		name string
		gen  func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)
	}{{"claude", sessiongen.GenerateClaudeCode}, {"codex", sessiongen.GenerateCodex}}
	for _, a := range agents {
		sub := filepath.Join(dir, a.name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		for i := 0; i < agentSessions; i++ {
			s := fmt.Sprintf("%s%d", a.name[:2], 31+i)
			fact := "The nightly export writes to the bucket heron-" + s + "-exports in eu-west-3, rotated weekly."
			p := filepath.Join(sub, fmt.Sprintf("%s-%02d.jsonl", a.name, i))
			res, err := sessiongen.ToFile(p, func(w io.Writer) (*sessiongen.AgentResult, error) {
				return a.gen(w, sessiongen.AgentOptions{Seed: uint64(300 + i), Turns: 20, Fact: fact})
			})
			if err != nil {
				return nil, err
			}
			rel := []Loc{{p, res.FactLine}}
			qs = append(qs,
				EvalQuery{Kind: "identifier", Query: "heron-" + s + "-exports", Relevant: rel},
				EvalQuery{Kind: "phrase", Query: "bucket heron-" + s + "-exports eu-west-3", Relevant: rel},
				EvalQuery{Kind: "paraphrase", Query: "where do the heron " + s + " nightly files end up", Relevant: rel})
		}
	}
	return qs, nil
}

// Ranked is a search's hits as the metrics see them.
type Ranked struct {
	File       string
	Start, End int
}

// Metrics are a ranking's quality over a query set.
type Metrics struct {
	Queries             int
	Hit1, MRR10, NDCG10 float64
}

// Evaluate runs every query through search (its best hits first) and
// averages hit@1, MRR@10 and nDCG@10 (binary gains; a relevant line
// counts once, at the first hit covering it), overall and per kind.
func Evaluate(qs []EvalQuery, search func(q string) ([]Ranked, error)) (map[string]Metrics, error) {
	sums := map[string]*Metrics{}
	for _, q := range qs {
		hits, err := search(q.Query)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", q.Query, err)
		}
		var hit1, rr, dcg float64
		seen := map[Loc]bool{}
		for i, h := range hits[:min(10, len(hits))] {
			for _, l := range q.Relevant {
				if h.File != l.File || h.Start > l.Line || h.End < l.Line || seen[l] {
					continue
				}
				seen[l] = true
				if rr == 0 {
					rr = 1 / float64(i+1)
					if i == 0 {
						hit1 = 1
					}
				}
				dcg += 1 / math.Log2(float64(i+2))
			}
		}
		var ideal float64
		for i := 0; i < min(10, len(q.Relevant)); i++ {
			ideal += 1 / math.Log2(float64(i+2))
		}
		for _, k := range []string{"all", q.Kind} {
			m := sums[k]
			if m == nil {
				m = &Metrics{}
				sums[k] = m
			}
			m.Queries++
			m.Hit1 += hit1
			m.MRR10 += rr
			m.NDCG10 += dcg / ideal
		}
	}
	out := map[string]Metrics{}
	for k, m := range sums {
		n := float64(m.Queries)
		out[k] = Metrics{Queries: m.Queries, Hit1: m.Hit1 / n, MRR10: m.MRR10 / n, NDCG10: m.NDCG10 / n}
	}
	return out, nil
}

// MetricsTable renders metrics as markdown rows, "all" first.
func MetricsTable(label string, ms map[string]Metrics) string {
	kinds := make([]string, 0, len(ms))
	for k := range ms {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if (kinds[i] == "all") != (kinds[j] == "all") {
			return kinds[i] == "all"
		}
		return kinds[i] < kinds[j]
	})
	out := ""
	for _, k := range kinds {
		m := ms[k]
		out += fmt.Sprintf("| %s | %s | %d | %.3f | %.3f | %.3f |\n", label, k, m.Queries, m.Hit1, m.MRR10, m.NDCG10)
	}
	return out
}
