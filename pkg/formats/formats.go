// Package formats reads agent transcripts that are not pi JSONL — Claude
// Code, Codex rollouts (both shapes), zstd-compressed JSONL and OpenClaw's
// SQLite session store — by turning each into a pi v3 session: a stream of
// pi-shaped JSONL lines plus, for every line it produced, the source line (or
// database row) it came from.
//
// Why a translation and not a second data model: every reading command
// (estimate, index, checkpoint, lint, export) already rebuilds pi's context
// from pi entries. A reader that yields pi entries whose tree, roles, sizes
// and usage follow the source agent's own rules gets all of them for free,
// and the map back to source lines keeps errors and recall citations
// pointing at the user's file. pkg/transcript calls Open for every file that
// is not pi JSONL (see transcript.Load); nothing else has to know.
//
// Each format's rules (what the agent sends, which usage record counts) are
// documented on its converter, one folder per JSONL format (claudecode/,
// codex/) over the shared decoder and emitter (internal/conv), and in
// openclawsqlite/ (OpenClaw's store) and open.go (zstd).
// A produced view is pi v3 JSONL that pi itself loads (`ctxtool export`).
//
// Memory: the produced lines go to a spool that stays in memory up to
// spoolMemory bytes and continues in an unlinked temporary file, so a 1 GB
// transcript costs what a 1 GB pi file costs plus the line map (4 bytes per
// produced line).
//
// It must not write: every format but pi JSONL is read-only, and writers
// refuse it (ReadOnlyError) instead of converting it in place.
package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctxtool/ctxtool/pkg/formats/claudecode"
	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
	"github.com/ctxtool/ctxtool/pkg/formats/openclawsqlite"
)

// Readable lists what ctxtool reads, for error messages.
const Readable = "pi and OpenClaw session JSONL (v1–v3, .reset./.deleted. archives), *.jsonl.zst, " +
	"Claude Code transcripts (~/.claude/projects), Codex rollouts (~/.codex/sessions) and OpenClaw SQLite stores " +
	"(~/.openclaw/agents/<id>/agent/*.sqlite)"

// sniffLimit bounds how much of a file Sniff reads to find its first
// parseable JSON line.
const sniffLimit = 4 << 20

// Sniffed is what the start of a file looks like.
type Sniffed struct {
	Format Format
	// Line is the 1-based line Sniff judged by (0 when none parsed).
	Line int
	// Looks describes that line when the format is Unknown or the line is
	// not what a pi session starts with ("a JSON array", "a Claude Code
	// transcript record").
	Looks string
}

// SniffFile opens path (a virtual "store.sqlite#key" path too) and sniffs it.
func SniffFile(path string) (Sniffed, error) {
	if db, _, ok := SplitStorePath(path); ok {
		path = db
	}
	f, err := conv.OpenRegular(path)
	if err != nil {
		return Sniffed{}, err
	}
	if f == nil {
		// FIFOs and devices: never opened or consumed here; the pi reader
		// reports what it finds.
		return Sniffed{Format: Pi}, nil
	}
	defer f.Close()
	return Sniff(io.LimitReader(f, sniffLimit))
}

// Sniff classifies a transcript from its first bytes: binary magic numbers
// first, then the first line that parses as JSON.
func Sniff(r io.Reader) (Sniffed, error) {
	// 64 KiB: the first line is usually short, and indexing sniffs every
	// file of a directory (a 1 MiB buffer each was a third of what a
	// directory of small sessions allocated).
	br := conv.NewLineReaderSize(r, 64<<10)
	head, err := br.Peek(len(openclawsqlite.Magic))
	if err != nil {
		return Sniffed{}, err
	}
	switch {
	case bytes.HasPrefix(head, conv.ZstdMagic):
		return Sniffed{Format: Zstd}, nil
	case bytes.HasPrefix(head, openclawsqlite.Magic):
		return Sniffed{Format: OpenClawSQLite}, nil
	}
	for no := 1; ; no++ {
		line, err := br.Next()
		if err == io.EOF || err == conv.ErrLineTooLong {
			return Sniffed{Format: Pi}, nil // let the pi reader say what is wrong
		}
		if err != nil {
			return Sniffed{}, err
		}
		if f, looks, ok := classifyLine(line); ok {
			return Sniffed{Format: f, Line: no, Looks: looks}, nil
		}
	}
}

// classifyLine judges one line; ok is false when it is blank or not JSON
// (pi skips such lines, so the next one decides).
func classifyLine(line []byte) (Format, string, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return "", "", false
	}
	if line[0] != '{' {
		if json.Valid(line) {
			switch line[0] {
			case '[':
				return Unknown, "a JSON array", true
			case '"':
				return Unknown, "a JSON string", true
			default:
				return Unknown, "a bare JSON value", true
			}
		}
		return "", "", false
	}
	var probe struct {
		Type        *string         `json:"type"`
		Payload     json.RawMessage `json:"payload"`
		UUID        *string         `json:"uuid"`
		ParentUUID  json.RawMessage `json:"parentUuid"`
		SessionID   *string         `json:"sessionId"`
		RecordType  *string         `json:"record_type"`
		Instruction json.RawMessage `json:"instructions"`
		Role        *string         `json:"role"`
		ID          json.RawMessage `json:"id"`
		Timestamp   json.RawMessage `json:"timestamp"`
		Kind        *string         `json:"kind"`
		Row         json.RawMessage `json:"row"`
		Message     json.RawMessage `json:"message"`
		LeafUUID    *string         `json:"leafUuid"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return "", "", false
	}
	typ := ""
	if probe.Type != nil {
		typ = *probe.Type
	}
	switch {
	case typ == "session":
		return Pi, "", true
	case probe.Payload != nil && (typ == "session_meta" || typ == "response_item" || typ == "event_msg" ||
		typ == "turn_context" || typ == "compacted"):
		return Codex, "a Codex rollout record", true
	case probe.UUID != nil || probe.ParentUUID != nil || probe.LeafUUID != nil ||
		(probe.SessionID != nil && claudecode.RecordTypes[typ]) || typ == "file-history-snapshot" || typ == "queue-operation" ||
		typ == "permission-mode":
		return ClaudeCode, "a Claude Code transcript record", true
	case probe.RecordType != nil || (probe.Instruction != nil && probe.ID != nil && probe.Timestamp != nil && probe.Type == nil):
		return CodexLegacy, "a Codex rollout record (2025 shape)", true
	case typ != "" && codexItemTypes[typ] && probe.Message == nil && (typ != "message" || probe.Role != nil):
		return CodexLegacy, "a Codex response item", true
	case probe.Kind != nil && (probe.Row != nil || *probe.Kind == "header"):
		return Unknown, "an OpenClaw cold-archive record", true
	case piEntryTypes[typ]:
		// A pi entry without a header: the pi reader reports it (pi would
		// overwrite such a file).
		return Pi, "", true
	case typ != "":
		return Unknown, fmt.Sprintf("a JSON object of type %q", truncate(typ, 40)), true
	}
	return Unknown, "a JSON object without a \"type\"", true
}

var codexItemTypes = map[string]bool{"message": true, "function_call": true, "function_call_output": true,
	"reasoning": true, "custom_tool_call": true, "custom_tool_call_output": true, "local_shell_call": true,
	"web_search_call": true}

var piEntryTypes = map[string]bool{"message": true, "model_change": true, "thinking_level_change": true,
	"compaction": true, "branch_summary": true, "custom": true, "custom_message": true, "label": true, "session_info": true}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// UnknownFormatError is a file ctxtool cannot read: it says what the file
// looks like and what ctxtool reads.
type UnknownFormatError struct {
	File  string
	Line  int
	Looks string
}

func (e *UnknownFormatError) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return fmt.Sprintf("%s: line %d looks like %s; ctxtool reads %s — check that this file is an agent transcript",
		where, e.Line, e.Looks, Readable)
}

// ReadOnlyError refuses a write to a format ctxtool only reads.
type ReadOnlyError struct {
	File   string
	Format Format
}

func (e *ReadOnlyError) Error() string {
	var why, instead string
	cv, converted := conv.Lookup(e.Format)
	switch {
	case e.Format == OpenClawSQLite:
		why = "OpenClaw's Gateway owns this database and external tools must not write it"
		instead = "compact it with OpenClaw itself (/compact in the chat, or the openclaw CLI), or"
	case converted:
		why = cv.Owner + " owns this file and does not read pi entries"
		instead = "compact it in " + cv.Owner + " (/compact), or"
	case e.Format == Zstd:
		why = "it is a compressed archive"
		instead = ""
	default:
		why = "ctxtool only writes pi JSONL"
	}
	if instead != "" {
		instead += " "
	}
	return fmt.Sprintf("%s: %s — ctxtool reads it but does not write it (%s); %swork on a pi copy: ctxtool export %s --to pi -o copy.jsonl (--dry-run plans still work on the original)",
		e.File, e.Format, why, instead, conv.ShellQuote(e.File))
}

// CheckWritable returns a *ReadOnlyError when path exists and is a format
// ctxtool does not write. A missing file or a pi file passes (the writer
// reports those itself).
func CheckWritable(path string) error {
	sn, err := SniffFile(path)
	if err != nil {
		if _, _, ok := SplitStorePath(path); ok {
			return &ReadOnlyError{File: path, Format: OpenClawSQLite}
		}
		return nil
	}
	if sn.Format == Pi || sn.Format == Unknown {
		return nil
	}
	return &ReadOnlyError{File: path, Format: sn.Format}
}
