package transcript

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Entry is what ctxtool keeps in memory of one session line: enough to build
// the tree, rebuild pi's context and estimate it, but not the content. Full
// content is read back from the file on demand (Session.Raw, Session.Message)
// so that a 100 MB session costs a few MB of memory.
type Entry struct {
	// Index is the position in pi's parsed-record array with the header at 0:
	// the number v1 compactions store in firstKeptEntryIndex.
	Index  int
	Line   int   // 1-based physical line
	Offset int64 // byte offset of the line in the file
	Length int   // bytes of the line, without the newline

	// ts is the entry's timestamp (read through Timestamp) as epoch ms
	// when it has the shape pi writes, isoMillis, which reads back byte for
	// byte: 8 bytes instead of a string header and 24 bytes of text on
	// every entry. 0 otherwise: the text, if any, is rare.timestamp.
	ts int64

	// Chars is pi's heuristic size of that message in UTF-16 code units
	// (the images rule included); Tokens() is ceil(Chars/4).
	Chars int
	// Images counts image blocks in the message content.
	Images int32
	// Wide counts CJK/Hangul characters among the counted text, and
	// ThinkingChars the part of Chars that is assistant thinking: content
	// classes the calibrated estimator weighs separately. These three are
	// bounded by the line's bytes (int32 beside the flags below: 16 bytes
	// where four words took 32); Chars is not (an image counts 4800).
	Wide          int32
	ThinkingChars int32
	// id and parent are the entry's id and parentId (read through ID and
	// ParentID) in the forms that forms holds: pi's ids, 8 lowercase hex
	// digits, as their number in 4 bytes where a string header and its
	// text took 24; ids of other shapes in long.
	id, parent uint32

	// IsError is a toolResult's isError, ExcludeFromContext a bash
	// execution's excludeFromContext.
	IsError            bool
	ExcludeFromContext bool
	// Oversized marks a line over MaxLineBytes: only its type, id, parent,
	// timestamp and role were read; Chars is 0 and its content cannot be
	// decoded.
	Oversized bool
	forms     idForms
	long      *longIDs // nil when both id and parentId have a numeric form

	MsgTimestamp float64 // message.timestamp (epoch ms), 0 if absent

	// names are the entry's strings that take few values in a session,
	// read through the methods of the same names.
	names *names

	// Assistant messages.
	Usage       *Usage
	ToolCallIDs []string
	// toolResult messages.
	ToolCallID string

	// rare holds the fields of the few entry types that have them, read
	// through the methods of the same names; nil on the others.
	rare *rareFields
}

// names are an entry's strings that take few values across a session
// (types, roles, stop reasons, providers, models, tool names): the
// entries with the same ones share one interned record, a pointer on each
// instead of six string headers.
type names struct {
	typ        string
	role       string
	stopReason string
	provider   string // assistant provider, or model_change provider
	model      string // assistant model, or model_change modelId
	toolName   string // toolResult
}

// noNames is what the name methods read on an entry without names.
var noNames names

func (e *Entry) nm() *names {
	if e.names == nil {
		return &noNames
	}
	return e.names
}

// Type is the entry's type.
func (e *Entry) Type() string { return e.nm().typ }

// Role is the role of the context message this entry produces:
// message.role for message entries (v2 "hookMessage" reads as "custom"),
// "custom" for custom_message, "branchSummary" for a branch_summary with a
// summary, "compactionSummary" for compactions; "" when none.
func (e *Entry) Role() string { return e.nm().role }

// StopReason is an assistant message's stopReason.
func (e *Entry) StopReason() string { return e.nm().stopReason }

// Provider is an assistant's provider, or a model_change's.
func (e *Entry) Provider() string { return e.nm().provider }

// Model is an assistant's model, or a model_change's modelId.
func (e *Entry) Model() string { return e.nm().model }

// ToolName is a toolResult's toolName.
func (e *Entry) ToolName() string { return e.nm().toolName }

// nameTable holds the one copy of each combination of names, up to
// maxNames of them: a file of ever new names then costs a record per
// entry instead of growing the table for the life of the process.
var nameTable = struct {
	sync.Mutex
	m map[names]*names
}{m: map[names]*names{}}

const maxNames = 1 << 16

// internNames is the shared copy of n (nil for no names).
func internNames(n names) *names {
	if n == (names{}) {
		return nil
	}
	nameTable.Lock()
	defer nameTable.Unlock()
	if v, ok := nameTable.m[n]; ok {
		return v
	}
	v := &n
	if len(nameTable.m) < maxNames {
		nameTable.m[n] = v
	}
	return v
}

// rareFields are fields only compactions, branch summaries, labels,
// thinking-level changes and custom entries carry: kept out of Entry, they
// cost one pointer on the hundreds of thousands of messages of a large
// session instead of 96 bytes.
type rareFields struct {
	// compaction entries.
	firstKeptEntryID    string
	firstKeptEntryIndex int // v1; -1 when absent
	tokensBefore        int
	fromHook            bool
	// branch_summary, label, thinking_level_change, custom/custom_message.
	fromID        string
	targetID      string
	thinkingLevel string
	customType    string
	// timestamp is a timestamp not in ts.
	timestamp string
	// system is the system message pi 1.6.0 replays from a compaction
	// (its systemMessage): an entry of its own, in no session's entries,
	// that the context rebuild places beside the summary.
	system *Entry
	// replacement is a context_edit's (pi 1.6.0) new content; replaceNull:
	// the edit removes its target from the context.
	replacement *contentStatsT
	replaceNull bool
	// replayed marks the system message entry made of a compaction's
	// systemMessage (its line is the compaction's).
	replayed bool
}

// placeSystem gives the system message a compaction replays the place of
// its line (what reports cite).
func (e *Entry) placeSystem() {
	if e.rare != nil && e.rare.system != nil {
		e.rare.system.Line, e.rare.system.Offset, e.rare.system.Length, e.rare.system.Index = e.Line, e.Offset, e.Length, e.Index
	}
}

// SystemMessage is the system message a pi 1.6.0 compaction replays before
// its summary (nil when it has none): an entry in no session's entries.
func (e *Entry) SystemMessage() *Entry { return e.rareOrNone().system }

// more returns e's rare fields, allocating them the first time.
func (e *Entry) more() *rareFields {
	if e.rare == nil {
		e.rare = &rareFields{firstKeptEntryIndex: -1}
	}
	return e.rare
}

// noRare is what the rare-field methods read on an entry without any.
var noRare = rareFields{firstKeptEntryIndex: -1}

func (e *Entry) rareOrNone() *rareFields {
	if e.rare == nil {
		return &noRare
	}
	return e.rare
}

// Timestamp is the entry's timestamp as written, "" when absent.
func (e *Entry) Timestamp() string {
	if e.ts != 0 {
		return time.UnixMilli(e.ts).UTC().Format(isoMillis)
	}
	return e.rareOrNone().timestamp
}

// setTimestamp stores the timestamp s (the last one read wins).
func (e *Entry) setTimestamp(s string) {
	e.ts = 0
	if ms, ok := parseISOMillis(s); ok && ms != 0 {
		e.ts = ms
	} else if s != "" || e.rare != nil {
		e.more().timestamp = s
	}
}

// setTimestampMS is setTimestamp of ms written in pi's form (isoMillis),
// without writing it: parseISOMillis gives ms back.
func (e *Entry) setTimestampMS(ms int64) {
	if ms == 0 {
		e.setTimestamp(time.UnixMilli(0).UTC().Format(isoMillis))
		return
	}
	e.ts = ms
}

// isoMillis is the layout of the timestamps pi writes.
const isoMillis = "2006-01-02T15:04:05.000Z"

// parseISOMillis reads s as epoch ms when it has exactly the isoMillis
// shape with every field in range, so that formatting the result gives s
// back; false otherwise. Hand-rolled: it runs on every line of a session.
func parseISOMillis(s string) (int64, bool) {
	if len(s) != len(isoMillis) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
		s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return 0, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec, ms := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || ms < 0 ||
		d > daysIn(time.Month(mo), y) {
		return 0, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ms*1e6, time.UTC).UnixMilli(), true
}

// daysIn is the number of days of month m of year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// FirstKeptEntryID is a compaction's firstKeptEntryId (for v1 files, the id
// of the entry its firstKeptEntryIndex names).
func (e *Entry) FirstKeptEntryID() string { return e.rareOrNone().firstKeptEntryID }

// FirstKeptEntryIndex is a v1 compaction's firstKeptEntryIndex, -1 when
// absent.
func (e *Entry) FirstKeptEntryIndex() int { return e.rareOrNone().firstKeptEntryIndex }

// TokensBefore is a compaction's tokensBefore.
func (e *Entry) TokensBefore() int { return e.rareOrNone().tokensBefore }

// FromHook is a compaction's fromHook.
func (e *Entry) FromHook() bool { return e.rareOrNone().fromHook }

// FromID is a branch summary's fromId.
func (e *Entry) FromID() string { return e.rareOrNone().fromID }

// TargetID is a label's targetId.
func (e *Entry) TargetID() string { return e.rareOrNone().targetID }

// ThinkingLevel is a thinking_level_change's thinkingLevel.
func (e *Entry) ThinkingLevel() string { return e.rareOrNone().thinkingLevel }

// CustomType is a custom or custom_message entry's customType, or a custom
// message's.
func (e *Entry) CustomType() string { return e.rareOrNone().customType }

// PlannedCompaction is the entry a compaction keeping the entry
// firstKeptID, with a summary of chars UTF-16 code units, will be once
// appended: planners rebuild the context it leaves before writing it.
func PlannedCompaction(firstKeptID string, chars int) *Entry {
	e := &Entry{Index: -1, names: internNames(names{typ: "compaction", role: "compactionSummary"}),
		Chars: chars, rare: &rareFields{firstKeptEntryID: firstKeptID, firstKeptEntryIndex: -1}}
	e.setID("\x00ctxtool-new")
	return e
}

// ProducesMessage reports whether pi turns the entry into a context message
// (Role then names it; compactions excluded: only the one in force is
// emitted, as the summary). The one copy of the rule for the context
// rebuild, estimate, compaction and lint.
func (e *Entry) ProducesMessage() bool {
	switch e.Type() {
	case "message", "custom_message":
		return true
	case "branch_summary":
		return e.Role() == "branchSummary"
	}
	return false
}

// Tokens is pi's estimateTokens for the message this entry produces.
func (e *Entry) Tokens() int { return (e.Chars + 3) / 4 }

// Usage is an assistant message's provider-reported token usage.
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens"`
}

// ContextTokens is pi's calculateContextTokens: totalTokens, or the sum of
// the parts when totalTokens is missing or zero (older files).
func (u *Usage) ContextTokens() int {
	if u == nil {
		return 0
	}
	if u.TotalTokens != 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// UsageTrusted reports whether pi trusts this assistant's usage: it has one
// and did not stop with an error or abort.
func (e *Entry) UsageTrusted() bool {
	return e.Role() == "assistant" && e.Usage != nil && e.StopReason() != "aborted" && e.StopReason() != "error"
}

// Header is the first line of a session file.
type Header struct {
	Line          int
	Raw           []byte
	ID            string
	Version       int // 1 when absent
	Timestamp     string
	Cwd           string
	ParentSession string
	// v1 extras.
	Provider      string
	ModelID       string
	ThinkingLevel string
	// ContextWindow is the window a translated transcript states (Codex's
	// model_context_window; foreign.go), 0 for pi files.
	ContextWindow int
	// WindowSource says what in the file states it.
	WindowSource string
}

// Malformed is a line pi's loader would drop because JSON.parse fails on it.
// Its JSON form is the malformedLines element of every command's output.
type Malformed struct {
	Line   int    `json:"line"`
	Offset int64  `json:"-"`
	Bytes  int    `json:"bytes"`
	Err    string `json:"error"`
	// Objects lists "type" (or "type/role" for messages) of each JSON value
	// when the line is several complete values glued together, e.g. after an
	// append to a file that lacked its final newline.
	Objects []string `json:"objects,omitempty"`
	// Truncated is true for a last line that ends without a newline and
	// does not parse: a write torn by a crash.
	Truncated bool `json:"truncated,omitempty"`
}

// DiagnoseLine reports what is wrong with one line (without its newline;
// endsNL says whether it had one) that pi's loader would drop, and false
// when JSON.parse accepts it. Readers with their own line loop (recall)
// describe bad lines with it exactly as Load does.
func DiagnoseLine(line []byte, endsNL bool) (Malformed, bool) {
	pl := parseLine(line)
	if pl.kind != kindMalformed {
		return Malformed{}, false
	}
	return diagnose(pl, line, endsNL), true
}

func diagnose(pl parsedLine, raw []byte, endsNL bool) Malformed {
	m := Malformed{Bytes: len(raw), Err: shortErr(pl.err)}
	m.Objects = describeObjects(raw)
	m.Truncated = !endsNL && m.Objects == nil
	return m
}

// Describe says in a few words what the line is: its size, the parse
// error, and the records glued on it (naming a hidden compaction).
func (m Malformed) Describe() string {
	s := fmt.Sprintf("malformed line (%d bytes, %s)", m.Bytes, m.Err)
	if m.Truncated {
		s = fmt.Sprintf("torn last line (%d bytes without a newline, %s: a write cut short)", m.Bytes, m.Err)
	}
	if len(m.Objects) > 0 {
		s += fmt.Sprintf(": %d JSON records glued on one line (%s)", len(m.Objects), strings.Join(m.Objects, ", "))
		if m.HidesCompaction() {
			s += " — it hides a compaction that pi ignores"
		}
	}
	return s
}

// HidesCompaction reports whether a glued line contains a compaction that pi
// silently ignores.
func (m Malformed) HidesCompaction() bool {
	for _, o := range m.Objects {
		if o == "compaction" {
			return true
		}
	}
	return false
}

// Time is when the entry's message was created: message.timestamp (epoch
// ms; positive values below 1e11 are seconds, as OpenClaw reads them), else
// the entry's ISO timestamp. Zero when neither parses.
func (e *Entry) Time() time.Time {
	if e == nil {
		return time.Time{}
	}
	if ms := e.MsgTimestamp; ms > 0 {
		if ms < 1e11 {
			ms *= 1000
		}
		return time.UnixMilli(int64(ms)).UTC()
	}
	if t, ok := e.TimestampTime(); ok {
		return t.UTC()
	}
	return time.Time{}
}

// TimestampTime is the entry's own timestamp (Timestamp) as a time, false
// when it is absent or does not parse (RFC 3339). Pi's shape comes from the
// epoch ms it is kept as, not formatted and parsed back.
func (e *Entry) TimestampTime() (time.Time, bool) {
	if e.ts != 0 {
		return time.UnixMilli(e.ts).UTC(), true
	}
	t, err := time.Parse(time.RFC3339Nano, e.rareOrNone().timestamp)
	return t, err == nil
}
