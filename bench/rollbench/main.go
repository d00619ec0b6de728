// Command rollbench measures `ctxtool roll` as a cron job would run it: it
// generates N sessions in the pi layout (sessions/--<cwd>--/*.jsonl) and the
// OpenClaw layout (agents/<id>/sessions/*.jsonl) with archives, backups and
// stale lock files between them, runs `roll --json` over the tree (with the
// recall index, as in production), then runs it again and checks that the
// second run changes nothing.
//
//	go run ./bench/rollbench                 # 1,000 sessions in a temp dir
//	go run ./bench/rollbench -n 200 -big 0.5 -check 5
//
// Sessions: a share -big of them are large enough (≈ 190k-260k tokens) to
// cross pi's compaction threshold of a 200k window; the rest are 5-60 turn
// sessions below it. Mixed versions (v1/v3), earlier compactions, branches,
// CJK and tool-dense shapes.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxtool/ctxtool/cmd"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/rolling"
)

func main() {
	n := flag.Int("n", 1000, "number of sessions")
	big := flag.Float64("big", 0.2, "share of sessions over the compaction threshold")
	dir := flag.String("dir", "", "where to generate (default: a temp dir, removed afterwards)")
	jobs := flag.Int("jobs", 0, "roll --jobs (0: number of CPUs)")
	tokenizer := flag.String("tokenizer", "auto", "roll --tokenizer")
	check := flag.Int("check", 3, "run pi's loader on this many rolled sessions")
	flag.Parse()
	if err := run(*n, *big, *dir, *jobs, *tokenizer, *check); err != nil {
		fmt.Fprintln(os.Stderr, "rollbench:", err)
		os.Exit(1)
	}
}

func run(n int, big float64, dir string, jobs int, tokenizer string, check int) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "rollbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	sessions := filepath.Join(dir, "tree")
	state := filepath.Join(dir, "state")
	t0 := time.Now()
	files, bytes, err := generate(sessions, n, big)
	if err != nil {
		return err
	}
	fmt.Printf("generated %d sessions, %.1f MB in %.1fs (%s)\n", len(files), float64(bytes)/1e6, time.Since(t0).Seconds(), sessions)

	args := []string{"roll", "--json", "--state-dir", state, "--tokenizer", tokenizer}
	if jobs > 0 {
		args = append(args, "--jobs", fmt.Sprint(jobs))
	}
	args = append(args, sessions)

	first, took1, err := roll(args)
	if err != nil {
		return err
	}
	sum1 := summarize(first)
	fmt.Printf("run 1: %d sessions in %.2fs = %.1f sessions/s (%.1f MB/s): %d rolled (%d messages, %d tokens evicted), %d unchanged, %d errors\n",
		len(first), took1.Seconds(), float64(len(first))/took1.Seconds(), float64(bytes)/1e6/took1.Seconds(),
		sum1.Rolled, sum1.EvictedCount, sum1.EvictedTokens, sum1.Unchanged, sum1.Errors)
	for _, r := range first {
		if r.Error != "" {
			fmt.Printf("  error: %s\n", r.Error)
		}
	}

	hashes := hashAll(sessions)
	second, took2, err := roll(args)
	if err != nil {
		return err
	}
	sum2 := summarize(second)
	changed := 0
	for p, h := range hashAll(sessions) {
		if hashes[p] != h {
			changed++
		}
	}
	fmt.Printf("run 2: %d sessions in %.2fs = %.1f sessions/s: %d rolled, %d files changed, %d errors\n",
		len(second), took2.Seconds(), float64(len(second))/took2.Seconds(), sum2.Rolled, changed, sum2.Errors)

	var rolled []string
	for _, r := range first {
		if r.Rolled {
			rolled = append(rolled, r.File)
		}
	}
	sort.Strings(rolled)
	checked, bad := 0, 0
	if check > 0 && oracle.Available() {
		for i := 0; i < len(rolled) && checked < check; i += max(1, len(rolled)/check) {
			ok, msg := piLoads(rolled[i])
			checked++
			if !ok {
				bad++
				fmt.Printf("  pi: %s: %s\n", rolled[i], msg)
			}
		}
		fmt.Printf("pi's loader: %d/%d rolled sessions checked load with the note first and no orphaned tool results\n", checked-bad, checked)
	}
	if changed > 0 || sum2.Rolled > 0 || sum1.Errors+sum2.Errors > 0 || bad > 0 {
		return fmt.Errorf("FAILED: second run changed %d files / rolled %d; errors %d+%d; pi failures %d", changed, sum2.Rolled, sum1.Errors, sum2.Errors, bad)
	}
	return nil
}

// generate writes n sessions, half in each layout, plus files roll must skip.
func generate(root string, n int, big float64) ([]string, int64, error) {
	jobs := plan(root, n, big)
	total, err := writeAll(jobs)
	if err != nil {
		return nil, 0, err
	}
	files := make([]string, len(jobs))
	for i, j := range jobs {
		files[i] = j.path
	}
	addSkipped(files)
	return files, total, nil
}

// genJob is one session to write.
type genJob struct {
	path string
	o    sessiongen.Options
}

// plan gives each of the n sessions its path and shape (a share big of
// them about 1 MB; every tenth kind v1, branched, CJK, tool-dense or
// thinking), the same for the same n and big.
func plan(root string, n int, big float64) []genJob {
	rng := rand.New(rand.NewPCG(7, 7))
	var jobs []genJob
	for i := 0; i < n; i++ {
		var p string
		if i%2 == 0 {
			p = filepath.Join(root, "pi", "sessions", fmt.Sprintf("--home-dev-proj%02d--", i%17),
				fmt.Sprintf("2026-03-%02dT09-00-00-000Z_%08x.jsonl", 1+i%28, i))
		} else {
			p = filepath.Join(root, "openclaw", "agents", fmt.Sprintf("agent%d", i%5), "sessions", fmt.Sprintf("s%06d.jsonl", i))
		}
		o := sessiongen.Options{Seed: uint64(1000 + i), Turns: 5 + rng.IntN(55), ToolCallsPerTurn: 2 + rng.IntN(6),
			ToolResultBytes: 800 + rng.IntN(1500), NoLineIndex: true}
		if rng.Float64() < big {
			o.Turns = 0
			o.TargetBytes = int64(900_000 + rng.IntN(400_000))
		}
		switch i % 10 {
		case 1:
			o.Version = 1
			o.Compactions = 1
		case 2:
			o.Compactions = 2
			o.Branches = 1
		case 3:
			o.CJKShare = 0.5
		case 4:
			o.MinToolCallsPerTurn, o.ToolCallsPerTurn = 10, 20
		case 5:
			o.Thinking = true
		}
		jobs = append(jobs, genJob{p, o})
	}
	return jobs
}

// writeAll writes the sessions on one worker per CPU and returns their
// total size, or the first error.
func writeAll(jobs []genJob) (int64, error) {
	var (
		mu    sync.Mutex
		total int64
		first error
		wg    sync.WaitGroup
	)
	ch := make(chan genJob)
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				err := os.MkdirAll(filepath.Dir(j.path), 0o755)
				var res *sessiongen.Result
				if err == nil {
					res, err = sessiongen.GenerateFile(j.path, j.o)
				}
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("%s: %w", j.path, err)
				}
				if res != nil {
					total += res.Bytes
				}
				mu.Unlock()
				// Written "yesterday", so that --older-than users see them as idle.
				old := time.Now().Add(-24 * time.Hour)
				os.Chtimes(j.path, old, old)
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return total, first
}

// addSkipped puts beside every 50th session what a real sessions directory
// also holds: an archive, a backup, a stale lock and sessions.json.
func addSkipped(files []string) {
	for i := 1; i < len(files); i += 50 {
		d := filepath.Dir(files[i])
		for _, name := range []string{
			filepath.Base(files[i]) + ".reset.2026-03-08T13-03-27.008Z",
			filepath.Base(files[i]) + ".bak.2026-03-08T13-03-27.008Z",
			"stale.jsonl.lock", "sessions.json",
		} {
			os.WriteFile(filepath.Join(d, name), []byte("{}\n"), 0o644)
		}
	}
}

// roll runs the real command in-process.
func roll(args []string) ([]rolling.Report, time.Duration, error) {
	io, _, out, errOut := iostreams.Test()
	root, _ := cmd.NewRootCmd(io)
	root.SetArgs(args)
	start := time.Now()
	err := root.ExecuteContext(context.Background())
	took := time.Since(start)
	var reps []rolling.Report
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r rolling.Report
		if e := json.Unmarshal(sc.Bytes(), &r); e != nil {
			return nil, took, fmt.Errorf("bad JSON line: %w", e)
		}
		reps = append(reps, r)
	}
	if err != nil {
		return reps, took, fmt.Errorf("roll: %w\n%s", err, errOut.String())
	}
	return reps, took, nil
}

func summarize(reps []rolling.Report) rolling.Summary {
	var s rolling.Summary
	for i := range reps {
		s.Add(&reps[i])
	}
	return s
}

func hashAll(root string) map[string][32]byte {
	m := map[string][32]byte{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			m[p] = sha256.Sum256(b)
		}
		return nil
	})
	return m
}

func piLoads(path string) (bool, string) {
	out, err := exec.Command("node", filepath.Join(oracle.Dir(), "pi-check.mjs"), "--no-text", path).Output()
	if err != nil {
		return false, err.Error()
	}
	var r oracle.Result
	if err := json.Unmarshal(out, &r); err != nil {
		return false, err.Error()
	}
	if !r.Loads || r.FirstRole != "compactionSummary" || r.OrphanToolResults != 0 {
		return false, strings.TrimSpace(string(out))
	}
	return true, ""
}
