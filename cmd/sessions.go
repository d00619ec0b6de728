package cmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/human"
	"github.com/ctxtool/ctxtool/pkg/prune"
	"github.com/ctxtool/ctxtool/pkg/sessionlist"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// SessionsOptions are the inputs of `ctxtool sessions`.
type SessionsOptions struct {
	IO    *IOStreams
	Paths []string
	JSON  bool
	// Sort is --sort (time, size, tokens); Reverse lists the other end first.
	Sort    string
	Reverse bool
	// Agent, Project and Since are the filters as given; Filter is them resolved.
	Agent, Project, Since string
	Filter                sessionlist.Filter
	Size                  estimate.Options
	// Now is the clock of --since ages and the "ago" column (tests fix it).
	Now func() time.Time
}

func newSessionsCmd(f *Factory, runF func(*SessionsOptions) error) *cobra.Command {
	return command(f, &SessionsOptions{IO: f.IO}, runF, func(_ context.Context, o *SessionsOptions) error { return runSessions(o) }, &cobra.Command{
		Use:   "sessions [DIR|FILE]...",
		Short: "List your agents' sessions: project, last activity, size, how full",
		Long: `List the sessions of every agent under your home directory (pi, OpenClaw,
Claude Code, Codex), or of the files and directories named: agent,
project, session, when it was last written, its size, how full its context
is, and how many times it was compacted.

Newest first; --sort size or --sort tokens put the largest or the fullest
first, --reverse the other end. --agent, --project (part of the project's
name) and --since (a date, or an age: 7d, 36h) narrow the list.

The context gauge uses pi's chars/4 rule (--tokenizer heuristic) so a home
of hundreds of sessions is listed quickly; 'ctxtool estimate FILE' measures
one session exactly.`,
		Example: `  ctxtool sessions
  ctxtool sessions --sort tokens --agent claude-code
  ctxtool sessions --since 7d --json`,
		Args: cobra.ArbitraryArgs,
	})
}

func (o *SessionsOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	configFlags(cmd, "model", "contextWindow")
	fl.StringVar(&o.Sort, "sort", "time", "order: time (newest first), size or tokens (largest first)")
	fl.BoolVarP(&o.Reverse, "reverse", "r", false, "reverse the order (oldest, smallest or emptiest first)")
	fl.StringVar(&o.Agent, "agent", "", "only this agent's sessions (pi, openclaw, claude-code, codex)")
	fl.StringVar(&o.Project, "project", "", "only sessions whose project contains this text")
	fl.StringVar(&o.Since, "since", "", "only sessions written since a date (2026-03-02) or an age (7d, 36h)")
	fl.StringVar(&o.Size.Method, "tokenizer", estimate.Heuristic, "how to count the context: "+strings.Join(estimate.Methods(), ", "))
}

func (o *SessionsOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Paths = args
	o.JSON = f.JSON
	method := o.Size.Method
	o.Size = f.Measurer()
	o.Size.Method = method
	o.Now = f.Clock()
	since, err := parseWhen("--since", o.Since, o.Now())
	if err != nil {
		return err
	}
	o.Filter = sessionlist.Filter{Agent: o.Agent, Project: o.Project, Since: since}
	return nil
}

func runSessions(o *SessionsOptions) error {
	if !estimate.ValidMethod(o.Size.Method) {
		return exitcode.Newf(exitcode.Usage, "--tokenizer %q: use one of %s", o.Size.Method, strings.Join(estimate.Methods(), ", "))
	}
	if err := sessionlist.Sort(nil, o.Sort, false); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	discovered := len(o.Paths) == 0
	roots, err := readPaths(o.IO.ErrOut, o.Paths)
	if err != nil {
		return err
	}
	files, err := walkInputs(o.IO.ErrOut, roots, walk.Options{}, true)
	if err != nil {
		return err
	}
	if discovered {
		noticeFound(o.IO.ErrOut, files)
	}
	var list []sessionlist.Session
	prog := o.IO.NewProgress("measuring", "sessions", len(files))
	for i, f := range files {
		s := sessionlist.Describe(f)
		if o.Filter.Keep(s) {
			sessionlist.Measure(&s, o.Size)
			list = append(list, s)
		}
		prog.Update(i+1, "")
	}
	prog.Clear()
	_ = sessionlist.Sort(list, o.Sort, o.Reverse)
	if o.JSON {
		for _, s := range list {
			if err := writeJSONLine(o.IO.Out, s); err != nil {
				return err
			}
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(o.IO.ErrOut, "no sessions match (of %d found)\n", len(files))
		return nil
	}
	t := newTable(o.IO.Out).term(o.IO)
	t.row("AGENT", "PROJECT", "SESSION", "ACTIVE", "SIZE", "TOKENS", "USED", "COMPACTED")
	now := o.Now()
	for _, s := range list {
		tokens, used := humanInt(s.Tokens), human.Percent(s.Utilization)
		if s.Error != "" {
			tokens, used = "-", "-"
		}
		t.row(s.Agent, displayPath(s.Project), s.Session, ago(now, s.LastActivity), prune.FormatBytes(s.Size), tokens, used, strconv.Itoa(s.Compactions))
	}
	t.flush()
	for _, s := range list {
		if s.Error != "" {
			fmt.Fprintf(o.IO.ErrOut, "warning: %s: %s\n", displayPath(s.File), s.Error)
		}
	}
	return nil
}

// ago says how long before now t was, the way ls users read it: minutes,
// hours or days ago, and the date beyond a month.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}
