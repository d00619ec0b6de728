// Package exitcode defines the process exit codes of the command-line
// contract (README.md, "Exit codes") and an error type that carries one, so
// that deep code can say "this is a usage error" without knowing about
// os.Exit.
//
// It must not call os.Exit: only cmd.Execute turns an error into the
// process's exit code.
package exitcode

import (
	"errors"
	"fmt"
)

const (
	OK        = 0 // success
	Runtime   = 1 // runtime error
	Usage     = 2 // usage or configuration error
	Threshold = 3 // a --fail-* threshold was crossed (CI gate)
	Locked    = 4 // the session is locked by another process
)

// Error is an error with the exit code the process should end with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New wraps err with an exit code.
func New(code int, err error) error { return &Error{Code: code, Err: err} }

// Newf formats a message into an error with an exit code.
func Newf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Silent is an exit code with nothing more to print (the command already
// reported, e.g. a crossed --fail-over threshold).
func Silent(code int) error { return &Error{Code: code} }

// Code returns the exit code for err: the code of the nearest *Error in the
// chain, Locked for lock errors that implement `Locked() bool`, else Runtime.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var l interface{ Locked() bool }
	if errors.As(err, &l) && l.Locked() {
		return Locked
	}
	return Runtime
}
