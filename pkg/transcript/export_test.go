package transcript

// SetAfterRename installs a hook run right after Rewrite's rename.
func SetAfterRename(f func()) { afterRename = f }

// SetMaxLineBytes lowers the line cap for a test and returns a restore.
func SetMaxLineBytes(n int64) func() {
	old := maxLineBytes
	maxLineBytes = n
	return func() { maxLineBytes = old }
}
