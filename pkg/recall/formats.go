package recall

import (
	"os"
	"strconv"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// Recall indexes every format pkg/formats reads, with citations that point
// into the user's own file:
//   - pi JSONL is read as it is;
//   - Claude Code and Codex files are read as they are, and each line is
//     translated to the pi lines it holds before extraction, so chunks cite
//     the source line (and appends are indexed incrementally as for pi);
//   - a *.jsonl.zst is indexed through a decompressed temporary copy (same
//     line numbers), and one session of an OpenClaw store
//     ("store.sqlite#<key>") through a copy whose line N is the row with
//     seq N-1; its citations name rows (path@seq=A-B).

// source is an opened file to index and the format of its lines.
type source struct {
	f      *os.File
	format formats.Format
	// plain: f is the session file itself, pi JSONL, whose lines need no
	// translation: a chunk's text can be read again from its lines
	// (reread.go). A temporary copy (zstd, store session) is gone after
	// the run, and a translated line's text depends on earlier lines
	// (tool names carry over), so their chunks keep their text.
	plain bool
}

// openSource opens what Index reads for abs: the file, or the temporary
// copy of a zstd file or store session, with the format of the lines it
// holds (judged once, from its first line: it says how they are
// translated).
func openSource(abs string) (source, error) {
	tmp, format, err := formats.Materialize(abs)
	if err == nil && format == formats.Unknown {
		// Not a transcript ctxtool reads: an error, never "indexed, 0
		// chunks", which would make it unsearchable in silence.
		sn, _ := formats.SniffFile(abs)
		return source{}, &formats.UnknownFormatError{File: abs, Line: sn.Line, Looks: sn.Looks}
	}
	if err != nil || tmp != nil {
		return source{f: tmp, format: format}, err
	}
	f, err := os.Open(abs)
	return source{f: f, format: format, plain: format == formats.Pi}, err
}

// extractSourceLine extracts one physical line, translating it first when
// the file is not pi JSONL.
func extractSourceLine(x *extractor, conv *formats.LineConverter, no int, line []byte) ([]unit, bool) {
	if x.redact {
		// Redacted in the raw line, before any format's conversion: the
		// fingerprints are those lint reports for this file.
		line = secrets.RedactJSON(line)
	}
	if conv == nil {
		return x.extractLine(line)
	}
	lines, ok := conv.Convert(no, line)
	var units []unit
	for _, l := range lines {
		u, _ := x.extractLine(l)
		units = append(units, u...)
	}
	return units, ok
}

// sourceFile is the file on disk behind an indexed path (the database of a
// store session).
func sourceFile(p string) string {
	if db, _, ok := formats.SplitStorePath(p); ok {
		return db
	}
	if i := strings.LastIndexByte(p, '#'); i > 0 && strings.HasSuffix(p[:i], ".sqlite") {
		return p[:i]
	}
	return p
}

func storeSession(p string) bool {
	_, _, ok := formats.SplitStorePath(p)
	return ok
}

// storeCitation names database rows: line N of a store session is seq N-1.
func storeCitation(path string, start, end int) string {
	c := path + "@seq=" + strconv.Itoa(start-1)
	if end != start {
		c += "-" + strconv.Itoa(end-1)
	}
	return c
}
