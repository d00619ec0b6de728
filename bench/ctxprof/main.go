// Command ctxprof runs one ctxtool command in-process under the Go profiler,
// so a slow or memory-hungry run can be looked at with `go tool pprof`:
//
//	go run ./bench/ctxprof -cpu cpu.prof -mem heap.prof -- estimate big.jsonl
//	go tool pprof -top cpu.prof
//
// -mem writes the heap profile at the moment the heap was largest (sampled
// every -every), which is what peak RSS is made of.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/ctxtool/ctxtool/cmd"
)

func main() {
	cpu := flag.String("cpu", "", "write a CPU profile here")
	mem := flag.String("mem", "", "write a heap profile, taken when the live heap peaked, here")
	every := flag.Duration("every", 50*time.Millisecond, "how often -mem samples the heap")
	flag.Parse()
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ctxprof:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	if *mem != "" {
		runtime.MemProfileRate = 64 << 10
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(*every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak {
					peak = ms.HeapAlloc
					writeHeap(*mem)
				}
			}
		}()
	}
	os.Args = append([]string{"ctxtool"}, flag.Args()...)
	code := cmd.Execute()
	close(stop)
	wg.Wait()
	if *cpu != "" {
		pprof.StopCPUProfile()
	}
	if *mem != "" {
		fmt.Fprintf(os.Stderr, "ctxprof: peak heap %d MB\n", peak>>20)
	}
	os.Exit(code)
}

func writeHeap(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	pprof.Lookup("heap").WriteTo(f, 0)
}
