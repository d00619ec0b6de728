// Package sessionwrite performs every write to a pi session file: it builds
// entry lines in the file's own format version and pi's JSON encoding
// (Writer), appends them under OpenClaw's session lock (Update: lock, load,
// plan, append; Append: the write half of a plan made without the lock), and
// replaces a whole file atomically (Rewrite: temp file, fsync, rename, a
// backup, and the lines other writers append meanwhile carried over).
//
// Why a package of its own: reading a session (pkg/transcript) is what every
// command does; writing one is what five do, and it is where the rules that
// keep a user's session safe live. Those rules, which every function here
// keeps:
//   - a line we did not write is never changed, except by Rewrite;
//   - nothing is written unless the file is still the bytes the plan was
//     made on (ErrFileChanged otherwise: reload and plan again);
//   - an append is one write after the loaded bytes, and a failed one leaves
//     the file at its previous size; Rewrite leaves the file untouched when
//     it fails before its rename, and keeps the full original in a backup;
//   - read-only files, other formats, sessions pi cannot load and files that
//     are not regular files are refused, with an error that says what to do.
//
// It decides nothing about what to write: that is the callers' plan.
package sessionwrite
