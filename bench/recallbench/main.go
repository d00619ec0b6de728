// Command recallbench measures ctxtool's recall index on generated
// transcripts with planted facts (or on an existing corpus): indexing
// throughput, the cost of a second (unchanged) run and of an append, query
// latency p50/p95 and the share of planted facts found in the top 3 — for
// the SQLite backend, the PostgreSQL backend (a throwaway server, as the
// tests start one), or both, with the top-3 overlap between them. It prints
// one table per backend.
//
//	go run ./bench/recallbench            # ~100 MB in a temp dir
//	go run ./bench/recallbench -mb 20 -cpuprofile cpu.out
//	go run ./bench/recallbench -corpus /data/sessions -backend both
//	go run ./bench/recallbench -backend postgres -pg postgres://user@host/db
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctxtool/ctxtool/internal/cputime"
	"github.com/ctxtool/ctxtool/internal/testkit/pgtest"
	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// threadCPU is the calling OS thread's user+system time (the query loop
// locks its goroutine to one thread; SQLite here is pure Go, no cgo threads).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var verbose bool

type planted struct {
	file string
	recalltest.Fact
}

type config struct {
	mb, fileMB           float64
	dir, corpus          string
	nq                   int
	cpuprofile, qprofile string
	backend, pgURL       string
	listQueries          bool
}

func main() {
	var c config
	flag.Float64Var(&c.mb, "mb", 100, "megabytes of transcripts to generate")
	flag.Float64Var(&c.fileMB, "file-mb", 2, "approximate size of one session file")
	flag.StringVar(&c.dir, "dir", "", "work directory (default: a temp dir, removed afterwards)")
	flag.StringVar(&c.corpus, "corpus", "", "index the transcripts under this directory instead of generating (queries: words drawn from it)")
	flag.IntVar(&c.nq, "queries", 400, "number of timed queries")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the indexing run")
	flag.StringVar(&c.qprofile, "qprofile", "", "write a CPU profile of the timed queries")
	flag.StringVar(&c.backend, "backend", "sqlite", "sqlite | postgres | both")
	flag.StringVar(&c.pgURL, "pg", "", "PostgreSQL URL (default: a throwaway server, as the tests start)")
	flag.BoolVar(&verbose, "v", false, "list the slowest queries")
	flag.BoolVar(&c.listQueries, "list-queries", false, "print the timed queries, one a line, and exit (bench/recall-peers.sh asks the peers the same)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "recallbench:", err)
		os.Exit(1)
	}
}

// corpus is what gets indexed and asked.
type corpus struct {
	files   []string
	total   int64
	facts   []planted
	queries []string // timed queries
	gen     time.Duration
}

func run(c config) error {
	if c.dir == "" {
		d, err := os.MkdirTemp("", "recallbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.dir = d
	}
	var cp *corpus
	var err error
	if c.corpus != "" {
		cp, err = existingCorpus(c.corpus, c.nq)
	} else {
		cp, err = generate(filepath.Join(c.dir, "sessions"), c.mb, c.fileMB, c.nq)
	}
	if err != nil {
		return err
	}
	if c.listQueries {
		for _, q := range cp.queries {
			fmt.Println(q)
		}
		return nil
	}
	fmt.Printf("transcripts: %d files, %.1f MB (generated in %.1fs); load average %s\n\n",
		len(cp.files), float64(cp.total)/1e6, cp.gen.Seconds(), loadavg())

	var locs []string
	names := map[string]string{}
	if c.backend == "sqlite" || c.backend == "both" {
		l := filepath.Join(c.dir, "state", "recall", "index.sqlite")
		locs, names[l] = append(locs, l), "sqlite"
	}
	if c.backend == "postgres" || c.backend == "both" {
		url := c.pgURL
		if url == "" {
			srv, err := pgtest.Start()
			if err != nil {
				return err
			}
			defer srv.Stop()
			if url, err = srv.CreateDB("recallbench"); err != nil {
				return err
			}
		}
		locs, names[url] = append(locs, url), "postgres"
	}
	if len(locs) == 0 {
		return fmt.Errorf("-backend %q: use sqlite, postgres or both", c.backend)
	}
	top3 := map[string][][]string{}
	for _, loc := range locs {
		fmt.Printf("== %s\n", names[loc])
		t, err := measure(c, cp, loc)
		if err != nil {
			return err
		}
		top3[names[loc]] = t
		fmt.Println()
	}
	if a, b := top3["sqlite"], top3["postgres"]; a != nil && b != nil {
		same, total, shown := 0, 0, 0
		for i := range a {
			want := map[string]bool{}
			for _, h := range a[i] {
				want[h] = true
			}
			total += len(a[i])
			n := 0
			for _, h := range b[i] {
				if want[h] {
					n++
				}
			}
			same += n
			if verbose && n < len(a[i]) && shown < 10 {
				shown++
				fmt.Printf("differs: %q\n  sqlite   %v\n  postgres %v\n", cp.queries[i], a[i], b[i])
			}
		}
		fmt.Printf("top-3 overlap postgres vs sqlite: %d/%d hits (%.1f%%) over %d queries\n",
			same, total, 100*float64(same)/float64(max(1, total)), len(a))
	}
	return nil
}

// generate writes sessions with planted facts (~fileMB each).
func generate(sessDir string, mb, fileMB float64, nq int) (*corpus, error) {
	os.MkdirAll(sessDir, 0o755)
	t0 := time.Now()
	cp := &corpus{}
	turns := max(20, int(fileMB*1e6/7000)) // about 7 KB per turn with the defaults
	for i := 0; cp.total < int64(mb*1e6); i++ {
		seed := uint64(10_000 + i)
		p := filepath.Join(sessDir, fmt.Sprintf("%08d-bench.jsonl", i))
		fs, err := recalltest.WriteFile(p, recalltest.Options{Seed: seed, Turns: turns,
			Facts: recalltest.DefaultFacts(seed), Compactions: 2})
		if err != nil {
			return nil, err
		}
		fi, _ := os.Stat(p)
		cp.total += fi.Size()
		cp.files = append(cp.files, p)
		for _, f := range fs {
			cp.facts = append(cp.facts, planted{p, f})
		}
	}
	cp.gen = time.Since(t0)
	// Timed queries: planted-fact queries, and 1–3 common filler words.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < nq; i++ {
		if i%2 == 0 {
			cp.queries = append(cp.queries, cp.facts[rng.IntN(len(cp.facts))].Query)
		} else {
			cp.queries = append(cp.queries, commonQuery(rng))
		}
	}
	return cp, nil
}

var common = strings.Fields("function error request config cache token parser query transaction retry deploy module handler timeout stream")

func commonQuery(rng *rand.Rand) string {
	n := 1 + rng.IntN(3)
	var ws []string
	for k := 0; k < n; k++ {
		ws = append(ws, common[rng.IntN(len(common))])
	}
	return strings.Join(ws, " ")
}

var (
	wordRe = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_]{5,24}`)
	cjkRe  = regexp.MustCompile(`[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]{2,}`)
)

// existingCorpus indexes the transcripts under dir; its queries are half
// rarer words (1–2 words of ≥ 6 letters from random lines of the corpus;
// where the lines hold CJK, every other one is instead 2–4 characters of
// a CJK run), half common ones.
func existingCorpus(dir string, nq int) (*corpus, error) {
	fs, err := walk.Walk([]string{dir}, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}})
	if err != nil {
		return nil, err
	}
	cp := &corpus{}
	for _, f := range fs {
		cp.files = append(cp.files, f.Path)
		cp.total += f.Size
	}
	if len(cp.files) == 0 {
		return nil, fmt.Errorf("no transcripts under %s", dir)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for len(cp.queries) < nq {
		if len(cp.queries)%2 == 1 {
			cp.queries = append(cp.queries, commonQuery(rng))
			continue
		}
		f, err := os.Open(cp.files[rng.IntN(len(cp.files))])
		if err != nil {
			return nil, err
		}
		fi, _ := f.Stat()
		buf := make([]byte, 4096)
		n, _ := f.ReadAt(buf, rng.Int64N(max(1, fi.Size()-4096)))
		f.Close()
		if cjk := cjkRe.FindAllString(string(buf[:n]), -1); len(cjk) > 0 && len(cp.queries)%4 == 0 {
			r := []rune(cjk[rng.IntN(len(cjk))])
			k := 2 + rng.IntN(3)
			if len(r) >= k {
				i := rng.IntN(len(r) - k + 1)
				cp.queries = append(cp.queries, string(r[i:i+k]))
				continue
			}
		}
		ws := wordRe.FindAllString(string(buf[:n]), -1)
		if len(ws) < 4 {
			continue
		}
		k := rng.IntN(len(ws) - 2)
		q := ws[k+1]
		if rng.IntN(2) == 0 {
			q += " " + ws[k+2]
		}
		cp.queries = append(cp.queries, q)
	}
	return cp, nil
}

// measure indexes the corpus into loc, queries it, prints a table and
// returns each timed query's top 3 (as citations).
func measure(c config, cp *corpus, loc string) ([][]string, error) {
	ctx := context.Background()
	ix, err := recall.OpenURL(loc)
	if err != nil {
		return nil, err
	}
	defer ix.Close()

	idx, err := indexTwice(ctx, c, ix, cp.files)
	if err != nil {
		return nil, err
	}
	found, err := findPlanted(ctx, ix, cp.facts)
	if err != nil {
		return nil, err
	}
	q, err := timeQueries(ctx, c, ix, cp.queries)
	if err != nil {
		return nil, err
	}
	var app appendRun
	if c.corpus == "" && c.backend != "both" { // (both: the second backend must see the same files)
		if app, err = appendAndIndex(ctx, ix, cp.files); err != nil {
			return nil, err
		}
	}
	printTable(ix, loc, cp, idx, found, q, app)
	return q.tops, nil
}

// startProfile starts a CPU profile into path ("" = none) and returns what
// stops it.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	pprof.StartCPUProfile(f)
	return pprof.StopCPUProfile, nil
}

// indexRun is the first (profiled) and the second (unchanged) index run.
type indexRun struct {
	chunks          int
	first, firstCPU time.Duration
	second          time.Duration
	secondBytes     int64
}

func indexTwice(ctx context.Context, c config, ix *recall.Index, files []string) (indexRun, error) {
	var r indexRun
	stop, err := startProfile(c.cpuprofile)
	if err != nil {
		return r, err
	}
	t1 := time.Now()
	c1 := cputime.Used()
	var ierr error
	err = ix.IndexFiles(ctx, files, func(st recall.Stats, err error) {
		r.chunks += st.Chunks
		if err != nil && ierr == nil {
			ierr = err
		}
	})
	r.first = time.Since(t1)
	r.firstCPU = cputime.Used() - c1
	stop()
	if err = cmp.Or(err, ierr); err != nil {
		return r, err
	}

	t2 := time.Now()
	err = ix.IndexFiles(ctx, files, func(st recall.Stats, err error) { r.secondBytes += st.Bytes })
	r.second = time.Since(t2)
	return r, err
}

// plantedFound is how the planted facts ranked.
type plantedFound struct {
	top3, top1 int
	missed     []string // the first 5 not in the top 3
}

func findPlanted(ctx context.Context, ix *recall.Index, facts []planted) (plantedFound, error) {
	var p plantedFound
	for _, f := range facts {
		res, err := ix.Search(ctx, f.Query, recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
		if err != nil {
			return p, err
		}
		r := 0
		for i, h := range res.Hits {
			if h.Path == f.file && h.StartLine <= f.Line && f.Line <= h.EndLine {
				r = i + 1
				break
			}
		}
		if r == 1 {
			p.top1++
		}
		if r >= 1 && r <= 3 {
			p.top3++
		} else if len(p.missed) < 5 {
			p.missed = append(p.missed, fmt.Sprintf("%s %q rank %d", f.Name, f.Query, r))
		}
	}
	return p, nil
}

// slowQ is one timed query. The slowest are listed by wall time: on
// PostgreSQL most of a query's time is the server's, which the thread CPU
// does not count.
type slowQ struct {
	q         string
	wall, cpu time.Duration
}

// queryRun is the timed queries: latencies and thread CPU (each sorted),
// the queries slowest first, and each query's top 3.
type queryRun struct {
	lat, cpu []time.Duration
	slow     []slowQ
	tops     [][]string
}

func timeQueries(ctx context.Context, c config, ix *recall.Index, queries []string) (queryRun, error) {
	var r queryRun
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stop, err := startProfile(c.qprofile)
	if err != nil {
		return r, err
	}
	defer stop()
	for _, q := range queries {
		s, c0 := time.Now(), threadCPU()
		res, err := ix.Search(ctx, q, recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
		if err != nil {
			return r, err
		}
		r.lat = append(r.lat, time.Since(s))
		r.cpu = append(r.cpu, threadCPU()-c0)
		r.slow = append(r.slow, slowQ{q, r.lat[len(r.lat)-1], r.cpu[len(r.cpu)-1]})
		var t []string
		for _, h := range res.Hits[:min(3, len(res.Hits))] {
			t = append(t, h.Citation)
		}
		r.tops = append(r.tops, t)
	}
	sort.Slice(r.slow, func(i, j int) bool { return r.slow[i].wall > r.slow[j].wall })
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	sort.Slice(r.cpu, func(i, j int) bool { return r.cpu[i] < r.cpu[j] })
	return r, nil
}

// appendRun is appending one line to 10 files and indexing them again.
type appendRun struct {
	files, lines, reread int
	took                 time.Duration
}

func appendAndIndex(ctx context.Context, ix *recall.Index, files []string) (appendRun, error) {
	var r appendRun
	t3 := time.Now()
	for i, f := range files[:min(10, len(files))] {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return r, err
		}
		fmt.Fprintf(fh, `{"type":"message","id":"app%05d","parentId":null,"timestamp":"2026-04-01T10:00:00.000Z","message":{"role":"user","content":"appended note %d about the heron%d rollout","timestamp":1775037600000}}`+"\n", i, i, i)
		fh.Close()
		st, err := ix.Index(ctx, f)
		if err != nil {
			return r, err
		}
		r.files++
		r.lines += st.LinesIndexed
		r.reread += st.LinesReread
	}
	r.took = time.Since(t3)
	return r, nil
}

func printTable(ix *recall.Index, loc string, cp *corpus, idx indexRun, found plantedFound, q queryRun, app appendRun) {
	pct := func(ds []time.Duration, p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(k, v string) { fmt.Fprintf(w, "%s\t%s\t\n", k, v) }
	row("metric", "value")
	row("index", ix.Path())
	row("chunks", fmt.Sprint(idx.chunks))
	if sz, err := ix.Sizes(context.Background()); err == nil {
		row("index size / corpus", fmt.Sprintf("%.1f MB / %.1f MB = %.0f%%", float64(sz.Index)/1e6, float64(sz.Corpus)/1e6, 100*sz.Share()))
	}
	mbs := float64(cp.total) / 1e6
	row("first index (wall)", fmt.Sprintf("%.2fs = %.1f MB/s", idx.first.Seconds(), mbs/idx.first.Seconds()))
	row("first index (CPU of this process)", fmt.Sprintf("%.2fs = %.1f MB per CPU-second", idx.firstCPU.Seconds(), mbs/idx.firstCPU.Seconds()))
	row("second index (unchanged)", fmt.Sprintf("%.1f ms, %d bytes read as new", float64(idx.second.Microseconds())/1000, idx.secondBytes))
	if app.files > 0 {
		row("append 1 line to 10 files", fmt.Sprintf("%.1f ms, %d files, %d new lines indexed, %d re-read", float64(app.took.Microseconds())/1000, app.files, app.lines, app.reread))
	}
	row("query p50 / p95 / max (wall)", ms(pct(q.lat, 0.50))+" / "+ms(pct(q.lat, 0.95))+" / "+ms(q.lat[len(q.lat)-1]))
	row("query p50 / p95 / max (thread CPU)", ms(pct(q.cpu, 0.50))+" / "+ms(pct(q.cpu, 0.95))+" / "+ms(q.cpu[len(q.cpu)-1]))
	row("load average at end", loadavg())
	if len(cp.facts) > 0 {
		row("planted facts in top 3", fmt.Sprintf("%d/%d (%.1f%%), top 1: %d", found.top3, len(cp.facts), 100*float64(found.top3)/float64(len(cp.facts)), found.top1))
	}
	w.Flush()
	if verbose {
		for _, s := range q.slow[:min(8, len(q.slow))] {
			fmt.Printf("slow query %q: %.2f ms wall, %.2f ms CPU\n", s.q, float64(s.wall.Microseconds())/1000, float64(s.cpu.Microseconds())/1000)
		}
	}
	for _, m := range found.missed {
		fmt.Println("missed:", m)
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ") + fmt.Sprintf(" (%d CPUs)", runtime.NumCPU())
}
