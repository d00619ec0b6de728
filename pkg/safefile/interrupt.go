package safefile

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// CriticalWait bounds how long Interrupt waits for running critical
// sections before it runs the cleanups anyway: every command stops within a
// second of SIGINT/SIGTERM.
const CriticalWait = 500 * time.Millisecond

// The cleanup registry. This package installs no signal handler and never
// exits the process: cmd does both, and calls Interrupt on its way out.
var (
	intrMu   sync.Mutex
	cleanups = map[string]cleanup{}
	seq      int
	inCrit   int
	exiting  bool
)

type cleanup struct {
	seq int
	fn  func()
}

// OnInterrupt registers fn to run if the process is interrupted (when the
// command layer's signal handler calls Interrupt) before OffInterrupt(key).
// Cleanups run newest first, so a temp file made under a lock is removed
// before the lock is released.
func OnInterrupt(key string, fn func()) {
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

// Interrupt is what the process's signal handler calls before it exits: it
// waits for running critical sections (at most CriticalWait), stops new
// ones from starting (Critical then blocks until the exit), and runs the
// registered cleanups newest first (temp files removed, locks released).
// The process must exit once it returns.
func Interrupt() {
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
