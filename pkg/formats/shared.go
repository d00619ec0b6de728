package formats

import (
	"github.com/ctxtool/ctxtool/pkg/formats/claudecode"
	"github.com/ctxtool/ctxtool/pkg/formats/codex"
	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
	"github.com/ctxtool/ctxtool/pkg/formats/openclawsqlite"
)

// The types, constants and helpers formats' callers use that live in the
// format folders (each format's constant, OpenClaw's store) or in
// formats/internal/conv, the machinery every format folder imports: named
// here for formats' callers.

// Format names a transcript format.
type Format = conv.Format

const (
	// Pi is pi / OpenClaw session JSONL (v1–v3), including OpenClaw's
	// .reset./.deleted. archives: pkg/transcript reads it directly.
	Pi = conv.Pi
	// Zstd is zstd-compressed JSONL (*.jsonl.zst): a pi session, or one of
	// the other JSONL formats, or an OpenClaw cold archive.
	Zstd = conv.Zstd
	// ClaudeCode is a Claude Code transcript (~/.claude/projects/…).
	ClaudeCode = claudecode.Format
	// Codex is a Codex CLI rollout with {timestamp,type,payload} lines.
	Codex = codex.Format
	// CodexLegacy is the 2025 Codex rollout shape without the envelope.
	CodexLegacy = codex.Legacy
	// OpenClawSQLite is OpenClaw's per-agent session database (≥ 2026.8).
	OpenClawSQLite = conv.OpenClawSQLite
	// Unknown is anything else.
	Unknown = conv.Unknown
)

// View is a translated transcript: pi v3 JSONL plus the source line (or
// row) of each of its lines.
type View = conv.View

// Produced is one pi line a converter wrote, with the values the pi parser
// reads back from it.
type Produced = conv.Produced

// Block is one content block of a Produced message line.
type Block = conv.Block

// Malformed is a source line a converter could not read.
type Malformed = conv.Malformed

// AppendString appends s as a JSON string, as pi's JSON.stringify writes
// it.
func AppendString(b []byte, s string) []byte { return conv.AppendString(b, s) }

// PackUUID returns the 16 bytes of a canonical lowercase UUID; ok is false
// for any other spelling.
func PackUUID(s string) ([16]byte, bool) { return conv.PackUUID(s) }

// UUIDText spells k as a canonical lowercase UUID.
func UUIDText(k [16]byte) string { return conv.UUIDText(k) }

// StoreSession is one session of an OpenClaw store.
type StoreSession = openclawsqlite.StoreSession

// ListStore lists the sessions of an OpenClaw store.
func ListStore(path string) ([]StoreSession, error) { return openclawsqlite.ListStore(path) }

// StorePath is the virtual path of one session of a store.
func StorePath(db, key string) string { return openclawsqlite.StorePath(db, key) }

// SplitStorePath splits "store.sqlite#key" when the part before the last
// '#' is an existing SQLite file.
func SplitStorePath(p string) (db, key string, ok bool) { return openclawsqlite.SplitStorePath(p) }
