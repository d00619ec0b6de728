//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user + system), so that
// throughput numbers survive a machine shared with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
