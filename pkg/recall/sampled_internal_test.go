package recall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// matchBefore is match as it was before a search's samples were kept
// (sampled) and a small scope's span was given (scopeSpan): a count of
// rankWindow matches by OFFSET, then the ranked or the newest matches,
// even when there were none.
func (s *sqliteStore) matchBefore(ctx context.Context, tokens []string, f filter, limit int) ([]int64, error) {
	mq := matchQueryOf(tokens, f)
	from := mq.fromWhere()
	var id int64
	many, err := scanRow(s.search.QueryRowContext(ctx, `SELECT `+mq.idCol+` `+from+` ORDER BY `+mq.idCol+` DESC LIMIT 1 OFFSET ?`,
		append(append([]any{}, mq.args...), rankWindow-1)...), &id)
	if err != nil {
		return nil, err
	}
	q := `SELECT ` + mq.idCol + `, ` + mq.rank + ` AS r ` + from + ` ORDER BY r, ` + mq.idCol + ` DESC LIMIT ?`
	if many || mq.rank == "" {
		q = `SELECT ` + mq.idCol + `, 0.0 ` + from + ` ORDER BY ` + mq.idCol + ` DESC LIMIT ?`
	}
	return s.matchIDs(ctx, q, append(mq.args, limit))
}

// sampledQueries indexes a generated Claude Code session large enough that
// its common words and phrases have more than dfSample matches, and returns
// queries of every kind the samples change: common words (past rankWindow
// and dfSample), phrases of common words that are in the text (few or many
// times) and that are not (their words swapped: "tool_use_id" at 1 GB), an
// identifier, and a word in no chunk.
func sampledQueries(t *testing.T) (*Index, *sqliteStore, []string) {
	t.Helper()
	dir := t.TempDir()
	ix, err := OpenFile(filepath.Join(dir, "index.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	ctx := context.Background()
	// A small session before and one after the large one: scopes of a few
	// chunks at both ends of the ids (see scopeSpan); the last, pi with
	// half of its turns in Chinese, for the CJK paths.
	var path string
	for i, size := range []int64{100 << 10, 16 << 20, 60 << 10, 300 << 10} {
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			_, err = sessiongen.GenerateClaudeCode(f, sessiongen.AgentOptions{Seed: 11 + uint64(i), TargetBytes: size})
		} else {
			_, err = sessiongen.Generate(f, sessiongen.Options{Seed: 11, TargetBytes: size, CJKShare: 0.5})
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Index(ctx, p); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			path = p
		}
	}
	s := ix.st.(*sqliteStore)
	// Words by the number of chunks that hold them, most first.
	rows, err := s.search.QueryContext(ctx, `SELECT term FROM fts.chunks_vocab ORDER BY doc DESC, term LIMIT 40`)
	if err != nil {
		t.Fatal(err)
	}
	var common []string
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			t.Fatal(err)
		}
		if len(w) > 2 && !isStopWord(w) {
			common = append(common, w)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Phrases: pairs of adjacent words of the session's lines, and the
	// same pairs swapped, which are mostly in no chunk.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var texts []string
	for _, i := range []int{3, 50, 200, 700, 1500} {
		texts = append(texts, lines[i*len(lines)/2000])
	}
	qs := slices.Clone(common[:12])
	qs = append(qs, common[0]+" "+common[1], common[2]+" "+common[5]+" "+common[7], "zzqxv", "zzqxv "+common[0])
	// CJK: one character (LIKE), two (a pair), three, with a word, and
	// a run no chunk holds.
	pi, err := os.ReadFile(filepath.Join(dir, "s3.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	var run []rune
	for _, r := range string(pi) {
		if isCJK(r) {
			run = append(run, r)
			continue
		}
		if len(run) >= 4 && len(runs) < 6 {
			runs = append(runs, string(run))
		}
		run = run[:0]
	}
	if len(runs) < 6 {
		t.Fatalf("only %d CJK runs in the pi session", len(runs))
	}
	for _, r := range runs {
		rs := []rune(r)
		qs = append(qs, string(rs[:1]), string(rs[:2]), string(rs[1:4]), string(rs[:2])+" "+common[0], string(rs[2:3])+" "+string(rs[:2]))
	}
	qs = append(qs, "鳄鱼鳄鱼", "鳄")
	for _, text := range texts {
		var words []string
		ftsTokens(text, func(l string) {
			if len(l) > 2 && len(words) < 40 {
				words = append(words, l)
			}
		})
		for i := 0; i+1 < len(words); i += 7 {
			qs = append(qs, words[i]+"_"+words[i+1], words[i+1]+"_"+words[i], words[i]+"_"+words[i+1]+" "+common[3])
		}
	}
	for _, w := range common[:8] {
		for _, v := range common[:8] {
			if w != v {
				qs = append(qs, w+"_"+v)
			}
		}
	}
	return ix, s, qs
}

// isStopWord reports whether w is one of the words search drops.
func isStopWord(w string) bool { return len(keywords([]string{w})) == 0 }

// A search's match finds the same candidates in the same order as before
// the samples were kept, and its corpus statistics are those of a corpus
// that samples every term itself, for every kind of query: unscoped and in
// one session, at every limit. The queries cover each path: no match,
// fewer than rankWindow (ranked), past rankWindow and past dfSample.
func TestSampledMatchesUnchanged(t *testing.T) {
	ix, s, qs := sampledQueries(t)
	ctx := context.Background()
	// Scopes: each session, its agent and project (every session: past
	// scopeSpanCap), a session from a time on, and a scope of no session.
	var scopes []filter
	rows, err := s.search.QueryContext(ctx, `SELECT id, agent, project FROM files ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		f := noFilter
		var agent, project string
		if err := rows.Scan(&f.fileID, &agent, &project); err != nil {
			t.Fatal(err)
		}
		scopes = append(scopes, f)
		if len(scopes) == 1 {
			scopes = append(scopes, filter{fileID: -1, agent: agent}, filter{fileID: -1, agent: agent, project: project})
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var mid int64
	if err := s.search.QueryRowContext(ctx, `SELECT ts FROM chunks ORDER BY id LIMIT 1 OFFSET 2000`).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	since := scopes[3] // the large session
	since.since = mid
	scopes = append(scopes, since, filter{fileID: 1 << 40})
	if len(scopes) != 8 {
		t.Fatalf("scopes %+v", scopes)
	}
	// The small sessions and the empty scope narrow FTS5's walk; the large
	// session and the agent (most of the index) do not.
	for i, want := range []bool{true, false, false, false, true, true, false, true} {
		lo, hi, ok, err := s.scopeSpan(ctx, scopes[i])
		if narrow := ok && hi-lo < 200; err != nil || narrow != want {
			t.Fatalf("scope %+v: span %d-%d %v (%v), want narrowed %v", scopes[i], lo, hi, ok, err, want)
		}
	}
	kinds := map[string]int{}
	for _, q := range qs {
		kw := keywords(queryTokens(q))
		if len(kw) == 0 {
			continue
		}
		terms := queryTermsOf(kw)
		for _, f := range append([]filter{noFilter}, scopes...) {
			for _, limit := range []int{candidatePool, 7, rankWindow + 10} {
				if f != noFilter && limit != candidatePool {
					continue
				}
				want, err := s.matchBefore(ctx, kw, f, limit)
				if err != nil {
					t.Fatal(err)
				}
				sctx := withSampled(ctx)
				got, err := s.match(sctx, kw, f, limit)
				if err != nil {
					t.Fatal(err)
				}
				if f == scopes[5] && anyCJK(kw) && len(want) > 0 {
					kinds["CJK in a small scope"]++
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%q (file %d, limit %d): match gives %d ids %v…, before %d %v…", q, f.fileID, limit, len(got), got[:min(len(got), 5)], len(want), want[:min(len(want), 5)])
				}
				c, err := s.corpus(sctx, terms)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := s.corpus(ctx, terms)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(c.df, ref.df) || c.n != ref.n || c.avgdl != ref.avgdl {
					t.Fatalf("%q: corpus after match %+v, sampling itself %+v", q, c, ref)
				}
				if f == noFilter && limit == candidatePool {
					for _, term := range terms {
						if term.cjk {
							continue
						}
						// The sample as it was taken: newest first, always.
						var want sample
						if err := s.search.QueryRowContext(ctx, `SELECT count(*), coalesce(min(rowid), 0) FROM (SELECT rowid FROM chunks_fts
							WHERE chunks_fts MATCH ? ORDER BY rowid DESC LIMIT `+strconv.Itoa(dfSample)+`)`, ftsQuery(term.tok)).Scan(&want.n, &want.last); err != nil {
							t.Fatal(err)
						}
						for _, phrase := range []bool{false, true} {
							if got, err := s.sampleMatches(ctx, "chunks_fts", ftsQuery(term.tok), phrase); err != nil || got != want {
								t.Fatalf("%q: sample (phrase %v) %+v, newest first %+v (%v)", term.tok, phrase, got, want, err)
							}
						}
					}
				}
				if f == noFilter && limit == candidatePool {
					if len(kw) == 1 && !anyCJK(kw) && len(sampledOf(sctx)) != 1 {
						t.Fatalf("%q: one word, unscoped: %d samples kept", q, len(sampledOf(sctx)))
					}
					switch n := len(want); {
					case n == 0:
						kinds["none"]++
					case c.df[0] >= dfSample:
						kinds["past dfSample"]++
					case strings.Contains(q, "_") && c.df[0] < rankWindow:
						kinds["ranked phrase"]++
					}
				}
			}
		}
	}
	for _, k := range []string{"none", "past dfSample", "ranked phrase", "CJK in a small scope"} {
		if kinds[k] == 0 {
			t.Errorf("no query of the kind %q (%v, %d chunks): the corpus no longer covers it", k, kinds, ix.st.(*sqliteStore).chunkCount())
		}
	}
	// And end to end: every top-k of a phrase query is a prefix of its top-20.
	for _, q := range qs {
		top := searchIDs(t, ix, q, 20)
		for _, k := range []int{1, 3, 10} {
			if got := searchIDs(t, ix, q, k); !slices.Equal(got, top[:min(k, len(top))]) {
				t.Fatalf("%q: top-%d %v is not the prefix of the top-20 %v", q, k, got, top)
			}
		}
	}
}

// searchIDs are the chunk ids of a search's hits, as path:line.
func searchIDs(t *testing.T, ix *Index, q string, k int) []string {
	t.Helper()
	res, err := ix.Search(context.Background(), q, SearchOptions{MaxResults: k})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, Citation(h.Path, h.StartLine, h.EndLine))
	}
	return out
}

func (s *sqliteStore) chunkCount() (n int64) {
	s.search.QueryRow(`SELECT count(*) FROM chunks`).Scan(&n)
	return n
}

// A search of a current index, with hits or without (which lists the
// files to tell an empty index apart), reads through the search pool
// alone: every other connection is a file opened and its schema read,
// a millisecond or more of a search's CPU.
func TestSearchUsesOneConnection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cc.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sessiongen.GenerateClaudeCode(f, sessiongen.AgentOptions{Seed: 5, Turns: 4}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "index.sqlite")
	ix, err := OpenFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Index(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	for _, q := range []string{"zzqxv", "tool"} {
		ix, err := OpenFile(db)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ix.Search(context.Background(), q, SearchOptions{MinScore: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if (len(res.Hits) == 0) != (q == "zzqxv") || res.Empty {
			t.Fatalf("%q: %d hits, empty index %v", q, len(res.Hits), res.Empty)
		}
		s := ix.st.(*sqliteStore)
		if n, m := s.db.Stats().OpenConnections, s.fts.Stats().OpenConnections; n+m != 0 {
			t.Errorf("%q: the search opened %d main and %d FTS writer connections", q, n, m)
		}
		ix.Close()
	}
}
