package recall

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Search: the keyword query is every [\p{L}\p{N}_]+ token but stop words,
// quoted, joined with AND; if that finds nothing, one query per keyword,
// with the union of their candidates. Each query takes at most
// candidatePool chunks in the backend's rank order (see backend.match;
// a query matching more than rankWindow chunks takes the newest), and
// score.go scores them. With embeddings: 0.7 × cosine + 0.3 × the text
// score over the union of both candidate lists; if nothing reaches
// minScore, keyword hits with score ≥ min(minScore, 0.3). CJK text has no
// spaces, so a query with CJK matches substrings (see each backend's
// match). The defaults (6 hits, minScore 0.35) are memory_search's.

// Defaults of memory_search.
const (
	DefaultMaxResults = 6
	DefaultMinScore   = 0.35
	snippetMax        = 700
	vectorWeight      = 0.7
	textWeight        = 0.3
)

// SearchOptions filter and limit a search.
type SearchOptions struct {
	MaxResults int     // ≤ 0: DefaultMaxResults
	MinScore   float64 // hits below are dropped (0 keeps all)
	Session    string  // only this session file ("" = all; Scope.Session too)
	// Scope narrows the sessions searched (zero: all of them).
	Scope Scope
	// Near is the caller's session, whose hits (then its project's and
	// agent's) rank above others' by a small factor (see score.go); "" for
	// none.
	Near string
	// Skip drops chunks the caller already has — a session's own recent
	// turns, which a prompt taken from that session always matches. It is
	// applied before the keyword search decides whether to widen an AND
	// query to single words, so a query whose only match is the caller's
	// own text still finds the older history it is after.
	Skip func(path string, entryIDs []string) bool
}

// Hit is one search result.
type Hit struct {
	Path      string   `json:"path"`
	StartLine int      `json:"startLine"`
	EndLine   int      `json:"endLine"`
	Score     float64  `json:"score"`
	Snippet   string   `json:"snippet"`
	Citation  string   `json:"citation"`
	EntryIDs  []string `json:"entryIds"`
	Timestamp string   `json:"timestamp,omitempty"`
	Source    string   `json:"source"`
	// Agent and Project say where the session comes from (see Origin).
	Agent   string `json:"agent"`
	Project string `json:"project"`
}

// Result is a search's hits and how they were found.
type Result struct {
	Hits []Hit
	// Mode is "hybrid" (keyword + vectors) or "fts-only".
	Mode string
	// Fallback says why hybrid scoring was not used although an embedder is
	// configured (e.g. the endpoint failed), or that the hybrid scores were
	// all below minScore and keyword hits were returned instead.
	Fallback string
	// Empty: there were no hits because the index holds no session at all
	// (never filled, or emptied when an earlier build's index was opened),
	// which a user must not mistake for "nothing matched".
	Empty bool
	// Stale names the session files ("path (why)") whose matching chunks
	// were left out because the file changed or vanished since it was
	// indexed (their text is read from the file, see reread.go): indexing
	// them again brings them back.
	Stale []string
}

// StaleNote is the note a search prints when r.Stale is not empty ("":
// it is).
func (r *Result) StaleNote() string {
	if len(r.Stale) == 0 {
		return ""
	}
	return "matches in these session files were left out: the files changed since they were indexed; run 'ctxtool index PATH...' on them to index them again: " +
		strings.Join(r.Stale, ", ")
}

var tokenRe = lazyre.New(`[\p{L}\p{N}_]+`)

// stopWords are dropped from the queries and from the boost's token share
// (unless the query has nothing else). OpenClaw's AND query keeps them;
// dropping them there too avoids both missing a chunk over a "the" and
// scanning the posting list of a word that is in most chunks.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has have
	how i if in into is it its me my no not of on or our so than that the their them then there these they this to
	was we were what when where which who why will with would you your about after all also any did done get got
	just like more most much should some such us use used using want yes ok please`) {
		stopWords[w] = true
	}
}

// queryTokens returns the unique lower-cased tokens of a query.
func queryTokens(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tokenRe().FindAllString(strings.ToLower(q), -1) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func keywords(tokens []string) []string {
	var out []string
	for _, t := range tokens {
		if !stopWords[t] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return tokens
	}
	return out
}

// anyCJK reports whether a query token has CJK characters (then the
// backends match substrings, see each backend's match).
func anyCJK(tokens []string) bool {
	for _, t := range tokens {
		if hasCJK(t) {
			return true
		}
	}
	return false
}

// candidate is a chunk found by one of the searches.
type candidate struct {
	id             int64
	text           float64 // text score 0..1 (score.go)
	vector         float64
	hasText        bool
	hasVector      bool
	path           string
	start, end     int
	entryIDs       string
	ts             int64
	body, kinds    string
	agent, project string
}

// Search finds the chunks that best match query.
func (ix *Index) Search(ctx context.Context, query string, opts SearchOptions) (*Result, error) {
	if opts.MaxResults <= 0 {
		opts.MaxResults = DefaultMaxResults
	}
	if !ix.keepSecrets {
		// A secret in the query is searched as its marker: it finds the
		// lines that held it and never reaches the embeddings endpoint.
		query = secrets.Redact(query)
	}
	scope := opts.Scope
	if scope.Session == "" {
		scope.Session = opts.Session
	}
	f, err := ix.filter(ctx, scope)
	if err != nil {
		return nil, err
	}
	tokens := queryTokens(query)
	res := &Result{Mode: "fts-only"}
	ctx = withSampled(ctx)
	if len(tokens) == 0 {
		return res, nil
	}
	// The pool does not depend on MaxResults (up to candidatePool): a
	// top-k is then the prefix of a top-(k+n).
	limit := max(candidatePool, opts.MaxResults)
	cands, kw, err := ix.keywordCandidates(ctx, tokens, f, limit, opts.Skip, res)
	if err != nil {
		return nil, err
	}

	if ix.embedder != nil {
		ix.addVectorCandidates(ctx, query, f, limit, cands, res)
	}
	if err := ix.loadCandidates(ctx, cands, res); err != nil {
		return nil, err
	}
	dropSkipped(cands, opts.Skip) // vector candidates too
	terms := queryTermsOf(kw)
	cs, err := ix.st.corpus(ctx, terms)
	if err != nil {
		return nil, err
	}
	var newest int64
	for _, c := range cands {
		if c.hasText { // as memory_search: the keyword part is the keyword search's
			c.text = textScore(c.body, c.kinds, terms, cs)
		}
		newest = max(newest, c.ts)
	}
	near := nearness(opts.Near)
	factor := func(c *candidate) float64 { return recencyFactor(c.ts, newest) * near(c) }
	var hits []*candidate
	score := map[int64]float64{}
	if res.Mode == "hybrid" {
		hits = scoredHits(cands, opts.MinScore, false, score, func(c *candidate) float64 {
			return (vectorWeight*c.vector + textWeight*c.text) * factor(c)
		})
		if len(hits) == 0 {
			res.Fallback = "no hybrid hit reached minScore; keyword hits shown"
			hits = scoredHits(cands, math.Min(opts.MinScore, textWeight), true, score, func(c *candidate) float64 { return c.text * factor(c) })
		}
	} else {
		hits = scoredHits(cands, opts.MinScore, true, score, func(c *candidate) float64 { return c.text * factor(c) })
	}
	hits = bestHits(hits, score, opts.MaxResults)
	for _, c := range hits {
		res.Hits = append(res.Hits, newHit(c, score[c.id], kw))
	}
	if len(res.Hits) == 0 {
		files, err := ix.st.files(ctx)
		if err != nil {
			return nil, err
		}
		res.Empty = len(files) == 0
	}
	return res, nil
}

// nearness is the factor of a candidate's closeness to the session near
// ("": none, 1 for all).
func nearness(near string) func(*candidate) float64 {
	if near == "" {
		return func(*candidate) float64 { return 1 }
	}
	abs, err := absPath(near)
	if err != nil {
		abs = near
	}
	o := OriginOf(abs)
	return func(c *candidate) float64 {
		switch {
		case c.path == abs:
			return 1
		case o.Project != "" && c.project == o.Project, c.agent == o.Agent:
			return 1 - nearCut
		}
		return 1 - farCut
	}
}

// sessionFileID is the indexed file id of session, or -1 for "" (all
// sessions).
func (ix *Index) sessionFileID(ctx context.Context, session string) (int64, error) {
	if session == "" {
		return -1, nil
	}
	abs, err := absPath(session)
	if err != nil {
		return 0, err
	}
	id, ok, err := ix.st.fileID(ctx, abs)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("recall: %s is not indexed (run 'ctxtool index %s' first)", abs, session)
	}
	return id, nil
}

// addVectorCandidates merges the vector candidates into cands and sets
// res.Mode to "hybrid"; when the embedder fails, res.Fallback says why and
// the search stays keyword-only.
func (ix *Index) addVectorCandidates(ctx context.Context, query string, f filter, limit int, cands map[int64]*candidate, res *Result) {
	vc, err := ix.vectorCandidates(ctx, query, f, limit, cands)
	if err != nil {
		res.Fallback = err.Error()
		return
	}
	res.Mode = "hybrid"
	for id, c := range vc {
		if k, ok := cands[id]; ok {
			k.vector, k.hasVector = c.vector, true
		} else {
			cands[id] = c
		}
	}
}

// scoredHits keeps the candidates (with textOnly, only those the keyword
// search found) whose score by fn reaches floor, recording each kept score
// in score.
func scoredHits(cands map[int64]*candidate, floor float64, textOnly bool, score map[int64]float64, fn func(*candidate) float64) []*candidate {
	var hits []*candidate
	for id, c := range cands {
		if textOnly && !c.hasText {
			continue
		}
		if s := fn(c); s >= floor {
			score[id] = s
			hits = append(hits, c)
		}
	}
	return hits
}

// bestHits orders hits by score, then newer first, then by path, line and
// chunk id (a total order: the same hits always come in the same order),
// and keeps the first maxResults.
func bestHits(hits []*candidate, score map[int64]float64, maxResults int) []*candidate {
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if sa, sb := score[a.id], score[b.id]; sa != sb {
			return sa > sb
		}
		if a.ts != b.ts {
			return a.ts > b.ts
		}
		if a.path != b.path {
			return a.path < b.path
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return a.id < b.id
	})
	if len(hits) > maxResults {
		hits = hits[:maxResults]
	}
	return hits
}

// newHit is the search result for a loaded candidate.
func newHit(c *candidate, score float64, kw []string) Hit {
	h := Hit{
		Path: c.path, StartLine: c.start, EndLine: c.end,
		Score:    math.Round(score*10000) / 10000,
		Snippet:  snippet(c.body, kw, snippetMax),
		Citation: Citation(c.path, c.start, c.end),
		EntryIDs: strings.Fields(c.entryIDs),
		Source:   "sessions",
		Agent:    c.agent, Project: c.project,
	}
	if h.EntryIDs == nil {
		h.EntryIDs = []string{}
	}
	if c.ts > 0 {
		h.Timestamp = time.UnixMilli(c.ts).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return h
}

// Citation formats path#Lstart-Lend (path#Lstart for one line).
func Citation(path string, start, end int) string {
	if storeSession(path) {
		return storeCitation(path, start, end)
	}
	if start == end {
		return path + "#L" + strconv.Itoa(start)
	}
	return path + "#L" + strconv.Itoa(start) + "-L" + strconv.Itoa(end)
}

// keywordCandidates runs the AND query, then the per-keyword fallback,
// and returns the keywords the candidates are to be scored by: the
// query's, or in the fallback the pieces a long CJK token was cut into.
func (ix *Index) keywordCandidates(ctx context.Context, tokens []string, f filter, limit int, skip func(string, []string) bool, res *Result) (map[int64]*candidate, []string, error) {
	cands := map[int64]*candidate{}
	kw := keywords(tokens)
	add := func(ids []int64) {
		for _, id := range ids {
			if _, ok := cands[id]; !ok {
				cands[id] = &candidate{id: id, hasText: true}
			}
		}
	}
	ms, err := ix.st.match(ctx, kw, f, limit)
	if err != nil {
		return nil, nil, err
	}
	add(ms)
	if skip != nil {
		if err := ix.loadCandidates(ctx, cands, res); err != nil {
			return nil, nil, err
		}
		dropSkipped(cands, skip)
	}
	pieces := cjkPieces(kw)
	if len(cands) > 0 || len(pieces) == 1 {
		return cands, kw, nil // (one keyword: the AND query was that query)
	}
	for _, k := range pieces {
		ms, err := ix.st.match(ctx, []string{k}, f, limit)
		if err != nil {
			return nil, nil, err
		}
		add(ms)
	}
	return cands, pieces, nil // (Search drops skipped ones once all are loaded)
}

// cjkPieces is kw with each CJK keyword of more than cjkPiece characters
// cut into its overlapping runs of cjkPiece: CJK is written without
// spaces, so a question ("什么时候运行迁移脚本12号") is one token that no
// text holds whole, while its pieces are found and scored like words.
func cjkPieces(kw []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range kw {
		r := []rune(k)
		if !hasCJK(k) || len(r) <= cjkPiece {
			out = append(out, k)
			continue
		}
		for i := 0; i+cjkPiece <= len(r); i++ {
			if p := string(r[i : i+cjkPiece]); !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// cjkPiece is the length of cjkPieces' runs (three characters: two pairs
// of the bigram table, few chance matches).
const cjkPiece = 3

// dropSkipped removes the loaded candidates skip rejects.
func dropSkipped(cands map[int64]*candidate, skip func(string, []string) bool) {
	if skip == nil {
		return
	}
	for id, c := range cands {
		if skip(c.path, strings.Fields(c.entryIDs)) {
			delete(cands, id)
		}
	}
}

// rankWindow bounds BM25 ranking. Ranking costs per match plus a scan of
// every query term's whole posting list, and a query of only common words
// can match half of a 100 MB corpus. A query matching more than rankWindow
// chunks is not selective: its newest matches are taken unranked (BM25 part
// 0) and ordered by the keyword boosts, a recency prior that keeps p95
// latency flat. Below the window ranking is exact. Both backends apply it.
const rankWindow = 1000

// vectorCandidates scores every embedded chunk in scope against the query
// vector (brute force over unit vectors) and keeps the best limit, and
// every keyword candidate in have (whose cosine would otherwise count as
// 0 for being outside the best limit).
func (ix *Index) vectorCandidates(ctx context.Context, query string, f filter, limit int, have map[int64]*candidate) (map[int64]*candidate, error) {
	vecs, err := ix.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 || len(vecs[0]) == 0 {
		return nil, fmt.Errorf("recall: embedder returned no vector for the query")
	}
	qv := normalize(vecs[0])
	var all []*candidate
	out := map[int64]*candidate{}
	err = ix.st.vectors(ctx, ix.embedder.Model(), f, func(id int64, b []byte) {
		c := &candidate{id: id, vector: dotEncoded(qv, b), hasVector: true}
		all = append(all, c)
		if have[id] != nil {
			out[id] = c
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].vector != all[j].vector {
			return all[i].vector > all[j].vector
		}
		return all[i].id > all[j].id
	})
	for _, c := range all[:min(limit, len(all))] {
		out[c.id] = c
	}
	return out, nil
}

// loadCandidates fills path, lines and text of the candidates not loaded
// yet (reading text again from the session files is not free); those
// whose text could not be read are dropped, their files named in
// res.Stale.
func (ix *Index) loadCandidates(ctx context.Context, cands map[int64]*candidate, res *Result) error {
	if len(cands) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(cands))
	for id, c := range cands {
		if c.path == "" { // not loaded yet (a search with Skip loads twice)
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	cs, stale, err := ix.st.chunks(ctx, ids)
	if err != nil {
		return err
	}
	for _, n := range stale {
		if !slices.Contains(res.Stale, n) {
			res.Stale = append(res.Stale, n)
		}
	}
	for _, c := range cs {
		k := cands[c.id]
		k.path, k.start, k.end, k.entryIDs, k.ts, k.body, k.kinds = c.path, c.start, c.end, c.entryIDs, c.ts, c.text, c.kinds
		k.agent, k.project = c.agent, c.project
	}
	for id, c := range cands { // a chunk deleted between the two queries
		if c.path == "" {
			delete(cands, id)
		}
	}
	return nil
}

// snippet cuts text to at most max UTF-16 units, around the first query
// token when it lies beyond the first part, so the snippet shows the match.
func snippet(text string, kw []string, max int) string {
	if utf16Len(text) <= max {
		return text
	}
	lower := strings.ToLower(text)
	pos := -1
	if len(lower) == len(text) {
		for _, t := range kw {
			if i := strings.Index(lower, t); i >= 0 && (pos < 0 || i < pos) {
				pos = i
			}
		}
	}
	start := 0
	prefix := ""
	if pos > max/2 {
		start = pos - max/4
		for start < len(text) && !utf8.RuneStart(text[start]) {
			start++
		}
		if sp := strings.IndexByte(text[start:], ' '); sp >= 0 && sp < 30 && start+sp+1 <= pos {
			start += sp + 1
		}
		prefix = "…"
	}
	budget := max - utf16Len(prefix) - 1 // room for a closing "…"
	end, n := start, 0
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if n+w > budget {
			break
		}
		n += w
		end += size
	}
	out := prefix + text[start:end]
	if end < len(text) {
		out += "…"
	}
	return out
}

func utf16Len(s string) int { return transcript.UTF16Len(s) }
