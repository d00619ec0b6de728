// Command estimate benchmarks `ctxtool estimate` against pi's own loader and
// estimator on the same generated session, in one run, and prints a table:
// wall time, peak RSS and the ratio. Run from the repo root:
//
//	go run ./bench/estimate            # ~100 MB session
//	go run ./bench/estimate -size 20MB -runs 3
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/ctxtool/ctxtool/internal/benchkit"
)

func main() {
	fl := benchkit.Define("100MB", "the median is reported")
	flag.Parse()
	if err := run(fl); err != nil {
		fmt.Fprintln(os.Stderr, "bench/estimate:", err)
		os.Exit(1)
	}
}

type sample struct {
	benchkit.Sample // Wall: the time the command reports for its work, if it does
	tokens, msgs    int
}

func run(fl *benchkit.Flags) error {
	setup, err := fl.Prepare()
	if err != nil {
		return err
	}
	defer os.RemoveAll(setup.Dir)
	bin, file, runs := setup.Bin, setup.Session, fl.Runs
	// Warm the page cache so both sides read from memory.
	os.ReadFile(file)

	var ours, theirs []sample
	for i := 0; i < runs; i++ {
		s, err := measure(func(out *bytes.Buffer) *exec.Cmd {
			return exec.Command(bin, "estimate", "--tokenizer", "heuristic", "--json", file)
		}, func(out []byte) (int, int, time.Duration, error) {
			var r struct{ Tokens, ContextMessages int }
			err := json.Unmarshal(out, &r)
			return r.Tokens, r.ContextMessages, 0, err
		})
		if err != nil {
			return err
		}
		ours = append(ours, s)
		p, err := measure(func(out *bytes.Buffer) *exec.Cmd {
			return exec.Command("node", "bench/estimate/pi-estimate.mjs", file)
		}, func(out []byte) (int, int, time.Duration, error) {
			var r struct {
				Tokens, Messages int
				Ms               float64
			}
			err := json.Unmarshal(out, &r)
			return r.Tokens, r.Messages, time.Duration(r.Ms * float64(time.Millisecond)), err
		})
		if err != nil {
			return err
		}
		theirs = append(theirs, p)
	}
	o, t := summarize(ours), summarize(theirs)
	if o.tokens != t.tokens || o.msgs != t.msgs {
		return fmt.Errorf("results differ: ctxtool %d tokens / %d messages, pi %d / %d", o.tokens, o.msgs, t.tokens, t.msgs)
	}
	mb := float64(setup.Bytes) / 1e6
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(os.Stdout, "estimate --tokenizer heuristic on %.0f MB (%d context messages, %d tokens; both agree), median wall and worst RSS of %d runs\n\n", mb, o.msgs, o.tokens, runs)
	fmt.Fprintln(w, "side\twall\tMB/s\tpeak RSS\t")
	fmt.Fprintf(w, "ctxtool (whole process)\t%s\t%.0f\t%d MB\t\n", o.Wall.Round(time.Millisecond), mb/o.Wall.Seconds(), o.RSSKB/1024)
	fmt.Fprintf(w, "pi loader+estimate (work only)\t%s\t%.0f\t%d MB\t\n", t.Wall.Round(time.Millisecond), mb/t.Wall.Seconds(), t.RSSKB/1024)
	w.Flush()
	fmt.Printf("\nctxtool is %.1f× faster than pi (whole ctxtool process vs pi's load+estimate alone) and uses %.1f× less memory.\n",
		t.Wall.Seconds()/o.Wall.Seconds(), float64(t.RSSKB)/float64(o.RSSKB))
	return nil
}

// measure runs a command, returning its wall time (or the time the command
// reports for its own work), peak RSS and parsed result.
func measure(mk func(*bytes.Buffer) *exec.Cmd, parse func([]byte) (int, int, time.Duration, error)) (sample, error) {
	var out, errb bytes.Buffer
	cmd := mk(&out)
	cmd.Stdout, cmd.Stderr = &out, &errb
	run, err := benchkit.Run(cmd)
	if err != nil {
		return sample{}, fmt.Errorf("%v: %w\n%s", cmd.Args, err, errb.String())
	}
	tokens, msgs, self, err := parse(bytes.TrimSpace(out.Bytes()))
	if err != nil {
		return sample{}, fmt.Errorf("%v: output %q: %w", cmd.Args, out.String(), err)
	}
	if self > 0 {
		run.Wall = self
	}
	return sample{Sample: run, tokens: tokens, msgs: msgs}, nil
}

// summarize is benchkit.Summarize of the runs, with their counts (every
// run counts the same session).
func summarize(s []sample) sample {
	runs := make([]benchkit.Sample, len(s))
	for i, x := range s {
		runs[i] = x.Sample
	}
	return sample{Sample: benchkit.Summarize(runs), tokens: s[0].tokens, msgs: s[0].msgs}
}
