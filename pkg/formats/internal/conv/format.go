package conv

// Format names a transcript format. The formats with a converter name
// theirs in their own folder (claudecode.Format, codex.Format,
// codex.Legacy); those here are read without one.
type Format string

const (
	// Pi is pi / OpenClaw session JSONL (v1–v3), including OpenClaw's
	// .reset./.deleted. archives: pkg/transcript reads it directly.
	Pi Format = "pi"
	// Zstd is zstd-compressed JSONL (*.jsonl.zst): a pi session, or one of
	// the other JSONL formats, or an OpenClaw cold archive.
	Zstd Format = "zstd"
	// OpenClawSQLite is OpenClaw's per-agent session database (≥ 2026.8).
	OpenClawSQLite Format = "openclaw-sqlite"
	// Unknown is anything else.
	Unknown Format = "unknown"
)

// formatNames names the formats no converter registers (converters name
// their own).
var formatNames = map[Format]string{
	Pi: "pi/OpenClaw session JSONL", Zstd: "zstd-compressed JSONL", OpenClawSQLite: "OpenClaw SQLite session store",
	Unknown: "unknown format",
}

// String is the human name ("Claude Code transcript").
func (f Format) String() string {
	if c, ok := converters[f]; ok {
		return c.Name
	}
	if n, ok := formatNames[f]; ok {
		return n
	}
	return string(f)
}

// Agent is the id of the agent that writes f ("claude-code", "codex"),
// as its converter registers it; "" for the formats without one (pi
// JSONL and OpenClaw's store, which pi, OpenClaw and the Gateway all
// write: the path tells them apart).
func (f Format) Agent() string { return converters[f].Agent }

// Writable reports whether ctxtool may append to files of this format.
// Only pi JSONL is written: the other agents own their files and would not
// read a pi entry (and OpenClaw's Gateway owns its database).
func (f Format) Writable() bool { return f == Pi }
