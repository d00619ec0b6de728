package rolling

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ctxtool/ctxtool/pkg/walk"
)

// BatchOptions control a batch run over many session files (cron).
type BatchOptions struct {
	// Jobs is the number of sessions rolled at once (≤ 0: number of CPUs).
	Jobs int
	// OlderThan skips sessions modified more recently than this: standalone
	// pi takes no lock, so a session being written is left alone.
	OlderThan time.Duration
	// Progress is called after each session (from one goroutine at a time).
	Progress func(done, total int)
	// Now is the clock for OlderThan (tests).
	Now func() time.Time
}

// Summary totals a batch.
type Summary struct {
	Sessions      int     `json:"sessions"`
	Rolled        int     `json:"rolled"`
	Fallback      int     `json:"fallback"`
	Unchanged     int     `json:"unchanged"`
	Skipped       int     `json:"skipped"`
	Locked        int     `json:"locked"`
	Errors        int     `json:"errors"`
	EvictedCount  int     `json:"evictedCount"`
	EvictedTokens int     `json:"evictedTokens"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"sessionsPerSecond"`
}

// Batch rolls files with Jobs workers and calls emit for each report in the
// order of files (so output is deterministic whatever the scheduling).
// Locked sessions are skipped and reported, never written; one session's
// failure does not stop the others.
func (r *Roller) Batch(ctx context.Context, files []walk.File, bo BatchOptions, emit func(*Report)) Summary {
	start := time.Now()
	jobs := bo.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	now := time.Now
	if bo.Now != nil {
		now = bo.Now
	}
	reports := make([]*Report, len(files))
	var (
		mu   sync.Mutex
		next int // next report to emit
		done int
		sum  Summary
	)
	finish := func(i int, rep *Report) {
		mu.Lock()
		defer mu.Unlock()
		reports[i] = rep
		done++
		for next < len(files) && reports[next] != nil {
			sum.Add(reports[next])
			if emit != nil {
				emit(reports[next])
			}
			reports[next] = nil // free memory early; counted already
			next++
		}
		if bo.Progress != nil {
			bo.Progress(done, len(files))
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs && w < len(files); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f := files[i]
				var rep *Report
				switch {
				case ctx.Err() != nil:
					rep = (&Report{File: f.Path}).fail(ctx.Err())
				case bo.OlderThan > 0 && now().Sub(f.ModTime) < bo.OlderThan:
					rep = &Report{File: f.Path, Skipped: true, Reason: fmt.Sprintf("modified %s ago (< --older-than %s): possibly live, left alone",
						now().Sub(f.ModTime).Round(time.Second), bo.OlderThan)}
				default:
					rep = r.Roll(ctx, f.Path)
				}
				finish(i, rep)
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.PerSecond = float64(sum.Sessions) / sum.Seconds
	}
	return sum
}

// Add counts one session's report into the summary.
func (s *Summary) Add(r *Report) {
	s.Sessions++
	switch {
	case r.Locked:
		s.Locked++
	case r.Error != "":
		s.Errors++
	case r.Skipped:
		s.Skipped++
	case r.Fallback != "":
		s.Fallback++
	case r.Would():
		s.Rolled++
		s.EvictedCount += r.EvictedCount
		s.EvictedTokens += r.EvictedTokens
	default:
		s.Unchanged++
	}
}
