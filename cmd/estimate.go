package cmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/human"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// EstimateOptions are the inputs of `ctxtool estimate`.
type EstimateOptions struct {
	IO    *IOStreams
	Files []string
	// Size is --tokenizer and the window lookup (--model, --context-window,
	// models.<name>.contextWindow, the contextTokens cap), as every
	// command that measures a context resolves them.
	Size       estimate.Options
	PerMessage bool
	FailOver   string
	// Baseline is an earlier `estimate --json` output; MaxGrowth the growth
	// over it that fails (exit 3).
	Baseline  string
	MaxGrowth string
	JSON      bool
	// Gauge renders the one-line context gauge ("" below its threshold).
	Gauge func(tokens, window int) string
}

func newEstimateCmd(f *Factory, runF func(*EstimateOptions) error) *cobra.Command {
	return command(f, &EstimateOptions{IO: f.IO}, runF, func(_ context.Context, o *EstimateOptions) error { return runEstimate(o) }, &cobra.Command{
		Use:   "estimate [FILE|DIR]...",
		Short: "Measure how full the active context of each session is",
		Long: `Estimate the tokens of the active context of each session: what the next
model request would carry, rebuilt exactly as pi does. A directory is read
for every session in it; with no path, every agent's sessions under your
home directory are read (pi, OpenClaw, Claude Code, Codex).

Tokenizers:
  heuristic   pi's own chars/4 rule, to the token
  usage       pi's usage-anchored estimate (last provider usage + chars/4 after it)
  calibrated  learnt from the session's own usage records (per content class)
  o200k       exact tiktoken o200k_base count of the content (offline)
  cl100k      exact tiktoken cl100k_base count of the content (offline)
  auto        calibrated where the session has usage records, else o200k

usage, calibrated and auto trust only fresh usage records: a record that is
pinned (Ollama's num_ctx), flat while the context grows, zero (OpenClaw's
delivery-mirror replies), implausible or stale after a compaction is not an
anchor; JSON usageRejected says which and why. compact, roll and checkpoint
measure the same way and report the same size.`,
		Example: `  ctxtool estimate
  ctxtool estimate session.jsonl
  ctxtool estimate --tokenizer heuristic --json ~/.pi/agent/sessions/*/*.jsonl
  ctxtool estimate --fail-over 80% session.jsonl   # exit 3 above 80% of the window`,
		Args: cobra.ArbitraryArgs,
	})
}

func (o *EstimateOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	configFlags(cmd, "estimate.tokenizer", "model", "contextWindow")
	fl.BoolVar(&o.PerMessage, "per-message", false, "add every context message (entryId, line, role, tokens)")
	fl.StringVar(&o.FailOver, "fail-over", "", "exit 3 if tokens exceed N, or P% of the window (CI gate)")
	fl.StringVar(&o.Baseline, "baseline", "", "compare with an earlier `estimate --json` output (adds baselineTokens and growth)")
	fl.StringVar(&o.MaxGrowth, "max-growth", "", "with --baseline: exit 3 if a session's context grew more than this (10% or 0.1)")
}

func (o *EstimateOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Files = args
	o.JSON = f.JSON
	o.Size = f.Measurer()
	if o.Gauge == nil {
		o.Gauge = contextGauge
	}
	return nil
}

// EstimateReport is the JSON object printed per file.
type EstimateReport struct {
	estimate.FileReport
	Error string `json:"error,omitempty"`
	// FailOver says, with --fail-over, whether this file crossed it.
	FailOver *bool `json:"failOver,omitempty"`
	// BaselineTokens and Growth compare with --baseline (growth 0.1 = 10%).
	BaselineTokens int      `json:"baselineTokens,omitempty"`
	Growth         *float64 `json:"growth,omitempty"`
}

// limitHeap sets the soft heap limit for reading one session (see
// estimate.HeapLimit), unless the user set GOMEMLIMIT, and under it the
// collector's GOGC (estimate.GCPercent), unless the user set GOGC.
func limitHeap(file string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var size int64 = -1
	if st, err := os.Stat(file); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	debug.SetMemoryLimit(estimate.HeapLimit(max(size, 0)))
	gc := 100 // a pipe or a device: its size is unknown
	if size >= 0 {
		gc = estimate.GCPercent(size)
	}
	setGCPercent(gc) // not restored: the next session read sets its own
}

// setGCPercent sets the collector's GOGC to p for a command's run, unless
// the user set GOGC, and returns what restores the previous setting.
func setGCPercent(p int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(p)
	return func() { debug.SetGCPercent(old) }
}

// limitMemoryFor sets a soft memory limit for reading the file at path:
// memoryBase plus twice its size. A session's live heap is well under its
// size (estimate peaks at 0.6× a 1 GB session), so the limit binds only on
// files made of a few huge lines, where it makes the collector return each
// line's copies before the next one is read instead of letting the heap
// grow to twice what is live (compact on a 210 MB tool-result line: 672 MB
// peak RSS without it, 460 MB with it, and faster). GOMEMLIMIT wins.
func limitMemoryFor(path string) (restore func()) {
	st, err := os.Stat(path)
	if os.Getenv("GOMEMLIMIT") != "" || err != nil || !st.Mode().IsRegular() {
		return func() {}
	}
	old := debug.SetMemoryLimit(memoryBase + 2*st.Size())
	return func() { debug.SetMemoryLimit(old) }
}

// memoryBase is a command's own working set beside the session it reads
// (tokenizer tables, SQLite caches).
const memoryBase = 128 << 20

func runEstimate(opts *EstimateOptions) error {
	if !estimate.ValidMethod(opts.Size.Method) {
		return exitcode.Newf(exitcode.Usage, "--tokenizer %q: use one of %s", opts.Size.Method, strings.Join(estimate.Methods(), ", "))
	}
	gates, err := opts.gates()
	if err != nil {
		return err
	}
	if opts.Files, err = sessionFiles(opts.IO.ErrOut, opts.Files, true, false); err != nil {
		return err
	}
	var reports, crossed []*EstimateReport
	var exit batchExit
	failed, grew := 0, false
	prog := opts.IO.NewProgress("estimating", "files", len(opts.Files))
	defer prog.Clear()
	for i, file := range opts.Files {
		r, err := estimateFile(opts, file)
		if err != nil || len(r.MalformedLines) > 0 || len(r.Warnings) > 0 {
			prog.Clear()
		}
		if err != nil {
			failed++
			exit.fail(opts.IO.ErrOut, err)
			r = &EstimateReport{FileReport: estimate.FileReport{File: file}, Error: err.Error()}
		} else {
			warnMalformed(opts.IO.ErrOut, file, r.MalformedLines, "counts without it")
			warnFile(opts.IO.ErrOut, file, r.Warnings)
			over, overGrowth := opts.applyGates(gates, r)
			if over {
				crossed = append(crossed, r)
			}
			grew = grew || overGrowth
		}
		if opts.JSON {
			if err := writeEstimateJSON(opts.IO.Out, r); err != nil {
				return err
			}
		}
		reports = append(reports, r)
		prog.Update(i+1, "")
	}
	prog.Clear()
	if !opts.JSON {
		printEstimateTable(opts, reports)
	}
	// A crossed gate is what CI asked about: exit 3 wins over files that
	// could not be read (each reported above, and counted here).
	if len(crossed) > 0 {
		printCrossed(opts, crossed, failed)
		return exitcode.Silent(exitcode.Threshold)
	}
	if grew {
		return exitcode.Silent(exitcode.Threshold)
	}
	return exit.err()
}

// estimateGates are what each report is checked against: --fail-over, and
// --baseline with --max-growth.
type estimateGates struct {
	limit     failLimit
	maxGrowth float64
	base      *estimate.Baseline // nil: no --baseline
}

// gates parses the gate flags and loads the baseline.
func (o *EstimateOptions) gates() (estimateGates, error) {
	var g estimateGates
	var err error
	if g.limit, err = parseFailOver(o.FailOver); err != nil {
		return g, exitcode.New(exitcode.Usage, err)
	}
	if g.maxGrowth, err = estimate.ParseGrowth(o.MaxGrowth); err != nil {
		return g, exitcode.New(exitcode.Usage, err)
	}
	if o.Baseline != "" {
		if g.base, err = estimate.LoadBaseline(o.Baseline); err != nil {
			return g, exitcode.New(exitcode.Usage, err)
		}
	} else if g.maxGrowth > 0 {
		return g, exitcode.Newf(exitcode.Usage, "--max-growth needs --baseline FILE (an earlier `estimate --json` output)")
	}
	return g, nil
}

// applyGates records in r how it compares with the gates, warning on stderr
// about a file the baseline lacks and a growth over --max-growth. over says
// r crossed --fail-over, grew that it grew over --max-growth.
func (o *EstimateOptions) applyGates(g estimateGates, r *EstimateReport) (over, grew bool) {
	if g.limit.set() {
		over = g.limit.crossed(r.Tokens, r.ContextWindow)
		r.FailOver = &over
	}
	if g.base == nil {
		return over, false
	}
	growth := g.base.Check(r.File, r.Tokens, g.maxGrowth)
	if !growth.Known {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s: not in the baseline %s; growth not checked\n", r.File, o.Baseline)
	} else {
		r.BaselineTokens, r.Growth = growth.BaselineTokens, &growth.Share
	}
	if growth.Over {
		fmt.Fprintf(o.IO.ErrOut, "ctxtool: %s: the context grew %.1f%% since the baseline (%d → %d tokens), over --max-growth %s\n",
			displayPath(r.File), growth.Share*100, growth.BaselineTokens, r.Tokens, o.MaxGrowth)
	}
	return over, growth.Over
}

// writeEstimateJSON writes r as a JSON line; a file that failed is its
// name and error only.
func writeEstimateJSON(w io.Writer, r *EstimateReport) error {
	var v any = r
	if r.Error != "" {
		v = struct {
			File  string `json:"file"`
			Error string `json:"error"`
		}{r.File, r.Error}
	}
	return writeJSONLine(w, v)
}

// printCrossed says on stderr which files crossed --fail-over, and how many
// could not be read.
func printCrossed(opts *EstimateOptions, crossed []*EstimateReport, failed int) {
	for _, r := range crossed {
		fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %s: %s tokens (%s of %s) crosses --fail-over %s\n",
			displayPath(r.File), humanInt(r.Tokens), human.Percent(r.Utilization), humanInt(r.ContextWindow), opts.FailOver)
	}
	msg := fmt.Sprintf("ctxtool: --fail-over %s crossed by %d of %d files", opts.FailOver, len(crossed), len(opts.Files))
	if failed > 0 {
		msg += fmt.Sprintf("; %d could not be read (see above)", failed)
	}
	fmt.Fprintln(opts.IO.ErrOut, msg)
}

func estimateFile(opts *EstimateOptions, file string) (*EstimateReport, error) {
	if err := checkInput(file); err != nil {
		return nil, err
	}
	limitHeap(file)
	fr, err := estimate.MeasureFile(file, opts.Size, opts.PerMessage)
	if err != nil {
		return nil, err
	}
	if w := windowWarning(fr.ContextWindow); w != "" {
		fr.Warnings = append(fr.Warnings, w)
	}
	return &EstimateReport{FileReport: *fr}, nil
}

type failLimit struct {
	tokens  int
	percent float64
}

func parseFailOver(s string) (failLimit, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return failLimit{}, nil
	}
	if strings.HasSuffix(s, "%") {
		p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || p <= 0 {
			return failLimit{}, fmt.Errorf("--fail-over %q: give a token count (150000) or a percentage of the window (80%%)", s)
		}
		return failLimit{percent: p}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return failLimit{}, fmt.Errorf("--fail-over %q: give a token count (150000) or a percentage of the window (80%%)", s)
	}
	// "--fail-over 80" almost always means 80%: a bare number is a token
	// count, so small ones are refused rather than silently gating at 80
	// tokens.
	if n < minFailOverTokens {
		return failLimit{}, fmt.Errorf("--fail-over %s is ambiguous: write %s%% for a share of the window, or a token count of at least %d", s, s, minFailOverTokens)
	}
	return failLimit{tokens: n}, nil
}

// minFailOverTokens is the smallest bare --fail-over token count.
const minFailOverTokens = 1000

func (l failLimit) set() bool { return l.tokens > 0 || l.percent > 0 }

func (l failLimit) crossed(tokens, window int) bool {
	if l.tokens > 0 {
		return tokens > l.tokens
	}
	if l.percent > 0 && window > 0 {
		return float64(tokens)*100/float64(window) > l.percent
	}
	return false
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := transcript.MarshalJS(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func printEstimateTable(opts *EstimateOptions, reports []*EstimateReport) {
	out := opts.IO.Out
	t := newTable(out).term(opts.IO)
	t.row("FILE", "MESSAGES", "TOKENS", "WINDOW", "USED", "METHOD", "MODEL")
	for _, r := range reports {
		if r.Error != "" {
			t.row(displayPath(r.File), "-", "-", "-", "-", "error", "")
			continue
		}
		t.row(displayPath(r.File), strconv.Itoa(r.ContextMessages), humanInt(r.Tokens), humanInt(r.ContextWindow),
			human.Percent(r.Utilization), r.Method, r.Model)
	}
	t.flush()
	if len(reports) == 1 && reports[0].Error == "" {
		r := reports[0]
		fmt.Fprintln(out)
		bt := newTable(out)
		bt.row("ROLE", "TOKENS")
		for _, role := range slices.Sorted(maps.Keys(r.ByRole)) {
			bt.row(role, humanInt(r.ByRole[role]))
		}
		if r.UsageTokens > 0 {
			bt.row("(usage anchor)", humanInt(r.UsageTokens))
		}
		if r.Overhead > 0 {
			bt.row("(system+tools)", humanInt(r.Overhead))
		}
		bt.flush()
	}
	for _, r := range reports {
		if r.Messages != nil {
			fmt.Fprintf(out, "\n%s\n", displayPath(r.File))
			mt := newTable(out)
			mt.row("LINE", "ENTRY", "ROLE", "TOKENS")
			for _, m := range r.Messages {
				mt.row(strconv.Itoa(m.Line), m.EntryID, m.Role, strconv.Itoa(m.Tokens))
			}
			mt.flush()
		}
		if opts.Gauge != nil && r.Error == "" {
			// Prefixed with its file: after a table of several files an
			// unnamed gauge line could belong to any of them.
			if g := opts.Gauge(r.Tokens, r.ContextWindow); g != "" {
				fmt.Fprintf(out, "%s: %s\n", displayPath(r.File), g)
			}
		}
	}
}
