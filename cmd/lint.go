package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/lint"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// LintOptions are the inputs of `ctxtool lint`.
type LintOptions struct {
	IO    *IOStreams
	Paths []string
	// AllowEmpty: finding no session file in Paths is not an error.
	AllowEmpty bool
	// Format: text, json or sarif.
	Format string
	// FailOn: error, warning, note or never.
	FailOn   string
	Baseline string
	Lint     lint.Options

	Fix    bool
	DryRun bool
	Wait   time.Duration
	Idle   time.Duration

	ListRules bool
	Ctx       context.Context
}

func newLintCmd(f *Factory, runF func(*LintOptions) error) *cobra.Command {
	return command(f, &LintOptions{IO: f.IO}, runF, func(_ context.Context, o *LintOptions) error { return runLint(o) }, &cobra.Command{
		Use:   "lint [FILE|DIR]...",
		Short: "Check transcripts for defects that brick sessions or leak data (the CI gate)",
		Long: `Check session transcripts for the defects that brick agent sessions or leak
data: malformed, torn and glued lines; a missing or invalid header; duplicate
ids, broken parents, cycles and unreachable entries; tool calls and results
that lose their partner on the path pi sends; compactions that keep nothing,
cut a tool pair, reclaim nothing or have an empty summary; a context over a
budget; oversized lines and inline images; and credentials (masked in the
output). 'ctxtool lint --list-rules' prints every rule with its severity.

Every finding names the file, the line (and column) and a remedy. Output is a
table grouped by file, --json (one object per finding) or --format sarif
(SARIF 2.1.0, for GitHub code scanning). Exit 3 when a finding at or above
--fail-on is found; with --baseline old.json only findings that are not in
the baseline count (write it with --json or --format sarif).

lint never writes, except --fix: the repairs that are safe and append-only
(end a torn last line with a newline; answer the last assistant's unanswered
tool calls with the synthetic error results pi sends in their place), written
under the session lock. Everything else is reported only.

Directories are walked for transcripts (and .reset/.deleted archives).`,
		Example: `  ctxtool lint session.jsonl
  ctxtool lint --format sarif ~/.openclaw/agents > lint.sarif
  ctxtool lint --json transcripts/ > baseline.json
  ctxtool lint --baseline baseline.json transcripts/   # fail only on new findings
  ctxtool lint --max-utilization 0.8 --fail-on warning session.jsonl
  ctxtool lint --fix --dry-run session.jsonl`,
	})
}

func (o *LintOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	allowEmptyFlag(cmd, &o.AllowEmpty)
	fl.StringVar(&o.Format, "format", "text", "output: text, json (one object per finding) or sarif (SARIF 2.1.0)")
	enumCompletion(cmd, "format", []string{"text", "json", "sarif"})
	configFlags(cmd, "lint.failOn", "lint.maxTokens", "lint.maxLineBytes", "lint.maxImageBytes", "lint.fixIdle",
		"estimate.tokenizer", "model", "contextWindow")
	fl.StringSlice("enable", nil, "turn rules on (ids from --list-rules, comma-separated or repeated; \"all\"); adds to lint.enable")
	fl.StringSlice("disable", nil, "turn rules off; adds to lint.disable")
	fl.StringVar(&o.Baseline, "baseline", "", "fail only on findings not in this earlier lint output (--json or sarif)")
	fl.String("max-utilization", "", "context-over-budget: at most this share of the window, 0.8 or 80% (config lint.maxUtilization)")
	fl.BoolVar(&o.Fix, "fix", false, "apply the safe append-only repairs (under the session lock), then report what is left")
	fl.BoolVar(&o.DryRun, "dry-run", false, "with --fix: say what would be appended, write nothing")
	fl.DurationVar(&o.Wait, "wait", 0, "with --fix: wait this long for the session lock")
	fl.BoolVar(&o.ListRules, "list-rules", false, "print the rules (id, severity, fixable, what it finds) and exit")
}

func (o *LintOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Paths = args
	o.Ctx = c.Context()
	if f.JSON && !c.Flags().Changed("format") {
		o.Format = "json"
	}
	return lintConfig(o, f, cfg, c)
}

// lintConfig resolves flags and the lint.* config keys into opts.
func lintConfig(opts *LintOptions, f *Factory, cfg *config.Config, c *cobra.Command) error {
	fl := c.Flags()
	switch opts.Format {
	case "text", "json", "sarif":
	default:
		return fmt.Errorf("--format %q: use text, json or sarif", opts.Format)
	}
	opts.FailOn = cfg.String(fl, "lint.failOn")
	if _, err := failThreshold(opts.FailOn); err != nil {
		return err
	}
	rs := lint.DefaultRuleSet()
	if err := lint.ApplySeverities(rs, cfg.String(nil, "lint.severity")); err != nil {
		return fmt.Errorf("lint.severity: %w", err)
	}
	// Config first, flags after: --enable X wins over lint.disable: X.
	if err := rs.Disable(cfg.String(nil, "lint.disable")); err != nil {
		return fmt.Errorf("lint.disable: %w", err)
	}
	if err := rs.Enable(cfg.String(nil, "lint.enable")); err != nil {
		return fmt.Errorf("lint.enable: %w", err)
	}
	disable, _ := fl.GetStringSlice("disable")
	if err := rs.Disable(disable...); err != nil {
		return fmt.Errorf("--disable: %w", err)
	}
	enable, _ := fl.GetStringSlice("enable")
	if err := rs.Enable(enable...); err != nil {
		return fmt.Errorf("--enable: %w", err)
	}
	o := &opts.Lint
	o.Rules = rs
	o.MaxLineBytes = cfg.Int(fl, "lint.maxLineBytes")
	o.MaxImageBytes = cfg.Int(fl, "lint.maxImageBytes")
	o.MaxTokens = cfg.Int(fl, "lint.maxTokens")
	o.MaxUtilization = cfg.Float(nil, "lint.maxUtilization")
	if fl.Changed("max-utilization") {
		s, _ := fl.GetString("max-utilization")
		u, err := parseUtilization(s)
		if err != nil {
			return err
		}
		o.MaxUtilization = u
	}
	o.Size = f.Measurer()
	opts.Idle = cfg.Duration(fl, "lint.fixIdle")
	if opts.DryRun && !opts.Fix {
		return fmt.Errorf("--dry-run goes with --fix (lint alone never writes)")
	}
	return nil
}

// parseUtilization reads "0.8" or "80%".
func parseUtilization(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || v <= 0 || v > 10 {
		return 0, fmt.Errorf("--max-utilization %q: give a share of the window (0.8) or a percentage (80%%)", s)
	}
	return v, nil
}

// failThreshold maps --fail-on to the lowest failing severity (Off: never).
func failThreshold(s string) (lint.Severity, error) {
	if strings.EqualFold(strings.TrimSpace(s), "never") {
		return lint.Off, nil
	}
	sev, err := lint.ParseSeverity(s)
	if err != nil || sev == lint.Off {
		return lint.Off, fmt.Errorf("--fail-on %q: use error, warning, note or never", s)
	}
	return sev, nil
}

func runLint(opts *LintOptions) error {
	if opts.ListRules {
		return printRules(opts)
	}
	if opts.Ctx == nil {
		opts.Ctx = context.Background()
	}
	threshold, err := failThreshold(opts.FailOn)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	if opts.Lint.Rules == nil {
		opts.Lint.Rules = lint.DefaultRuleSet()
	}
	var base *lint.Baseline
	if opts.Baseline != "" {
		if base, err = lint.LoadBaseline(opts.Baseline); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
	}
	if opts.Fix && slices.Contains(opts.Paths, "-") {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--fix cannot repair standard input: give the session file"))
	}
	discovered := len(opts.Paths) == 0
	if opts.Paths, err = readPaths(opts.IO.ErrOut, opts.Paths); err != nil {
		return err
	}
	skipped := &walk.Skipped{}
	files, err := walk.Walk(opts.Paths, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}, Stdin: true, Skipped: skipped})
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	noteSkipped(opts.IO.ErrOut, len(files), skipped)
	if discovered {
		files = withoutStoreSessions(opts.IO.ErrOut, files)
		noticeFound(opts.IO.ErrOut, files)
	}
	if err := requireFiles(opts.Paths, files, opts.AllowEmpty); err != nil {
		return err
	}
	res := lintFiles(opts, files)
	if base != nil {
		base.Mark(res.reports)
	}
	if err := printLint(opts, res.reports, res.fileErrs, res.fixes); err != nil {
		return err
	}
	if failing := lint.Failing(res.reports, threshold); failing > 0 {
		what := "findings"
		if base != nil {
			what = "new findings (not in " + opts.Baseline + ")"
		}
		fmt.Fprintf(opts.IO.ErrOut, "ctxtool: lint: %d %s at or above %s (--fail-on)\n", failing, what, threshold)
		return exitcode.Silent(exitcode.Threshold)
	}
	if len(res.fileErrs) > 0 {
		return exitcode.Silent(exitcode.Runtime)
	}
	return nil
}

// lintResults are what linting (and --fix) gave for the files.
type lintResults struct {
	reports  []*lint.Report
	fileErrs []lint.FileError
	fixes    []*lint.FixResult
}

// lintFiles fixes (with --fix) and lints each file, saying on stderr which
// could not be; a file locked for the fix is not linted.
func lintFiles(opts *LintOptions, files []walk.File) lintResults {
	var res lintResults
	prog := opts.IO.NewProgress("linting", "files", len(files))
	defer prog.Clear()
	for i, file := range files {
		if opts.Fix {
			fr, err := lint.Fix(opts.Ctx, file.Path, lint.FixOptions{Wait: opts.Wait, Idle: opts.Idle, DryRun: opts.DryRun})
			if err != nil {
				prog.Clear()
				fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %v\n", err)
				res.fileErrs = append(res.fileErrs, lint.FileError{File: file.Path, Err: err.Error()})
				if exitcode.Code(err) == exitcode.Locked {
					continue
				}
			} else {
				res.fixes = append(res.fixes, fr)
			}
		}
		limitHeap(file.Path) // lint keeps estimate's entry metadata
		r, err := lint.File(file.Path, &opts.Lint)
		if err != nil {
			prog.Clear()
			fmt.Fprintf(opts.IO.ErrOut, "ctxtool: %v\n", err)
			res.fileErrs = append(res.fileErrs, lint.FileError{File: file.Path, Err: err.Error()})
			continue
		}
		res.reports = append(res.reports, r)
		prog.Update(i+1, "")
	}
	return res
}

func printLint(opts *LintOptions, reports []*lint.Report, fileErrs []lint.FileError, fixes []*lint.FixResult) error {
	switch opts.Format {
	case "json":
		for _, fx := range fixes {
			if len(fx.Repairs) > 0 || fx.Skipped != "" {
				if err := writeJSONLine(opts.IO.Out, struct {
					Fix *lint.FixResult `json:"fix"`
				}{fx}); err != nil {
					return err
				}
			}
		}
		for _, fe := range fileErrs {
			if err := writeJSONLine(opts.IO.Out, struct {
				File  string `json:"file"`
				Error string `json:"error"`
			}{fe.File, fe.Err}); err != nil {
				return err
			}
		}
		for _, r := range reports {
			for _, f := range r.Findings {
				if err := writeJSONLine(opts.IO.Out, f); err != nil {
					return err
				}
			}
		}
		return nil
	case "sarif":
		printFixes(opts, fixes, opts.IO.ErrOut)
		return writeJSONLine(opts.IO.Out, lint.SARIF(reports, fileErrs, opts.Lint.Rules, Version))
	}
	printFixes(opts, fixes, opts.IO.Out)
	printLintTable(opts, reports)
	return nil
}

func printFixes(opts *LintOptions, fixes []*lint.FixResult, w interface{ Write([]byte) (int, error) }) {
	verb := "fixed"
	if opts.DryRun {
		verb = "would fix"
	}
	for _, fx := range fixes {
		if fx.Skipped != "" {
			fmt.Fprintf(w, "%s: not fixed: %s\n", fx.File, fx.Skipped)
		}
		for _, r := range fx.Repairs {
			fmt.Fprintf(w, "%s:%d: %s %s: %s\n", fx.File, r.Line, verb, r.Rule, r.Message)
		}
	}
}

func printLintTable(opts *LintOptions, reports []*lint.Report) {
	out := opts.IO.Out
	counts := map[lint.Severity]int{}
	fixable, clean, newCount := 0, 0, 0
	for _, r := range reports {
		if len(r.Findings) == 0 {
			clean++
			continue
		}
		fmt.Fprintf(out, "%s\n", r.File)
		t := newTable(out)
		t.row("  LINE", "SEVERITY", "RULE", "MESSAGE")
		remedies := map[string]string{}
		var order []string
		for _, f := range r.Findings {
			counts[f.Severity]++
			if f.Fixable {
				fixable++
			}
			loc := strconv.Itoa(f.Line)
			if f.Column > 0 {
				loc += ":" + strconv.Itoa(f.Column)
			}
			msg := f.Message
			if f.BaselineState == "new" {
				newCount++
				msg = "(new) " + msg
			}
			t.row("  "+loc, f.Severity.String(), f.Rule, msg)
			if _, ok := remedies[f.Rule]; !ok {
				remedies[f.Rule] = f.Remedy
				order = append(order, f.Rule)
			}
		}
		t.flush()
		for _, rule := range order {
			fmt.Fprintf(out, "  → %s: %s\n", rule, remedies[rule])
		}
		fmt.Fprintln(out)
	}
	var parts []string
	for _, s := range []lint.Severity{lint.Error, lint.Warning, lint.Note} {
		parts = append(parts, plural(counts[s], s.String()))
	}
	summary := fmt.Sprintf("%s: %s", plural(len(reports), "file"), strings.Join(parts, ", "))
	if clean > 0 {
		summary += fmt.Sprintf(" (%d clean)", clean)
	}
	if opts.Baseline != "" {
		summary += fmt.Sprintf("; %d new since the baseline", newCount)
	}
	if fixable > 0 && !opts.Fix {
		summary += fmt.Sprintf("; %d fixable with --fix", fixable)
	}
	fmt.Fprintln(out, summary)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// ruleJSON is one rule in `lint --list-rules --json`.
type ruleJSON struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Fixable  bool   `json:"fixable"`
	Summary  string `json:"summary"`
	Needs    string `json:"needs,omitempty"`
}

func printRules(opts *LintOptions) error {
	rs := opts.Lint.Rules
	if rs == nil {
		rs = lint.DefaultRuleSet()
	}
	if opts.Format == "json" {
		for _, r := range lint.Rules() {
			if err := writeJSONLine(opts.IO.Out, ruleJSON{r.ID, rs.Severity(r.ID).String(), r.Fixable, r.Summary, r.Needs}); err != nil {
				return err
			}
		}
		return nil
	}
	t := newTable(opts.IO.Out).term(opts.IO)
	t.row("RULE", "SEVERITY", "FIX", "FINDS")
	for _, r := range lint.Rules() {
		fix := ""
		if r.Fixable {
			fix = "--fix"
		}
		sev := rs.Severity(r.ID).String()
		summary := r.Summary
		if r.Needs != "" {
			summary += " (needs " + r.Needs + ")"
		}
		t.row(r.ID, sev, fix, summary)
	}
	t.flush()
	return nil
}

// withoutStoreSessions drops the sessions of OpenClaw's SQLite stores from
// what a bare lint found, saying how many: lint checks JSONL files line by
// line, and a store session has no file of its own to check.
func withoutStoreSessions(errOut io.Writer, files []walk.File) []walk.File {
	kept := files[:0:0]
	for _, f := range files {
		if _, _, ok := formats.SplitStorePath(f.Path); !ok {
			kept = append(kept, f)
		}
	}
	if n := len(files) - len(kept); n > 0 {
		fmt.Fprintf(errOut, "note: %d sessions of OpenClaw's SQLite stores not linted: lint checks JSONL files\n", n)
	}
	return kept
}
