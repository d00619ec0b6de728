package transcript

import (
	"bytes"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// SetAfterRename installs a hook run right after Rewrite's rename.
func SetAfterRename(f func()) { afterRename = f }

// SetAfterRebuild installs a hook run right after a carry round's rename.
func SetAfterRebuild(f func()) { afterRebuild = f }

// SetMaxLineBytes lowers the line cap for a test and returns a restore.
func SetMaxLineBytes(n int64) func() {
	old := maxLineBytes
	maxLineBytes = n
	return func() { maxLineBytes = old }
}

// LoadBytes indexes a session held in memory.
func LoadBytes(name string, data []byte) (*Session, error) {
	s, err := load(name, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	s.src = bytes.NewReader(data)
	return s, nil
}

// LoadTranslated loads a transcript in another format the way every one
// was read before the converters handed over their values: translated to
// pi lines, then those lines parsed. Nil for pi files.
func LoadTranslated(path string) (*Session, error) {
	v, err := formats.Open(path, nil)
	if err != nil || v == nil {
		return nil, err
	}
	return loadView(path, v)
}

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
