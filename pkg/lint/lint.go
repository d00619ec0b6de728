package lint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Finding is one defect at one place.
type Finding struct {
	File string `json:"file"`
	// Line is 1-based; 0 when the finding is about the whole file.
	Line int `json:"line"`
	// Column is the 1-based column in UTF-16 code units (SARIF's default)
	// where the defect starts inside the line; 0 = the whole line.
	Column   int      `json:"column,omitempty"`
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Remedy   string   `json:"remedy"`
	EntryID  string   `json:"entryId,omitempty"`
	// Key identifies the defect inside the file independently of the
	// message wording (an entry id, a tool-call id, a secret's hash), so a
	// baseline still matches after the session grew.
	Key     string `json:"key"`
	Fixable bool   `json:"fixable,omitempty"`
	// BaselineState is "new" or "unchanged" when linting against a
	// baseline (SARIF's baselineState), "" otherwise.
	BaselineState string `json:"baselineState,omitempty"`
}

// Options configure a lint run.
type Options struct {
	Rules *RuleSet
	// MaxLineBytes is the oversized-line limit (0: rule finds nothing).
	MaxLineBytes int
	// MaxImageBytes is the large-inline-image limit in decoded bytes.
	MaxImageBytes int
	// Budget: context-over-budget compares the estimate with these (0: off).
	MaxTokens      int
	MaxUtilization float64
	// Size measures the context for the budget and resolves the window for
	// MaxUtilization: the same options estimate takes, so that lint
	// measures as estimate does with the same flags and config (Method ""
	// = auto).
	Size estimate.Options
}

// Default limits (config lint.maxLineBytes, lint.maxImageBytes).
const (
	DefaultMaxLineBytes  = 4 << 20
	DefaultMaxImageBytes = 1 << 20
)

// defaultOptions runs every rule with the default limits and no budget.
func defaultOptions() *Options {
	return &Options{Rules: DefaultRuleSet(), MaxLineBytes: DefaultMaxLineBytes, MaxImageBytes: DefaultMaxImageBytes}
}

// Report is the result for one file.
type Report struct {
	File     string
	Findings []Finding
	// Lines and Entries describe what was read (for summaries).
	Lines   int
	Entries int
}

// File lints one session file ("-" reads standard input). The error is for
// files that cannot be read at all; everything wrong inside a readable
// file is a finding.
func File(path string, opts *Options) (*Report, error) {
	if path == "-" {
		return stdin(opts)
	}
	onDisk := path
	if db, _, ok := formats.SplitStorePath(path); ok {
		onDisk = db // one session of an OpenClaw store
	}
	st, err := os.Stat(onDisk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory (lint walks directories itself: pass it as an argument, not a file)", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (give a session .jsonl file)", path)
	}
	// The content scan streams the file beside the transcript load.
	var scan contentResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// What the session holds, not its bytes on disk: a .jsonl.zst
		// decompressed, a store session's rows as lines (so a secret in
		// the plain file is found in its compressed or stored form too).
		f, _, err := formats.Materialize(path)
		if err == nil && f != nil {
			_, err = f.Seek(0, io.SeekStart) // the copy is written, not rewound
		}
		if err == nil && f == nil {
			f, err = os.Open(path)
		}
		if err != nil {
			scan.err = err
			return
		}
		defer f.Close()
		scan = scanContent(f)
	}()
	s, loadErr := transcript.Load(path)
	wg.Wait()
	if s != nil {
		defer s.Close()
	}
	if scan.err != nil {
		return nil, fmt.Errorf("%s: read: %w", path, scan.err)
	}
	return lint(path, s, loadErr, &scan, opts)
}

// stdin lints standard input, spooled to a temporary file so a large pipe
// costs disk, not memory.
func stdin(opts *Options) (*Report, error) {
	f, size, err := transcript.SpoolStdin()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	scan := scanContent(f)
	if scan.err != nil {
		return nil, fmt.Errorf("stdin: read: %w", scan.err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("stdin: %w", err)
	}
	s, loadErr := transcript.LoadOpen("-", f, size)
	if s != nil {
		defer s.Close()
	}
	return lint("-", s, loadErr, &scan, opts)
}

func lint(file string, s *transcript.Session, loadErr error, scan *contentResult, opts *Options) (*Report, error) {
	if opts == nil {
		opts = defaultOptions()
	}
	if opts.Rules == nil {
		opts.Rules = DefaultRuleSet()
	}
	c := &checker{file: file, s: s, opts: opts}
	var hdr *transcript.InvalidHeaderError
	switch {
	case loadErr == nil:
	case errors.As(loadErr, &hdr):
		c.invalidHeader(hdr)
	default:
		return nil, loadErr
	}
	if s != nil {
		c.run()
	}
	c.content(scan)
	sortFindings(c.findings)
	r := &Report{File: file, Findings: c.findings, Lines: scan.lines}
	if s != nil {
		r.Entries = len(s.Entries)
	}
	return r, nil
}

// checker holds one file's state while the rules run.
type checker struct {
	file     string
	s        *transcript.Session
	opts     *Options
	ctx      *transcript.Context
	onPath   []bool // by position in s.Entries
	win      *models.SessionWindow
	findings []Finding
}

// report adds a finding of rule at line with the rule's default severity.
func (c *checker) report(rule string, line int, key, format string, args ...any) *Finding {
	return c.reportAt(rule, byID[rule].Severity, line, key, format, args...)
}

// reportAt adds a finding with a severity of the finding's own (before
// configuration is applied); it returns nil when the rule is off.
func (c *checker) reportAt(rule string, sev Severity, line int, key, format string, args ...any) *Finding {
	sev = c.opts.Rules.severityFor(rule, sev)
	if sev == Off {
		return nil
	}
	r := byID[rule]
	c.findings = append(c.findings, Finding{File: c.file, Line: line, Rule: rule, Severity: sev,
		Message: fmt.Sprintf(format, args...), Remedy: r.Remedy, Key: key, Fixable: r.Fixable})
	return &c.findings[len(c.findings)-1]
}

func (c *checker) enabled(rule string) bool { return c.opts.Rules.Severity(rule) != Off }

// run executes the rules that work on the loaded session.
func (c *checker) run() {
	c.ctx = c.s.Context()
	c.markPath()
	c.lines()
	c.header()
	c.tree()
	c.tools()
	c.compactions()
	c.sizes()
	c.usage()
	c.budget()
	c.readOnlyRemedies()
}

// readOnlyRemedies keeps a read-only session's remedies to what works on
// it: --fix, compact and roll refuse Claude Code, Codex, zstd and store
// sessions, so a finding there points to `ctxtool export`, whose pi copy
// they do work on, instead of a command that would only refuse.
func (c *checker) readOnlyRemedies() {
	if !c.s.ReadOnly() {
		return
	}
	for i := range c.findings {
		f := &c.findings[i]
		if !f.Fixable && !strings.Contains(f.Remedy, "--fix") && !strings.Contains(f.Remedy, "ctxtool compact") && !strings.Contains(f.Remedy, "ctxtool roll") {
			continue
		}
		f.Fixable = false
		f.Remedy = fmt.Sprintf("a %s is read-only for ctxtool: `ctxtool export FILE -o copy.jsonl` writes a pi copy that can be compacted, rolled and repaired; the original stays as its agent wrote it", c.s.Format())
	}
}

// window is the session's model and context window, resolved the way every
// command resolves it (models.ForSession).
func (c *checker) window() models.SessionWindow {
	if c.win == nil {
		models.FromSessionsJSON(c.s)
		w := models.ForSession(c.ctx.Path, c.s.Header, c.opts.Size.Window)
		c.win = &w
	}
	return *c.win
}

// markPath records which entries are on the root→leaf path, without a map
// over all entries: the path is walked against the entries in file order.
func (c *checker) markPath() {
	entries := c.s.Entries
	c.onPath = make([]bool, len(entries))
	// A binary search by line finds each path entry's position. A foreign
	// format can put many entries on one source line (Codex's compacted
	// line replays the whole replacement history): among those, the entry
	// itself is marked.
	for _, e := range c.ctx.Path {
		for i := entryPos(entries, e.Line); i >= 0 && i < len(entries) && entries[i].Line == e.Line; i++ {
			if entries[i] == e {
				c.onPath[i] = true
				break
			}
		}
	}
}

// rootCompaction is the path's first entry when it is a compaction that
// starts the history anew — Claude Code's compact_boundary and Codex's
// compacted line translate that way — and nil otherwise. What came before
// it in the file is replaced history by design, not a defect, and the
// context before it is not on this path to be measured.
func (c *checker) rootCompaction() *transcript.Entry {
	if c.s.Foreign == nil || len(c.ctx.Path) == 0 || c.ctx.Path[0].Type() != "compaction" {
		return nil
	}
	return c.ctx.Path[0]
}

// replayed reports whether an entry was replayed by a root compaction on
// the same source line (Codex's replacement_history): a copy of history,
// whose zero usage is no provider's record.
func (c *checker) replayed(e *transcript.Entry) bool {
	r := c.rootCompaction()
	return r != nil && e != nil && e != r && e.Line == r.Line
}

// entryPos is the position of the entry on a line, -1 if none.
func entryPos(entries []*transcript.Entry, line int) int {
	lo, hi := 0, len(entries)
	for lo < hi {
		m := (lo + hi) / 2
		if entries[m].Line < line {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(entries) && entries[lo].Line == line {
		return lo
	}
	return -1
}

// entryAtLine returns the entry on a line, nil if none.
func (c *checker) entryAtLine(line int) *transcript.Entry {
	if c.s == nil {
		return nil
	}
	if i := entryPos(c.s.Entries, line); i >= 0 {
		return c.s.Entries[i]
	}
	return nil
}

// Failing counts the findings of reports at or above threshold that a
// baseline does not already know (the CI gate: --fail-on); none at Off.
func Failing(reports []*Report, threshold Severity) int {
	failing := 0
	for _, r := range reports {
		for _, f := range r.Findings {
			if threshold != Off && f.Severity >= threshold && f.BaselineState != "unchanged" {
				failing++
			}
		}
	}
	return failing
}
