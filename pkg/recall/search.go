package recall

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Search scoring follows OpenClaw's memory_search
// (docs/design/rolling-window.md) so that its default minScore 0.35 means the same here:
//   - keyword query: every [\p{L}\p{N}_]+ token but stop words, quoted,
//     joined with AND; if that finds nothing, one query per keyword, keeping
//     each chunk's best score;
//   - a query matching more than rankWindow chunks is not ranked by BM25
//     (see rankWindow);
//   - BM25 rank r (negative = better) → -r/(1-r), else 1/(1+r);
//   - keyword-only mode adds OpenClaw's boosts: 0.45 × share of query
//     tokens found, 0.2 × found / unique chunk tokens, 0.18 per query token
//     in the file name, min(len/160, 0.18); capped at 1;
//   - with embeddings: 0.7 × cosine + 0.3 × BM25 score over the union of
//     both candidate lists; if nothing reaches minScore, keyword hits with
//     score ≥ min(minScore, 0.3).
// CJK text has no spaces, so a query with CJK matches substrings (see each
// backend's match).

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
	Session    string  // only this session file ("" = all)
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
}

var tokenRe = regexp.MustCompile(`[\p{L}\p{N}_]+`)

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
	for _, t := range tokenRe.FindAllString(strings.ToLower(q), -1) {
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

// bm25RankToScore maps FTS5's bm25() (lower = better, usually negative)
// to 0..1 exactly as OpenClaw does.
func bm25RankToScore(rank float64) float64 {
	if math.IsNaN(rank) || math.IsInf(rank, 0) {
		return 1.0 / 1000
	}
	if rank < 0 {
		return -rank / (1 - rank)
	}
	return 1 / (1 + rank)
}

// candidate is a chunk found by one of the searches.
type candidate struct {
	id         int64
	text       float64 // BM25 score 0..1 (0: matched by LIKE only)
	vector     float64
	hasText    bool
	hasVector  bool
	path       string
	start, end int
	entryIDs   string
	ts         int64
	body       string
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
	fileID, err := ix.sessionFileID(ctx, opts.Session)
	if err != nil {
		return nil, err
	}
	tokens := queryTokens(query)
	res := &Result{Mode: "fts-only"}
	if len(tokens) == 0 {
		return res, nil
	}
	limit := min(200, max(1, opts.MaxResults*4))
	cands, err := ix.keywordCandidates(ctx, tokens, fileID, limit, opts.Skip)
	if err != nil {
		return nil, err
	}
	kw := keywords(tokens)

	if ix.embedder != nil {
		ix.addVectorCandidates(ctx, query, fileID, limit, cands, res)
	}
	if err := ix.loadCandidates(ctx, cands); err != nil {
		return nil, err
	}
	dropSkipped(cands, opts.Skip) // vector candidates too
	var hits []*candidate
	score := map[int64]float64{}
	if res.Mode == "hybrid" {
		hits = hybridHits(cands, opts.MinScore, score)
		if len(hits) == 0 {
			res.Fallback = "no hybrid hit reached minScore; keyword hits shown"
			hits = keywordHits(cands, kw, math.Min(opts.MinScore, textWeight), true, score)
		}
	} else {
		hits = keywordHits(cands, kw, opts.MinScore, false, score)
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
func (ix *Index) addVectorCandidates(ctx context.Context, query string, fileID int64, limit int, cands map[int64]*candidate, res *Result) {
	vc, err := ix.vectorCandidates(ctx, query, fileID, limit)
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

// hybridHits keeps the candidates whose weighted vector + text score
// reaches minScore, recording each kept score in score.
func hybridHits(cands map[int64]*candidate, minScore float64, score map[int64]float64) []*candidate {
	var hits []*candidate
	for id, c := range cands {
		s := vectorWeight*c.vector + textWeight*c.text
		if s >= minScore {
			score[id] = s
			hits = append(hits, c)
		}
	}
	return hits
}

// keywordHits keeps the candidates whose boosted keyword score reaches
// floor (with textOnly, only those the keyword search found), recording
// each kept score in score.
func keywordHits(cands map[int64]*candidate, kw []string, floor float64, textOnly bool, score map[int64]float64) []*candidate {
	var hits []*candidate
	for id, c := range cands {
		if textOnly && !c.hasText {
			continue
		}
		if s := boosted(c, kw); s >= floor {
			score[id] = s
			hits = append(hits, c)
		}
	}
	return hits
}

// bestHits orders hits by score, newest first on ties, and keeps the first
// maxResults.
func bestHits(hits []*candidate, score map[int64]float64, maxResults int) []*candidate {
	sort.Slice(hits, func(i, j int) bool {
		si, sj := score[hits[i].id], score[hits[j].id]
		if si != sj {
			return si > sj
		}
		return hits[i].id > hits[j].id // newer first on ties
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

// keywordCandidates runs the AND query, then the per-keyword fallback.
func (ix *Index) keywordCandidates(ctx context.Context, tokens []string, fileID int64, limit int, skip func(string, []string) bool) (map[int64]*candidate, error) {
	cands := map[int64]*candidate{}
	kw := keywords(tokens)
	add := func(ms []match) {
		for _, m := range ms {
			if c, ok := cands[m.id]; ok {
				c.text = math.Max(c.text, m.score)
			} else {
				cands[m.id] = &candidate{id: m.id, text: m.score, hasText: true}
			}
		}
	}
	ms, err := ix.st.match(ctx, kw, fileID, limit)
	if err != nil {
		return nil, err
	}
	add(ms)
	if skip != nil {
		if err := ix.loadCandidates(ctx, cands); err != nil {
			return nil, err
		}
		dropSkipped(cands, skip)
	}
	if len(cands) > 0 || len(kw) == 1 {
		return cands, nil // (one keyword: the AND query was that query)
	}
	for _, k := range kw {
		ms, err := ix.st.match(ctx, []string{k}, fileID, limit)
		if err != nil {
			return nil, err
		}
		add(ms)
	}
	return cands, nil // (Search drops skipped ones once all are loaded)
}

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

// vectorCandidates scores every embedded chunk against the query vector
// (brute force over unit vectors) and keeps the best limit.
func (ix *Index) vectorCandidates(ctx context.Context, query string, fileID int64, limit int) (map[int64]*candidate, error) {
	vecs, err := ix.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 || len(vecs[0]) == 0 {
		return nil, fmt.Errorf("recall: embedder returned no vector for the query")
	}
	qv := normalize(vecs[0])
	var all []*candidate
	err = ix.st.vectors(ctx, ix.embedder.Model(), fileID, func(id int64, b []byte) {
		all = append(all, &candidate{id: id, vector: dotEncoded(qv, b), hasVector: true})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].vector > all[j].vector })
	out := map[int64]*candidate{}
	for _, c := range all[:min(limit, len(all))] {
		out[c.id] = c
	}
	return out, nil
}

// loadCandidates fills path, lines and text of the candidates.
func (ix *Index) loadCandidates(ctx context.Context, cands map[int64]*candidate) error {
	if len(cands) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(cands))
	for id := range cands {
		ids = append(ids, id)
	}
	cs, err := ix.st.chunks(ctx, ids)
	if err != nil {
		return err
	}
	for _, c := range cs {
		k := cands[c.id]
		k.path, k.start, k.end, k.entryIDs, k.ts, k.body = c.path, c.start, c.end, c.entryIDs, c.ts, c.text
	}
	for id, c := range cands { // a chunk deleted between the two queries
		if c.path == "" {
			delete(cands, id)
		}
	}
	return nil
}

// boosted is OpenClaw's keyword-only score.
func boosted(c *candidate, kw []string) float64 {
	lower := strings.ToLower(c.body)
	chunkTokens := wordSet(lower)
	found := 0
	base := strings.ToLower(filepath.Base(c.path))
	inPath := 0
	for _, t := range kw {
		if chunkTokens[t] || (hasCJK(t) && strings.Contains(lower, t)) {
			found++
		}
		if strings.Contains(base, t) {
			inPath++
		}
	}
	s := c.text
	if len(kw) > 0 {
		s += 0.45 * float64(found) / float64(len(kw))
	}
	if len(chunkTokens) > 0 {
		s += 0.2 * float64(found) / float64(len(chunkTokens))
	}
	s += 0.18 * float64(inPath)
	s += math.Min(float64(utf8.RuneCountInString(c.body))/160, 0.18)
	return math.Min(1, s)
}

// wordSet is the set of [\p{L}\p{N}_]+ runs of s (tokenRe without the
// regexp engine: this runs on every candidate of every query).
func wordSet(s string) map[string]bool {
	set := make(map[string]bool, len(s)/6)
	start := -1
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			set[s[start:i]] = true
			start = -1
		}
	}
	if start >= 0 {
		set[s[start:]] = true
	}
	return set
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
