// Package filelock is the one way ctxtool takes a lock on a file another
// program also writes: OpenClaw's session write lock (<session>.lock, taken
// by every append, compaction, rewrite and checkpoint capture), the lock of
// OpenClaw's session store (sessions.json.lock, AcquireStore), and, for the
// same reason, the files of ctxtool's own that other ctxtool processes
// change (memflush's state and notes files, checkpoint's capture state). It also tells which other
// processes still have a file open for writing (Writers).
//
// Why a package of its own: the lock is not about transcripts. It is
// OpenClaw's protocol, which memflush, checkpoint, sessionstore and prune
// use as a general file lock; sessionwrite's appends and rewrites are one
// holder among them.
//
// Guarantees:
//   - A lock file never exists without its payload (pid, createdAt, the
//     process start time): the payload is written to a temp file and
//     hard-linked into place; a kill in between leaves a temp file that the
//     next Acquire in that directory removes.
//   - Stale locks (dead or recycled pid, older than StaleAge, an empty or
//     garbage file older than StaleAge by mtime) are taken over; of any
//     number of ctxtool processes racing over one stale lock, exactly one
//     gets it (flock(2) on the directory, then an inode re-check).
//   - A lock file that is not a regular file is never taken over, and its
//     error says how to remove it. Errors are *LockedError (exit code 4).
//   - A held lock is released when the process is interrupted: it is
//     registered with safefile's cleanups, which cmd's signal handler runs.
package filelock
