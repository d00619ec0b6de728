package cmd

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// The process's interrupt handling lives here, in the command layer, as
// restic keeps it: pkg/ only registers cleanups (safefile.OnInterrupt) and
// marks critical sections; this handler cancels the commands' contexts,
// has safefile run the cleanups, and exits.
var (
	intrMu      sync.Mutex
	intrOnce    sync.Once
	interrupted atomic.Bool
	cancels     []context.CancelFunc
	intrSigns   = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
)

// isInterrupted reports whether a signal is ending the process: a command
// that returns because its context was cancelled should then wait for the
// handler's exit (with 128+signal) rather than report an error of its own.
func isInterrupted() bool { return interrupted.Load() }

// interruptible returns a context cancelled when the process is
// interrupted, so waits and loops stop at once and unwind (releasing what
// they hold) while the handler waits for critical sections and exits. It
// installs the handler.
func interruptible(parent context.Context) context.Context {
	handleInterrupts()
	ctx, cancel := context.WithCancel(parent)
	intrMu.Lock()
	cancels = append(cancels, cancel)
	intrMu.Unlock()
	return ctx
}

// handleInterrupts installs (once) the handler that, on SIGINT, SIGTERM,
// SIGHUP or SIGQUIT, cancels the contexts, waits for critical sections,
// runs the registered cleanups (temp files removed, locks released) and
// exits with 128+signal. Execute calls it at start so that every command
// stops within a second of a signal, even one blocked in a read or a long
// computation.
func handleInterrupts() {
	intrOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, intrSigns...)
		go func() {
			sig := <-ch
			interrupted.Store(true)
			intrMu.Lock()
			for _, c := range cancels {
				c()
			}
			intrMu.Unlock()
			safefile.Interrupt()
			os.Exit(exitCodeFor(sig))
		}()
	})
}

// exitCodeFor is the shell's code for a death by sig: 128+signal.
func exitCodeFor(sig os.Signal) int {
	code := 128 + 2
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	return code
}
