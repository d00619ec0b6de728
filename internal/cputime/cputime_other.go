//go:build !unix

// Package cputime measures the CPU time this process has used, so that
// timing tests and benchmarks survive a machine shared with other work.
package cputime

import "time"

var processStart = time.Now()

// Used falls back to wall time where getrusage is missing.
func Used() time.Duration { return time.Since(processStart) }
