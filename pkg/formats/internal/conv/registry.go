package conv

import (
	"fmt"
	"io"
)

// A Converter turns one JSONL transcript format into pi v3 lines. Each
// format's folder (pkg/formats/<format>/) registers its own in an init
// function (<format>_register.go), and pkg/formats links every folder
// (all.go), so the code that opens, converts line by line and names formats
// never lists them: adding a JSONL format is its folder, its registration,
// its detection rule in formats' classifyLine, and fixtures.
type Converter struct {
	// Name is the human name Format.String gives ("Claude Code transcript").
	Name string
	// Owner is the agent that writes the format and compacts it itself
	// ("Claude Code"), for ReadOnlyError.
	Owner string
	// Agent is that agent's id ("claude-code", the names of
	// sources.Agent): what recall and prune file a session of this format
	// under when its path does not say.
	Agent string
	// New returns a converter writing into v.
	New func(v *Emitter) LineConv
	// Convert runs c (from new) over r, the whole source from its first
	// line, in batches (ConvertLines with c's own record type). file is
	// the source's path ("" for standard input): a Codex fork finds its
	// parent's rollout beside it.
	Convert func(c LineConv, file string, r io.Reader) error
	// Lines returns a converter for NewLineConverter, fed one line at a
	// time, that must not hold lines back for later ones.
	Lines func(v *Emitter) LineConv
}

// converters are the registered JSONL formats.
var converters = map[Format]Converter{}

// Lookup returns f's converter; ok is false when no converter is
// registered for f (pi JSONL, zstd, OpenClaw's store, unknown).
func Lookup(f Format) (c Converter, ok bool) {
	c, ok = converters[f]
	return c, ok
}

// Register adds f's converter; a format registers once.
func Register(f Format, c Converter) {
	if _, dup := converters[f]; dup {
		panic(fmt.Sprintf("formats: %s registered twice", f))
	}
	converters[f] = c
}

// LineConv is a stateful converter fed one source line at a time (Line);
// its work is split in two for ConvertLines (see BatchConv).
type LineConv interface {
	Line(no int, raw []byte) error
	// Flush writes what the converter holds back for the next lines.
	Flush() error
	Finish() error
}
