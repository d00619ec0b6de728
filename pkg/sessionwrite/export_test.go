package sessionwrite

import "time"

// SetAfterRename installs a hook run right after Rewrite's rename.
func SetAfterRename(f func()) { afterRename = f }

// SetAfterRebuild installs a hook run right after a carry round's rename.
func SetAfterRebuild(f func()) { afterRebuild = f }

// SetHoldWait shortens how long Rewrite waits for a holder of the
// replaced file and returns a restore.
func SetHoldWait(d time.Duration) func() {
	old := holdWait
	holdWait = d
	return func() { holdWait = old }
}

// MaxCarryRounds is how many carry rounds Rewrite makes before it carries
// late appends out of order.
const MaxCarryRounds = maxCarryRounds

// SetAfterCarry installs a hook run right after late bytes are appended to
// the live file.
func SetAfterCarry(f func()) { afterCarry = f }

// SetCarryLimit shortens how long Rewrite carries late appends at most and
// returns a restore.
func SetCarryLimit(d time.Duration) func() {
	old := carryLimit
	carryLimit = d
	return func() { carryLimit = old }
}
