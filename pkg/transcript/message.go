package transcript

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Data      string          `json:"data,omitempty"`
	MimeType  string          `json:"mimeType,omitempty"`
}

// Message is the full content of the context message an entry produces.
// Summaries of compaction and branch_summary entries come as role
// "compactionSummary"/"branchSummary" with Summary set.
type Message struct {
	Role    string
	Content []Block
	// ContentIsString is true when content was a plain string (it is then
	// the single text block of Content).
	ContentIsString bool

	ToolCallID string
	ToolName   string
	IsError    bool
	Details    json.RawMessage

	Command            string
	Output             string
	ExitCode           *int
	Cancelled          bool
	Truncated          bool
	ExcludeFromContext bool

	CustomType string
	Summary    string

	API        string
	Provider   string
	Model      string
	Usage      *Usage
	StopReason string
	ErrorMsg   string
	// Timestamp is message.timestamp when it is a number (epoch ms in pi's
	// files), TimestampText when it is a string (an ISO time some writers
	// use).
	Timestamp     float64
	TimestampText string
}

// Text joins the text blocks (for assistants also nothing else).
func (m *Message) Text() string {
	if m.Summary != "" {
		return m.Summary
	}
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolCalls returns the toolCall blocks of an assistant message.
func (m *Message) ToolCalls() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == "toolCall" {
			out = append(out, b)
		}
	}
	return out
}

// Message decodes the full message an entry produces (message,
// custom_message, branch_summary and compaction entries). Other entry types
// give (nil, nil).
func (s *Session) Message(e *Entry) (*Message, error) {
	switch e.Type() {
	case "message", "custom_message", "branch_summary", "compaction":
	default:
		return nil, nil
	}
	if e.Length >= bigLine {
		// The copies of the big line decoded before this one (often the
		// same line, measured and then summarised) are garbage by now, but
		// at GOGC's default the heap holds them until it reaches twice what
		// was live: reading this line too would hold three copies (compact
		// on a 210 MB line: 672 MB peak RSS).
		runtime.GC()
	}
	raw, err := s.Raw(e)
	if err != nil {
		return nil, err
	}
	m, err := decodeMessage(e, raw)
	if len(raw) >= bigLine {
		raw = nil
		runtime.GC() // see load: the line's buffer is garbage now
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", s.File, e.Line, err)
	}
	return m, nil
}

// decodeMessage decodes the message of an entry from its line bytes. It
// reads what JSON.parse accepts — any nesting depth — in one pass over the
// line: strings are decoded straight from it and raw values (tool-call
// arguments, details) are single copies, so a message costs about its line
// once more, not a copy per nesting level. A field of an unexpected type is
// ignored, as pi's code ignores it.
func decodeMessage(e *Entry, line []byte) (*Message, error) {
	var m Message
	if err := decodeInto(e, line, &m, false); err != nil {
		return nil, err
	}
	return &m, nil
}

// DecodeWords decodes into m what decodeMessage would, less what only a
// model or a display reads: the fields modelOnly names are validated but
// not copied, and of the content only text and tool-call blocks are kept,
// in m's own array. A reader of the conversation's words and tool calls
// (the checkpoint builder, on every message of a branch) decodes each
// message into the same m, copying no thinking, usage or details. Tool-call
// arguments are not copied either: they alias line, so they are valid
// only as long as line is (a reader keeps what it reads of them).
func DecodeWords(e *Entry, line []byte, m *Message) error {
	return decodeInto(e, line, m, true)
}

// modelOnly names the fields DecodeWords leaves empty: thinking, image
// data, details, usage, a bash command's output, the provider and model.
func modelOnly(key []byte) bool {
	switch string(key) {
	case "thinking", "data", "mimeType", "details", "usage", "output", "api", "provider", "model", "errorMessage":
		return true
	}
	return false
}

// fields walks the object at the scanner as object does, but in words mode
// (DecodeWords) the fields modelOnly names are skipped, not handed to
// field: the one place that rule is applied, to the entry, the message and
// each content block.
func (sc *scanner) fields(words bool, field func(key []byte) bool) bool {
	if !words {
		return sc.object(field)
	}
	return sc.object(func(key []byte) bool {
		if modelOnly(key) {
			return sc.skip(0)
		}
		return field(key)
	})
}

// decodeInto reads the message object and the content where they are in
// the line (the entry's type says which fields make the message), not
// validated first and read again: a message is read once. Of a repeated
// field the last is kept, as JSON.parse keeps it.
func decodeInto(e *Entry, line []byte, m *Message, words bool) error {
	sc := scanner{b: line}
	sc.ws()
	*m = Message{Content: emptied(m.Content, words)}
	typ := e.Type()
	if e.rare != nil && e.rare.replayed {
		typ = replayedSystem // the compaction line's systemMessage
	}
	wellFormed := sc.fields(words, func(key []byte) bool {
		return sc.entryField(typ, string(key), m, words)
	})
	if !wellFormed {
		return sc.err
	}
	setRole(e.Type(), m)
	return nil
}

// setRole gives the message of an entry of type typ the role it has in the
// context: summaries and custom messages have none of their own, and v2's
// hookMessage reads as custom.
func setRole(typ string, m *Message) {
	switch typ {
	case "compaction":
		m.Role = "compactionSummary"
	case "branch_summary":
		m.Role = "branchSummary"
	case "custom_message":
		m.Role = "custom"
	}
	if m.Role == "hookMessage" {
		m.Role = "custom"
	}
}

// entryField reads the value of an entry's field key into m when it is
// part of the message of an entry of type typ, and skips it otherwise.
func (sc *scanner) entryField(typ, key string, m *Message, words bool) (good bool) {
	switch {
	case key == "systemMessage" && typ == replayedSystem:
		*m = Message{Content: emptied(m.Content, words)}
		good = sc.decodeMessageObject(m, words)
	case key == "message" && !summaryEntry(typ) && typ != replayedSystem:
		*m = Message{Content: emptied(m.Content, words)}
		good = sc.decodeMessageObject(m, words)
	case key == "summary" && (typ == "compaction" || typ == "branch_summary"):
		m.Summary, good = sc.maybeString()
	case key == "details" && summaryEntry(typ):
		m.Details, good = sc.rawCopy()
	case key == "customType" && typ == "custom_message":
		m.CustomType, good = sc.maybeString()
	case key == "content" && typ == "custom_message":
		m.Content, m.ContentIsString = emptied(m.Content, words), false
		good = sc.decodeContent(m, words)
	default:
		good = sc.skip(0)
	}
	return good
}

// replayedSystem is the decoding type of the system message a pi 1.6.0
// compaction replays (Entry.SystemMessage): its line is the compaction's.
const replayedSystem = "compaction/systemMessage"

// summaryEntry: the entry's message is made of its own fields, not of a
// "message" object.
func summaryEntry(typ string) bool {
	return typ == "compaction" || typ == "branch_summary" || typ == "custom_message"
}

// emptied is a content array with nothing in it: DecodeWords reuses it,
// decodeMessage starts from none.
func emptied(c []Block, words bool) []Block {
	if words {
		return c[:0]
	}
	return nil
}

// ParseEntry reads one line as Load does, for a reader that walks the
// lines itself (recall indexes every line of a file, not a session's
// branch): the entry's metadata and the message it produces or carries (a
// message with no role for entries without one). The session header and
// blank lines give nil, nil, true; ok is false for a line JSON.parse
// rejects or that is not an object.
func ParseEntry(line []byte) (e *Entry, m *Message, ok bool) {
	pl := parseLine(line)
	switch pl.kind {
	case kindEntry:
	case kindHeader, kindBlank:
		return nil, nil, true
	default:
		return nil, nil, false
	}
	m, err := decodeMessage(pl.entry, line)
	if err != nil {
		return nil, nil, false
	}
	return pl.entry, m, true
}

// Record is what a reader of an entry's text needs of the entry's own
// fields (ParseRecord).
type Record struct {
	Type, ID string
	// Timestamp is the entry's timestamp as written.
	Timestamp string
}

// TimestampTime is the record's timestamp as a time, as Entry's
// TimestampTime reads it.
func (r Record) TimestampTime() (time.Time, bool) {
	if ms, ok := parseISOMillis(r.Timestamp); ok && ms != 0 {
		return time.UnixMilli(ms).UTC(), true
	}
	t, err := time.Parse(time.RFC3339Nano, r.Timestamp)
	return t, err == nil
}

// ParseRecord is ParseEntry for a reader of the text (recall, which reads
// every line of a file): the entry's type, id and timestamp instead of the
// whole Entry, in one pass over the line where ParseEntry makes two (the
// entry's metadata and sizes, then the message). The header and blank
// lines give a zero Record and a nil message. A line whose message fields
// come before its type, or with two types, takes ParseEntry's way: which
// fields make the message depends on the last type.
func ParseRecord(line []byte) (r Record, m *Message, ok bool) {
	if blank(line) {
		return Record{}, nil, true
	}
	sc := scanner{b: line}
	sc.ws()
	if sc.peek() != '{' {
		return Record{}, nil, false // not an object, or not JSON
	}
	m = &Message{}
	typed, late := false, false
	wellFormed := sc.object(func(key []byte) (good bool) {
		switch string(key) {
		case "type":
			late = late || typed
			typed = true
			r.Type, good = sc.maybeInterned()
		case "id":
			r.ID, good = sc.maybeString()
		case "timestamp":
			r.Timestamp, good = sc.maybeString()
		case "message", "summary", "details", "customType", "content":
			if !typed {
				late = true
				return sc.skip(0)
			}
			good = sc.entryField(r.Type, string(key), m, false)
		default:
			good = sc.skip(0)
		}
		return good
	})
	if sc.ws(); !wellFormed || sc.i != len(sc.b) {
		return Record{}, nil, false
	}
	if late {
		return parseRecordLate(line)
	}
	if r.Type == "session" {
		return Record{}, nil, true
	}
	setRole(r.Type, m)
	return r, m, true
}

// parseRecordLate is ParseRecord through ParseEntry.
func parseRecordLate(line []byte) (Record, *Message, bool) {
	e, m, ok := ParseEntry(line)
	if e == nil {
		return Record{}, nil, ok
	}
	return Record{Type: e.Type(), ID: e.ID(), Timestamp: e.Timestamp()}, m, ok
}

// decodeMessageObject fills m from the message object at the scanner.
func (sc *scanner) decodeMessageObject(m *Message, words bool) bool {
	if sc.peek() != '{' {
		return sc.skip(0) // not an object: an empty message
	}
	return sc.fields(words, func(key []byte) (good bool) {
		switch string(key) {
		case "role":
			m.Role, good = sc.maybeString()
		case "content":
			m.Content, m.ContentIsString = emptied(m.Content, words), false
			good = sc.decodeContent(m, words)
		case "toolCallId":
			m.ToolCallID, good = sc.maybeString()
		case "toolName":
			m.ToolName, good = sc.maybeString()
		case "isError":
			m.IsError, good = sc.maybeBool()
		case "details":
			m.Details, good = sc.rawCopy()
		case "command":
			m.Command, good = sc.maybeString()
		case "output":
			m.Output, good = sc.maybeString()
		case "exitCode":
			if c := sc.peek(); c == '-' || (c >= '0' && c <= '9') {
				var n int
				n, good = sc.maybeInt("exitCode")
				m.ExitCode = &n
			} else {
				m.ExitCode = nil
				good = sc.skip(0)
			}
		case "cancelled":
			m.Cancelled, good = sc.maybeBool()
		case "truncated":
			m.Truncated, good = sc.maybeBool()
		case "excludeFromContext":
			m.ExcludeFromContext, good = sc.maybeBool()
		case "customType":
			m.CustomType, good = sc.maybeString()
		case "api":
			m.API, good = sc.maybeString()
		case "provider":
			m.Provider, good = sc.maybeString()
		case "model":
			m.Model, good = sc.maybeString()
		case "usage":
			m.Usage, good = sc.usage()
		case "stopReason":
			m.StopReason, good = sc.maybeString()
		case "errorMessage":
			m.ErrorMsg, good = sc.maybeString()
		case "timestamp":
			if sc.peek() == '"' {
				m.TimestampText, good = sc.maybeString()
			} else {
				m.Timestamp, good = sc.maybeNumber()
			}
		default:
			good = sc.skip(0)
		}
		return good
	})
}

// decodeContent reads the content value at the scanner into m (its
// Content emptied): a string (one text block) or an array of blocks, of
// which DecodeWords keeps only text and tool calls.
func (sc *scanner) decodeContent(m *Message, words bool) bool {
	switch sc.peek() {
	case '"':
		t, ok := sc.maybeString()
		if !ok {
			return false
		}
		m.ContentIsString = true
		m.Content = append(m.Content, Block{Type: "text", Text: t})
		return true
	case '[':
		if m.Content == nil {
			m.Content = []Block{}
		}
	default:
		return sc.skip(0)
	}
	first := true
	for {
		ok, done := sc.arrNext(&first)
		if !ok || done {
			return ok
		}
		if sc.peek() != '{' {
			if !sc.skip(0) {
				return false
			}
			if !words {
				m.Content = append(m.Content, Block{})
			}
			continue
		}
		var b Block
		if !sc.fields(words, func(key []byte) bool { return sc.blockField(key, &b, words) }) {
			return false
		}
		if !words || b.Type == "text" || b.Type == "toolCall" {
			m.Content = append(m.Content, b)
		}
	}
}

// blockField reads one field of a content block into b.
func (sc *scanner) blockField(key []byte, b *Block, words bool) (good bool) {
	switch string(key) {
	case "type":
		b.Type, good = sc.maybeString()
	case "text":
		b.Text, good = sc.maybeString()
	case "thinking":
		b.Thinking, good = sc.maybeString()
	case "id":
		b.ID, good = sc.maybeString()
	case "name":
		b.Name, good = sc.maybeString()
	case "arguments":
		if words {
			b.Arguments, good = sc.span()
		} else {
			b.Arguments, good = sc.rawCopy()
		}
	case "data":
		b.Data, good = sc.maybeString()
	case "mimeType":
		b.MimeType, good = sc.maybeString()
	default:
		good = sc.skip(0)
	}
	return good
}
