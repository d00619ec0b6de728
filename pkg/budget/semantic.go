package budget

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Searcher is the recall search the semantic-history block draws from
// (recall.Index implements it).
type Searcher interface {
	Search(ctx context.Context, query string, opts recall.SearchOptions) (*recall.Result, error)
}

// Chunk is one retrieved piece of prior context.
type Chunk struct {
	Source    string  `json:"source"`
	Path      string  `json:"path"`
	StartLine int     `json:"startLine"`
	EndLine   int     `json:"endLine"`
	Score     float64 `json:"score"`
	Snippet   string  `json:"snippet"`
	Truncated bool    `json:"truncated,omitempty"`
}

// Semantic is the semantic-history outcome.
type Semantic struct {
	Enabled bool   `json:"enabled"`
	Query   string `json:"query,omitempty"`
	// BudgetTokens is 30% of the bootstrap budget; Tokens what the
	// formatted block costs (it always fits the budget).
	BudgetTokens int     `json:"budgetTokens"`
	Hits         int     `json:"hits"`
	Chunks       []Chunk `json:"chunks"`
	Tokens       int     `json:"tokens"`
	Block        string  `json:"-"`
	Note         string  `json:"note,omitempty"`
}

// minTruncatedChars: a snippet is not cut to fit unless at least this much
// room (100 tokens) is left, as in VS7.
const minTruncatedChars = 400

const (
	blockOpen  = "<relevant-prior-context>"
	blockClose = "</relevant-prior-context>"
)

// SelectChunks picks the hits for the <relevant-prior-context> block (VS7
// SemanticHistoryRetriever.retrieve): hits scoring at least minScore, at
// most maxChunks, in the order given, while the whole formatted block stays
// within budgetTokens (chars/4); the first hit that does not fit is cut at a
// sentence or word boundary to the room left, if that is at least 100
// tokens, and ends the selection. (VS7 budgets only the snippets and may
// overshoot by the tags and the "..." it appends; here the block as sent
// fits.)
func SelectChunks(hits []recall.Hit, maxChunks int, minScore float64, budgetTokens int) []Chunk {
	var out []Chunk
	used := transcript.UTF16Len(blockOpen + "\n" + blockClose)
	limit := budgetTokens * 4
	for _, h := range hits {
		if len(out) >= maxChunks {
			break
		}
		if h.Score < minScore {
			continue
		}
		c := Chunk{Source: h.Citation, Path: h.Path, StartLine: h.StartLine, EndLine: h.EndLine, Score: h.Score, Snippet: h.Snippet}
		if c.Source == "" {
			c.Source = h.Path
		}
		frame := transcript.UTF16Len(contextOpen(c) + "\n" + "\n" + "</context>" + "\n")
		n := transcript.UTF16Len(c.Snippet)
		if used+frame+n <= limit {
			out = append(out, c)
			used += frame + n
			continue
		}
		room := limit - used - frame
		if room < minTruncatedChars {
			break
		}
		c.Snippet = truncateAtBoundary(c.Snippet, room)
		c.Truncated = true
		out = append(out, c)
		break
	}
	return out
}

func contextOpen(c Chunk) string {
	return fmt.Sprintf(`<context source="%s" score="%.2f">`, xmlAttr(c.Source), c.Score)
}

// xmlAttr escapes what would end or break a double-quoted attribute.
func xmlAttr(s string) string {
	return strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;").Replace(s)
}

// truncateAtBoundary cuts text to at most maxChars UTF-16 units including
// a trailing "...", at the last period, newline or space when that keeps
// more than half (VS7 truncateToTokens).
func truncateAtBoundary(text string, maxChars int) string {
	const ellipsis = "..."
	if transcript.UTF16Len(text) <= maxChars {
		return text
	}
	keep := maxChars - len(ellipsis)
	cut := transcript.PrefixUTF16(text, keep)
	bp := max(strings.LastIndex(cut, "."), strings.LastIndex(cut, "\n"), strings.LastIndex(cut, " "))
	if bp >= 0 && transcript.UTF16Len(cut[:bp]) > keep/2 {
		return cut[:bp+1] + ellipsis
	}
	return cut + ellipsis
}

// FormatChunks is VS7's block:
//
//	<relevant-prior-context>
//	<context source="memory/2024-01-15.md" score="0.85">
//	…snippet…
//	</context>
//	</relevant-prior-context>
//
// "" when there are no chunks.
func FormatChunks(chunks []Chunk) string {
	if len(chunks) == 0 {
		return ""
	}
	lines := []string{blockOpen}
	for _, c := range chunks {
		lines = append(lines, contextOpen(c), c.Snippet, "</context>")
	}
	lines = append(lines, blockClose)
	return strings.Join(lines, "\n")
}

// Retrieve searches for the query and builds the block. excludeEntries are
// entry ids of the session file sessionPath that the request carries
// anyway (the preserved recent turns): hits made only of them are skipped.
// A search failure is reported in Note, never an error: VS7 continues
// without retrieved context.
func Retrieve(ctx context.Context, s Searcher, query string, cfg SemanticConfig, budgetTokens int, sessionPath string, excludeEntries map[string]bool) Semantic {
	out := Semantic{Enabled: true, Query: query, BudgetTokens: budgetTokens, Chunks: []Chunk{}}
	switch {
	case s == nil:
		out.Note = "no recall index: run 'ctxtool index' over the sessions to enable semantic history"
		return out
	case strings.TrimSpace(query) == "":
		out.Note = "no user prompt to search for"
		return out
	case budgetTokens <= 0 || cfg.MaxRetrievedChunks <= 0:
		out.Note = "no budget for semantic history"
		return out
	}
	carried := func(path string, ids []string) bool {
		return path == sessionPath && len(ids) > 0 && allIn(ids, excludeEntries)
	}
	res, err := s.Search(ctx, query, recall.SearchOptions{MaxResults: cfg.MaxRetrievedChunks * 2, Skip: carried,
		Scope: semanticScope(cfg.Scope, sessionPath), Near: sessionPath})
	if err != nil {
		out.Note = "semantic history skipped: " + err.Error()
		return out
	}
	var hits []recall.Hit
	for _, h := range res.Hits {
		if !carried(h.Path, h.EntryIDs) { // a Searcher may ignore Skip
			hits = append(hits, h)
		}
	}
	out.Hits = len(hits)
	out.Chunks = SelectChunks(hits, cfg.MaxRetrievedChunks, cfg.MinRelevanceScore, budgetTokens)
	out.Block = FormatChunks(out.Chunks)
	out.Tokens = transcript.TextTokens(out.Block)
	if len(out.Chunks) == 0 && len(hits) > 0 {
		out.Note = fmt.Sprintf("no hit scored at least %.2f (contextManagement.semanticHistory.minRelevanceScore)", cfg.MinRelevanceScore)
	}
	if n := res.StaleNote(); n != "" {
		out.Note = strings.TrimPrefix(out.Note+"; "+n, "; ")
	}
	return out
}

// semanticScope is the recall scope of semantic history for the session
// at sessionPath: by default its own agent and project, so that another
// user's or another project's sessions on the same machine never fill the
// block (a session without a known project is searched in its agent).
func semanticScope(scope, sessionPath string) recall.Scope {
	if scope == ScopeAll || sessionPath == "" {
		return recall.Scope{}
	}
	o := recall.OriginOf(sessionPath)
	sc := recall.Scope{Agent: o.Agent}
	if scope != ScopeAgent {
		sc.Project = o.Project
	}
	return sc
}

func allIn(ids []string, set map[string]bool) bool {
	for _, id := range ids {
		if !set[id] {
			return false
		}
	}
	return true
}
