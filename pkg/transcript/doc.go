// Package transcript is the core of pi / OpenClaw session JSONL: it reads a
// session file (streaming, on both cores; content stays on disk, entries keep
// their offsets), rebuilds the entry tree and the context pi sends
// (BuildContext, exactly pi's buildSessionContext), counts pi's chars/4, and
// says whether a session may be written (Writable, Rewritable, WritablePath)
// and whether a file is still the bytes it was loaded from (LoadedFrom,
// SameStart). The writes themselves — appends under OpenClaw's session lock,
// the atomic whole-file rewrite and the entry lines — are pkg/sessionwrite's;
// the lock is pkg/filelock's. Other formats are read through pkg/formats and
// come back as read-only sessions. The rules it follows are in
// docs/design/pi-baseline.md.
//
// It must not lose a line: malformed, torn, oversized and non-object lines
// are kept in place and reported (Session.Malformed, Oversized, Warnings),
// never skipped silently. It imports no ctxtool package but formats and
// safefile.
package transcript
