// Command lint times `ctxtool lint` against `ctxtool estimate` on the same
// generated session, alternating the two in one run, and prints a table:
// median wall time, CPU time, worst peak RSS, and the ratios. The issue's
// bound: lint within 2× estimate's time, with the same memory bound. Run
// from the repo root:
//
//	go run ./bench/lint                     # ~1 GB session
//	go run ./bench/lint -size 100MB -runs 5
//	go run ./bench/lint -file big.jsonl -tokenizer auto
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/ctxtool/ctxtool/internal/benchkit"
)

func main() {
	fl := benchkit.Define("1GB", "medians are reported")
	tok := flag.String("tokenizer", "heuristic", "estimate's --tokenizer (auto runs calibrated/o200k: much slower)")
	flag.Parse()
	if err := run(fl, *tok); err != nil {
		fmt.Fprintln(os.Stderr, "bench/lint:", err)
		os.Exit(1)
	}
}

type sample = benchkit.Sample

func run(fl *benchkit.Flags, tok string) error {
	setup, err := fl.Prepare()
	if err != nil {
		return err
	}
	defer os.RemoveAll(setup.Dir)
	bin, file, runs := setup.Bin, setup.Session, fl.Runs
	sides := []struct {
		name string
		args []string
	}{
		{"estimate --tokenizer " + tok, []string{"estimate", "--tokenizer", tok, "--json", file}},
		{"lint (all rules)", []string{"lint", "--json", "--fail-on", "never", file}},
		{"lint --max-utilization 0.8", []string{"lint", "--json", "--fail-on", "never", "--tokenizer", tok, "--max-utilization", "0.8", file}},
	}
	res := make([][]sample, len(sides))
	exec.Command(bin, sides[0].args...).Run() // warm the page cache
	for i := 0; i < runs; i++ {
		for j, s := range sides {
			x, err := measure(bin, s.args)
			if err != nil {
				return err
			}
			res[j] = append(res[j], x)
		}
	}
	base := benchkit.Summarize(res[0])
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Printf("%.0f MB session, %d runs each, alternating; medians of wall and CPU, worst peak RSS\n\n", float64(setup.Bytes)/1e6, runs)
	fmt.Fprintln(w, "command\twall\tCPU\tpeak RSS\twall ÷ estimate\tCPU ÷ estimate\tRSS ÷ estimate\t")
	for j, s := range sides {
		m := benchkit.Summarize(res[j])
		fmt.Fprintf(w, "%s\t%s\t%s\t%d MB\t%.2f\t%.2f\t%.2f\t\n", s.name, m.Wall.Round(time.Millisecond), m.CPU.Round(time.Millisecond), m.RSSKB/1024,
			m.Wall.Seconds()/base.Wall.Seconds(), m.CPU.Seconds()/base.CPU.Seconds(), float64(m.RSSKB)/float64(base.RSSKB))
	}
	return w.Flush()
}

func measure(bin string, args []string) (sample, error) {
	s, err := benchkit.Run(exec.Command(bin, args...))
	if err != nil {
		return sample{}, fmt.Errorf("%v: %w", args, err)
	}
	return s, nil
}
