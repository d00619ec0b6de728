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
	if s := opts.Skipped.String(); s != "" {
		fmt.Fprintf(errOut, "note: %d session file(s) found; skipped in the directories: %s\n", len(files), s)
	}
	if len(missing) > 0 && len(missing) == len(paths) {
		return nil, errMissing(strings.Join(missing, ", "))
	}
	for _, p := range missing {
		fmt.Fprintf(errOut, "warning: %s: no such file or directory; skipped (the other paths are processed)\n", p)
	}
	return files, requireFiles(paths, files, allowEmpty)
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
