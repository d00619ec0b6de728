package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/sources"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// The one rule for paths that do not exist, in every command: a usage
// error (exit 2) naming the path. Commands that walk directories (roll,
// index, checkpoint --capture) warn and go on instead while at least one
// of their paths exists, so one cron line can name ~/.openclaw/agents and
// ~/.pi/agent/sessions on a machine that has only one of them.

// errMissing is the error for a path that does not exist.
func errMissing(path string) error {
	return exitcode.Newf(exitcode.Usage, "%s: no such file or directory (check the path)", path)
}

// checkInput returns errMissing when path does not exist ("-" is stdin,
// "store.sqlite#<key>" one session of an existing OpenClaw store).
func checkInput(path string) error {
	if path == "-" {
		return nil
	}
	if _, _, ok := formats.SplitStorePath(path); ok {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return errMissing(path)
	}
	return nil
}

// walkInputs expands the paths of a batch command (walk.Walk), warning on
// errOut about each missing path; when none of them exists it is exit 2,
// and so is finding no session file at all unless allowEmpty (requireFiles).
func walkInputs(errOut io.Writer, paths []string, opts walk.Options, allowEmpty bool) ([]walk.File, error) {
	var missing []string
	opts.Missing = func(p string) { missing = append(missing, p) }
	if opts.Skipped == nil {
		opts.Skipped = &walk.Skipped{}
	}
	files, err := walk.Walk(paths, opts)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	noteSkipped(errOut, len(files), opts.Skipped)
	if len(missing) > 0 && len(missing) == len(paths) {
		return nil, errMissing(strings.Join(missing, ", "))
	}
	for _, p := range missing {
		fmt.Fprintf(errOut, "warning: %s: no such file or directory; skipped (the other paths are processed)\n", p)
	}
	return files, requireFiles(paths, files, allowEmpty)
}

// noteSkipped is the one line a walk ends with when it passed over
// anything in the directories (backups, locks, hidden folders…), so
// nothing is skipped in silence.
func noteSkipped(errOut io.Writer, found int, skipped *walk.Skipped) {
	if s := skipped.String(); s != "" {
		fmt.Fprintf(errOut, "note: %d session file(s) found; skipped in the directories: %s\n", found, s)
	}
}

// requireFiles is the rule for a batch command that found no session file
// in its paths: exit 2 unless the user said an empty input is expected. A
// gate that checked nothing must not pass: a CI step whose recorder wrote
// no transcript would otherwise go green.
func requireFiles(paths []string, files []walk.File, allowEmpty bool) error {
	if len(files) > 0 || allowEmpty {
		return nil
	}
	return exitcode.Newf(exitcode.Usage, "no session files in %s: nothing was done (check the path; pass --allow-empty where an empty input is expected)", strings.Join(paths, ", "))
}

// allowEmptyFlag declares --allow-empty, requireFiles' way out.
func allowEmptyFlag(c *cobra.Command, allow *bool) {
	c.Flags().BoolVar(allow, "allow-empty", false, "exit 0 when the paths hold no session file (default: exit 2, so a gate never passes on nothing)")
}

// batchExit is the exit of a command over several files, the same in every
// such command: a file that fails is reported as it happens and the others
// go on; the command then exits with the highest code among its files,
// with nothing more to print.
type batchExit struct{ worst int }

// fail reports the error of one file on w and keeps its exit code.
func (b *batchExit) fail(w io.Writer, err error) {
	fmt.Fprintf(w, "ctxtool: %v\n", err)
	b.worst = max(b.worst, exitcode.Code(err))
}

// err is the command's error: nil when no file failed.
func (b *batchExit) err() error {
	if b.worst == 0 {
		return nil
	}
	return exitcode.Silent(b.worst)
}

// readPaths is what a reading command reads: the paths it was given, or,
// given none, every session store of every agent under the home directory
// (pkg/sources), with one notice on errOut saying what was found, so a
// bare `ctxtool estimate` works the way ccusage does. No store at all is
// exit 2 naming where it looked.
func readPaths(errOut io.Writer, args []string) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return nil, exitcode.Newf(exitcode.Usage, "no path given and no home directory to look in: name the session files or directories")
	}
	paths := sources.Paths(sources.Find(home))
	if len(paths) == 0 {
		return nil, exitcode.Newf(exitcode.Usage, "no path given and no session store under %s (looked for %s): name the session files or directories", home, sources.Looked)
	}
	return paths, nil
}

// noticeFound is the one line a command run with no path prints on errOut:
// how many sessions of which agents it read, and how to choose others.
func noticeFound(errOut io.Writer, files []walk.File) {
	count := map[sources.Agent]int{}
	var order []sources.Agent
	for _, f := range files {
		a, _ := sources.Classify(f.Path)
		if count[a] == 0 {
			order = append(order, a)
		}
		count[a]++
	}
	parts := make([]string, 0, len(order))
	for _, a := range order {
		parts = append(parts, fmt.Sprintf("%s %d", a, count[a]))
	}
	noun := "sessions"
	if len(files) == 1 {
		noun = "session"
	}
	fmt.Fprintf(errOut, "reading %d %s found under ~ (%s); name files or directories to choose\n", len(files), noun, strings.Join(parts, ", "))
}

// sessionFiles expands the paths of a command that reads session files one
// by one (estimate, compact, budget, flush, checkpoint): a directory is
// walked for its transcripts like lint does, a file is kept as given (its
// own checks say when it is missing); with no paths at all (discover) the
// agents' stores under home are read, with a notice. A directory holding
// no session is exit 2 unless allowEmpty.
func sessionFiles(errOut io.Writer, args []string, discover, allowEmpty bool) ([]string, error) {
	if len(args) == 0 && discover {
		paths, err := readPaths(errOut, args)
		if err != nil {
			return nil, err
		}
		found, err := walk.Walk(paths, walk.Options{})
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, err)
		}
		if err := requireFiles(paths, found, allowEmpty); err != nil {
			return nil, err
		}
		noticeFound(errOut, found)
		out := make([]string, len(found))
		for i, f := range found {
			out[i] = f.Path
		}
		return out, nil
	}
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a)
			continue
		}
		found, err := walk.Walk([]string{a}, walk.Options{})
		if err != nil {
			return nil, exitcode.New(exitcode.Usage, err)
		}
		if err := requireFiles([]string{a}, found, allowEmpty); err != nil {
			return nil, err
		}
		for _, f := range found {
			out = append(out, f.Path)
		}
	}
	return out, nil
}
