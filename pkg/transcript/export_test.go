package transcript

// SetAfterRename installs a hook run right after Rewrite's rename.
func SetAfterRename(f func()) { afterRename = f }
