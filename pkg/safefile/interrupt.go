package safefile

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// CriticalWait bounds how long an interrupt waits for running critical
// sections before the process exits anyway: every command stops within a
// second of SIGINT/SIGTERM.
const CriticalWait = 500 * time.Millisecond

var (
	intrMu    sync.Mutex
	cleanups  = map[string]cleanup{}
	seq       int
	inCrit    int
	exiting   bool
	intrOnce  sync.Once
	exitFunc  = os.Exit
	intrSigns = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
)

var (
	interrupted atomic.Bool
	cancels     []context.CancelFunc
)

// Interrupted reports whether a signal is ending the process: a command
// that returns because its context was cancelled should then wait for the
// handler's exit (with 128+signal) rather than report an error of its own.
func Interrupted() bool { return interrupted.Load() }

// Context returns a context cancelled when the process is interrupted, so
// waits and loops stop at once and unwind (releasing what they hold) while
// the handler waits for critical sections and exits.
func Context(parent context.Context) context.Context {
	handleInterrupts()
	ctx, cancel := context.WithCancel(parent)
	intrMu.Lock()
	cancels = append(cancels, cancel)
	intrMu.Unlock()
	return ctx
}

type cleanup struct {
	seq int
	fn  func()
}

// OnInterrupt registers fn to run if the process is interrupted (SIGINT,
// SIGTERM, SIGHUP, SIGQUIT) before OffInterrupt(key). Cleanups run newest
// first, so a temp file made under a lock is removed before the lock is
// released. It installs the interrupt handler.
func OnInterrupt(key string, fn func()) {
	handleInterrupts()
	intrMu.Lock()
	seq++
	cleanups[key] = cleanup{seq: seq, fn: fn}
	intrMu.Unlock()
}

// OffInterrupt drops a cleanup registered with OnInterrupt.
func OffInterrupt(key string) {
	intrMu.Lock()
	delete(cleanups, key)
	intrMu.Unlock()
}

// Critical runs fn so that an interrupt cannot end the process in its
// middle: a signal that arrives meanwhile takes effect when fn returns (or
// after CriticalWait). Keep fn short — a rename and the checks that must
// follow it. Once the process is exiting, Critical does not start fn and
// waits for the exit.
func Critical(fn func() error) error {
	intrMu.Lock()
	if exiting {
		intrMu.Unlock()
		select {} // the interrupt handler is ending the process
	}
	inCrit++
	intrMu.Unlock()
	defer func() {
		intrMu.Lock()
		inCrit--
		intrMu.Unlock()
	}()
	return fn()
}

// handleInterrupts installs (once) the handler that, on SIGINT, SIGTERM,
// SIGHUP or SIGQUIT, waits for critical sections, runs the registered
// cleanups (temp files removed, locks released) and exits with 128+signal.
// Commands call it at start so that every one of them stops within a second
// of a signal, even one blocked in a read or a long computation.
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
			exitFunc(interrupt(sig))
		}()
	})
}

// interrupt does the handler's work and returns the exit code.
func interrupt(sig os.Signal) int {
	deadline := time.Now().Add(CriticalWait)
	for {
		intrMu.Lock()
		if inCrit == 0 || time.Now().After(deadline) {
			exiting = true
			break
		}
		intrMu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
	list := make([]cleanup, 0, len(cleanups))
	for _, c := range cleanups {
		list = append(list, c)
	}
	cleanups = map[string]cleanup{}
	intrMu.Unlock()
	// newest first
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list[j].seq > list[j-1].seq; j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	for _, c := range list {
		c.fn()
	}
	code := 128 + 2
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	return code
}

// crashAt is CTXTOOL_CRASH_AT, read once.
var crashAt = sync.OnceValue(func() string { return os.Getenv("CTXTOOL_CRASH_AT") })

// CrashPoint kills the process with SIGKILL when the environment variable
// CTXTOOL_CRASH_AT names this point. Tests use it to put a kill -9 exactly
// where a timed kill rarely lands (between creating a file and filling it,
// between a backup and a rename); unset, it does nothing.
func CrashPoint(name string) {
	if at := crashAt(); at != "" && at == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
