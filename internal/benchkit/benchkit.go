// Package benchkit holds what the benchmark commands under bench/ that time
// the ctxtool binary share: their common flags, the session they run on and
// the binary. It is not API: only bench/ imports it.
package benchkit

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// Flags are the flags every such benchmark takes.
type Flags struct {
	Size string // -size: of the generated session (sessiongen.ParseSize)
	Runs int    // -runs: of each side
	File string // -file: a session to use instead of generating one
}

// Define defines the flags on the command line, with the benchmark's
// default size and what its runs report.
func Define(size, runs string) *Flags {
	f := &Flags{}
	flag.StringVar(&f.Size, "size", size, "size of the generated session")
	flag.IntVar(&f.Runs, "runs", 3, "runs of each side ("+runs+")")
	flag.StringVar(&f.File, "file", "", "use this session instead of generating one")
	return f
}

// Setup is what a benchmark runs: the ctxtool binary, built from the
// working directory (the repo root), and the session, in Dir, a temporary
// directory the benchmark removes.
type Setup struct {
	Dir, Bin, Session string
	Bytes             int64 // the session's size
}

// Prepare builds the binary and, unless -file names one, generates a session
// of the bench preset of -size.
func (f *Flags) Prepare() (*Setup, error) {
	dir, err := os.MkdirTemp("", "ctxtool-bench-")
	if err != nil {
		return nil, err
	}
	s := &Setup{Dir: dir, Bin: filepath.Join(dir, "ctxtool"), Session: f.File}
	if err := s.prepare(f.Size); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Setup) prepare(size string) error {
	if s.Session == "" {
		s.Session = filepath.Join(s.Dir, "session.jsonl")
		if err := generate(s.Session, size); err != nil {
			return err
		}
	}
	st, err := os.Stat(s.Session)
	if err != nil {
		return err
	}
	s.Bytes = st.Size()
	if out, err := exec.Command("go", "build", "-o", s.Bin, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// generate writes a session of the bench preset of about size to path.
func generate(path, size string) error {
	opts, err := sessiongen.PresetOptions("bench")
	if err != nil {
		return err
	}
	if opts.TargetBytes, err = sessiongen.ParseSize(size); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "generating a %s session…\n", size)
	_, err = sessiongen.GenerateFile(path, opts)
	return err
}

// Sample is one run of a command, measured by Run.
type Sample struct {
	Wall, CPU time.Duration // CPU: user + system, of the child
	RSSKB     int64         // the child's peak resident set
}

// Run runs cmd (its output goes where cmd says) and measures it: CPU and
// peak RSS come from the child's rusage, so the benchmark's own work does
// not count.
func Run(cmd *exec.Cmd) (Sample, error) {
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return Sample{}, err
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return Sample{Wall: time.Since(start), CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), RSSKB: ru.Maxrss}, nil
}

// Summarize is what the benchmarks report of several runs of one command:
// the median wall and the median CPU time (one slow or one lucky run does
// not move them; each taken on its own) and the worst peak RSS (memory is
// a limit, not an average). s must not be empty.
func Summarize(s []Sample) Sample {
	walls := make([]time.Duration, len(s))
	cpus := make([]time.Duration, len(s))
	var rss int64
	for i, x := range s {
		walls[i], cpus[i] = x.Wall, x.CPU
		rss = max(rss, x.RSSKB)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return Sample{Wall: walls[len(walls)/2], CPU: cpus[len(cpus)/2], RSSKB: rss}
}
