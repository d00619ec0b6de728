// Package transcript is the core of pi / OpenClaw session JSONL: it reads a
// session file (streaming, on both cores; content stays on disk, entries keep
// their offsets), rebuilds the entry tree and the context pi sends
// (BuildContext, exactly pi's buildSessionContext), counts pi's chars/4, and
// performs every write to a session file: appends under OpenClaw's session
// lock (Update, Append; the lock itself is pkg/filelock), the atomic whole-file rewrite (Rewrite: temp file,
// fsync, rename, backup) and the entry lines themselves (Writer), in the
// file's own format version and pi's JSON encoding. Other formats are read
// through pkg/formats and come back as read-only sessions. The rules it
// follows are in docs/design/pi-baseline.md.
//
// It must not lose a line: malformed, torn, oversized and non-object lines
// are kept in place and reported (Session.Malformed, Oversized, Warnings),
// never skipped silently or rewritten; a line it did not write is never
// changed except through Rewrite. It must not decide what to write (that is
// the callers' plan) and imports no ctxtool package but formats, filelock and safefile.
package transcript
