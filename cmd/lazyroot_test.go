package cmd

import (
	"context"
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

// Each entry of commands builds the command it is named after, and the
// whole tree holds them all, in `--help`'s order.
func TestCommandNames(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root, _ := NewRootCmd(io)
	var built, named []string
	for _, c := range root.Commands() {
		built = append(built, c.Name())
	}
	for _, c := range commands {
		f := &Factory{IO: io}
		if got := c.build(f).Name(); got != c.name {
			t.Errorf("commands entry %q builds %q", c.name, got)
		}
		named = append(named, c.name)
	}
	if !slices.Equal(built, named) {
		t.Errorf("root has %v, commands %v", built, named)
	}
	if !slices.IsSorted(named) {
		t.Errorf("commands not sorted by name: %v", named)
	}
}

// runArgs runs a command line as Execute does (only: the one subcommand
// built, "" the whole tree) and returns its output and exit code.
func runArgs(only string, args ...string) (string, int) {
	io, _, out, errOut := iostreams.Test()
	root, _ := newRoot(io, only)
	root.SetArgs(args)
	err := execute(context.Background(), root)
	if err != nil {
		errOut.WriteString("error: " + err.Error())
	}
	return out.String() + "\x00" + errOut.String(), exitcode.Code(err)
}

// A command line whose first word names a command runs the same with that
// command alone as with the whole tree: its help and every subcommand's
// help, and its usage errors (an unknown flag, a missing argument, a
// flag out of range); and a search. man and the lines that do not start with a command
// name get the whole tree.
func TestLazyRootSameAsWholeTree(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root, _ := NewRootCmd(io)
	var lines [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		path = append(slices.Clone(path), c.Name())
		lines = append(lines,
			append(slices.Clone(path), "--help"),
			append(slices.Clone(path), "--no-such-flag"),
		)
		for _, sub := range c.Commands() {
			walk(sub, path)
		}
	}
	for _, c := range root.Commands() {
		if c.Name() != "man" {
			walk(c, nil)
		}
	}
	lines = append(lines,
		[]string{"search", "--max-results", "-3", "x"},
		[]string{"search", "--json", "--state-dir", t.TempDir(), "x"},
		[]string{"search"},
	)
	for _, args := range lines {
		only := commandNamed(args)
		if only == "" {
			t.Fatalf("%q: not built alone", args)
		}
		lazy, lazyCode := runArgs(only, args...)
		whole, wholeCode := runArgs("", args...)
		if lazy != whole || lazyCode != wholeCode {
			t.Errorf("%q: alone (exit %d):\n%s\nwhole tree (exit %d):\n%s", args, lazyCode, lazy, wholeCode, whole)
		}
	}
	for _, args := range [][]string{nil, {"man", "--dir", "x"}, {"help", "search"}, {"--json", "search", "x"}, {"serch"}, {"completion", "bash"}, {"__complete", "se"}} {
		if only := commandNamed(args); only != "" {
			t.Errorf("%q builds only %q", args, only)
		}
	}
}
