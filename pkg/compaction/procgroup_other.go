//go:build !unix

package compaction

import "os/exec"

// ownProcessGroup: without process groups only the shell is killed.
func ownProcessGroup(cmd *exec.Cmd) {}
