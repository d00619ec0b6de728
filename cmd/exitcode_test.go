package cmd

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

// TestExitCodesFromErrorTypes: command-line mistakes exit 2 because cobra's
// errors are typed where they arise (flags, argument counts, an unknown
// command), and a runtime error whose text happens to read like one — an OS
// EINVAL says "invalid argument" — still exits 1.
func TestExitCodesFromErrorTypes(t *testing.T) {
	cleanEnv(t)
	einval := &os.PathError{Op: "open", Path: "session.jsonl", Err: syscall.EINVAL}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"unknown command", []string{"bogus"}, exitcode.Usage},
		{"unknown flag", []string{"estimate", "--bogus", "x.jsonl"}, exitcode.Usage},
		{"unknown shorthand", []string{"estimate", "-Z", "x.jsonl"}, exitcode.Usage},
		{"flag value", []string{"roll", "--jobs", "many", "x.jsonl"}, exitcode.Usage},
		{"too few arguments", []string{"compact"}, exitcode.Usage},
		{"too many arguments", []string{"restore", "a", "b"}, exitcode.Usage},
		{"EINVAL from the work", []string{"einval"}, exitcode.Runtime},
		{"unknown command text from the work", []string{"einval", "--say", "unknown command \"x\""}, exitcode.Runtime},
		{"help", []string{"--help"}, exitcode.OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			io, _, _, _ := iostreams.Test()
			root, _ := NewRootCmd(io)
			var say string
			work := &cobra.Command{Use: "einval", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error {
				if say != "" {
					return &os.PathError{Op: say, Path: "x", Err: syscall.EINVAL}
				}
				return einval
			}}
			work.Flags().StringVar(&say, "say", "", "")
			root.AddCommand(work)
			root.SetArgs(c.args)
			err := execute(context.Background(), root)
			if got := exitcode.Code(err); got != c.want {
				t.Errorf("%v: exit %d, want %d (%v)", c.args, got, c.want, err)
			}
		})
	}
}
