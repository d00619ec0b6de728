// Command recallbench measures ctxtool's recall index on generated
// transcripts with planted facts: indexing throughput, the cost of a second
// (unchanged) run and of an append, query latency p50/p95 and the share of
// planted facts found in the top 3. It prints one table.
//
//	go run ./bench/recallbench            # ~100 MB in a temp dir
//	go run ./bench/recallbench -mb 20 -cpuprofile cpu.out
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// threadCPU is the calling OS thread's user+system time (the query loop
// locks its goroutine to one thread; SQLite here is pure Go, no cgo threads).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTime is the process's user+system time: under a loaded machine it
// is a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var verbose bool

type planted struct {
	file string
	recalltest.Fact
}

func main() {
	mb := flag.Float64("mb", 100, "megabytes of transcripts to generate")
	fileMB := flag.Float64("file-mb", 2, "approximate size of one session file")
	dir := flag.String("dir", "", "work directory (default: a temp dir, removed afterwards)")
	queries := flag.Int("queries", 400, "number of timed queries")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the indexing run")
	qprofile := flag.String("qprofile", "", "write a CPU profile of the timed queries")
	flag.BoolVar(&verbose, "v", false, "list the slowest queries")
	flag.Parse()
	if err := run(*mb, *fileMB, *dir, *queries, *cpuprofile, *qprofile); err != nil {
		fmt.Fprintln(os.Stderr, "recallbench:", err)
		os.Exit(1)
	}
}

func run(mb, fileMB float64, dir string, nq int, cpuprofile, qprofile string) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "recallbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	sessDir := filepath.Join(dir, "sessions")
	os.MkdirAll(sessDir, 0o755)

	// Generate: ~fileMB per file (about 7 KB per turn with the defaults).
	t0 := time.Now()
	turns := max(20, int(fileMB*1e6/7000))
	var facts []planted
	var files []string
	var total int64
	for i := 0; total < int64(mb*1e6); i++ {
		seed := uint64(10_000 + i)
		p := filepath.Join(sessDir, fmt.Sprintf("%08d-bench.jsonl", i))
		fs, err := recalltest.WriteFile(p, recalltest.Options{Seed: seed, Turns: turns,
			Facts: recalltest.DefaultFacts(seed), Compactions: 2})
		if err != nil {
			return err
		}
		fi, _ := os.Stat(p)
		total += fi.Size()
		files = append(files, p)
		for _, f := range fs {
			facts = append(facts, planted{p, f})
		}
	}
	gen := time.Since(t0)

	ix, err := recall.Open(filepath.Join(dir, "state"))
	if err != nil {
		return err
	}
	defer ix.Close()

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
	}
	t1 := time.Now()
	c1 := cpuTime()
	chunks := 0
	for _, f := range files {
		st, err := ix.Index(ctx, f)
		if err != nil {
			return err
		}
		chunks += st.Chunks
	}
	first := time.Since(t1)
	firstCPU := cpuTime() - c1
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}

	t2 := time.Now()
	var secondBytes int64
	for _, f := range files {
		st, err := ix.Index(ctx, f)
		if err != nil {
			return err
		}
		secondBytes += st.Bytes
	}
	second := time.Since(t2)

	// Append one turn (a few lines) to 10 files and index them again.
	var appended, appendLines, reread int
	t3 := time.Now()
	for i, f := range files[:min(10, len(files))] {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(fh, `{"type":"message","id":"app%05d","parentId":null,"timestamp":"2026-04-01T10:00:00.000Z","message":{"role":"user","content":"appended note %d about the heron%d rollout","timestamp":1775037600000}}`+"\n", i, i, i)
		fh.Close()
		st, err := ix.Index(ctx, f)
		if err != nil {
			return err
		}
		appended++
		appendLines += st.LinesIndexed
		reread += st.LinesReread
	}
	appendTime := time.Since(t3)

	// Recall of planted facts.
	top3, top1 := 0, 0
	var missed []string
	for _, f := range facts {
		res, err := ix.Search(ctx, f.Query, recall.SearchOptions{MaxResults: 6, MinScore: 0.35})
		if err != nil {
			return err
		}
		r := 0
		for i, h := range res.Hits {
			if h.Path == f.file && h.StartLine <= f.Line && f.Line <= h.EndLine {
				r = i + 1
				break
			}
		}
		if r == 1 {
			top1++
		}
		if r >= 1 && r <= 3 {
			top3++
		} else if len(missed) < 5 {
			missed = append(missed, fmt.Sprintf("%s %q rank %d", f.Name, f.Query, r))
		}
	}

	// Timed queries: planted-fact queries, and 1–3 common filler words.
	rng := rand.New(rand.NewPCG(1, 2))
	common := strings.Fields("function error request config cache token parser query transaction retry deploy module handler timeout stream")
	var lat, qcpu []time.Duration
	type slowQ struct {
		q   string
		cpu time.Duration
	}
	var slow []slowQ
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if qprofile != "" {
		f, err := os.Create(qprofile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	for i := 0; i < nq; i++ {
		var q string
		if i%2 == 0 {
			q = facts[rng.IntN(len(facts))].Query
		} else {
			n := 1 + rng.IntN(3)
			var ws []string
			for k := 0; k < n; k++ {
				ws = append(ws, common[rng.IntN(len(common))])
			}
			q = strings.Join(ws, " ")
		}
		s, c := time.Now(), threadCPU()
		if _, err := ix.Search(ctx, q, recall.SearchOptions{MaxResults: 6, MinScore: 0.35}); err != nil {
			return err
		}
		lat = append(lat, time.Since(s))
		qcpu = append(qcpu, threadCPU()-c)
		slow = append(slow, slowQ{q, qcpu[len(qcpu)-1]})
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i].cpu > slow[j].cpu })
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(qcpu, func(i, j int) bool { return qcpu[i] < qcpu[j] })
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	cpct := func(p float64) time.Duration { return qcpu[min(len(qcpu)-1, int(p*float64(len(qcpu))))] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

	dbSize := int64(0)
	for _, suf := range []string{"", "-wal"} {
		if fi, err := os.Stat(ix.Path() + suf); err == nil {
			dbSize += fi.Size()
		}
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(k, v string) { fmt.Fprintf(w, "%s\t%s\t\n", k, v) }
	row("metric", "value")
	row("transcripts", fmt.Sprintf("%d files, %.1f MB (generated in %.1fs)", len(files), float64(total)/1e6, gen.Seconds()))
	row("chunks", fmt.Sprint(chunks))
	row("index size", fmt.Sprintf("%.1f MB", float64(dbSize)/1e6))
	row("first index (wall)", fmt.Sprintf("%.2fs = %.1f MB/s", first.Seconds(), float64(total)/1e6/first.Seconds()))
	row("first index (CPU, all threads)", fmt.Sprintf("%.2fs = %.1f MB per CPU-second", firstCPU.Seconds(), float64(total)/1e6/firstCPU.Seconds()))
	row("second index (unchanged)", fmt.Sprintf("%.1f ms, %d bytes read as new", float64(second.Microseconds())/1000, secondBytes))
	row("append 1 line to 10 files", fmt.Sprintf("%.1f ms, %d files, %d new lines indexed, %d re-read", float64(appendTime.Microseconds())/1000, appended, appendLines, reread))
	row("query p50 / p95 / max (wall)", ms(pct(0.50))+" / "+ms(pct(0.95))+" / "+ms(lat[len(lat)-1]))
	row("query p50 / p95 / max (thread CPU)", ms(cpct(0.50))+" / "+ms(cpct(0.95))+" / "+ms(qcpu[len(qcpu)-1]))
	row("load average at end", loadavg())
	row("planted facts in top 3", fmt.Sprintf("%d/%d (%.1f%%), top 1: %d", top3, len(facts), 100*float64(top3)/float64(len(facts)), top1))
	w.Flush()
	if verbose {
		for _, q := range slow[:min(8, len(slow))] {
			fmt.Printf("slow query %q: %.2f ms CPU\n", q.q, float64(q.cpu.Microseconds())/1000)
		}
	}
	for _, m := range missed {
		fmt.Println("missed:", m)
	}
	return nil
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
