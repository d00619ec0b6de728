package formats

import (
	"fmt"
	"io"
)

// A converter turns one JSONL transcript format into pi v3 lines. Each
// format registers its own in an init function (<format>_register.go), so
// the code that opens, converts line by line and names formats never lists
// them: adding a JSONL format is its converter file, its registration, its
// detection rule in classifyLine, and fixtures.
type converter struct {
	// name is the human name Format.String gives ("Claude Code transcript").
	name string
	// owner is the agent that writes the format and compacts it itself
	// ("Claude Code"), for ReadOnlyError.
	owner string
	// new returns a converter writing into v.
	new func(v *view) lineConv
	// convert runs c (from new) over r, the whole source from its first
	// line, in batches (convertLines with c's own record type). file is
	// the source's path ("" for standard input): a Codex fork finds its
	// parent's rollout beside it.
	convert func(c lineConv, file string, r io.Reader) error
	// lines returns a converter for NewLineConverter, fed one line at a
	// time, that must not hold lines back for later ones.
	lines func(v *view) lineConv
}

// converters are the registered JSONL formats.
var converters = map[Format]converter{}

// newConv returns a new converter of format f writing into v; nil when no
// converter is registered for f.
func newConv(f Format, v *view) lineConv {
	if c, ok := converters[f]; ok {
		return c.new(v)
	}
	return nil
}

// register adds f's converter; a format registers once.
func register(f Format, c converter) {
	if _, dup := converters[f]; dup {
		panic(fmt.Sprintf("formats: %s registered twice", f))
	}
	converters[f] = c
}
