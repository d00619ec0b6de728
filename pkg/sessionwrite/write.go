package sessionwrite

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Writer builds new entries for a session in the file's own format version:
// v2/v3 entries get fresh 8-hex ids chained from the current leaf; v1
// entries get no ids and point at kept entries by array index.
type Writer struct {
	s      *transcript.Session
	parent string
	ids    map[string]bool
	index  int // pi array index of the next appended record
	// Now is the clock for timestamps; tests may replace it.
	Now func() time.Time
}

// NewWriter starts appending after the session's current leaf.
func NewWriter(s *transcript.Session) *Writer {
	w := &Writer{s: s, ids: map[string]bool{}, Now: time.Now}
	if leaf := s.Leaf(); leaf != nil && s.Version >= 2 {
		w.parent = leaf.ID()
	}
	last := 0
	if n := len(s.Entries); n > 0 {
		last = s.Entries[n-1].Index
	}
	w.index = last + 1
	return w
}

func (w *Writer) newID() (string, error) {
	var b [4]byte
	for i := 0; i < 100; i++ {
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := hex.EncodeToString(b[:])
		if !w.ids[id] && w.s.ByID(id) == nil {
			w.ids[id] = true
			return id, nil
		}
	}
	return "", fmt.Errorf("could not find a free entry id")
}

func (w *Writer) timestamp() string {
	return w.Now().UTC().Format("2006-01-02T15:04:05.000Z")
}

// CompactionSpec describes a compaction entry to append.
type CompactionSpec struct {
	Summary string
	// FirstKept is the first entry kept verbatim; nil keeps nothing from
	// before the compaction.
	FirstKept    *transcript.Entry
	TokensBefore int
	Details      any
	FromHook     bool
}

type compactionV3 struct {
	Type             string  `json:"type"`
	ID               string  `json:"id"`
	ParentID         *string `json:"parentId"`
	Timestamp        string  `json:"timestamp"`
	Summary          string  `json:"summary"`
	FirstKeptEntryID string  `json:"firstKeptEntryId"`
	TokensBefore     int     `json:"tokensBefore"`
	Details          any     `json:"details,omitempty"`
	FromHook         bool    `json:"fromHook"`
	// SystemMessage is the system prompt the summary's context keeps
	// (pi 1.6.0's compactions; Session.CurrentSystemMessage).
	SystemMessage json.RawMessage `json:"systemMessage,omitempty"`
}

type compactionV1 struct {
	Type                string `json:"type"`
	Timestamp           string `json:"timestamp"`
	Summary             string `json:"summary"`
	FirstKeptEntryIndex int    `json:"firstKeptEntryIndex"`
	TokensBefore        int    `json:"tokensBefore"`
	Details             any    `json:"details,omitempty"`
	FromHook            bool   `json:"fromHook"`
}

// Appended is a new line and the entry it will become.
type Appended struct {
	Line  []byte
	ID    string // "" for v1
	Index int    // pi array index
}

// Compaction builds a compaction entry line.
func (w *Writer) Compaction(c CompactionSpec) (Appended, error) {
	ts := w.timestamp()
	if w.s.Version < 2 {
		idx := 0 // index 0 is the header: pi then keeps nothing
		if c.FirstKept != nil {
			idx = c.FirstKept.Index
		}
		line, err := transcript.MarshalJS(compactionV1{Type: "compaction", Timestamp: ts, Summary: c.Summary,
			FirstKeptEntryIndex: idx, TokensBefore: c.TokensBefore, Details: c.Details, FromHook: c.FromHook})
		return w.done(line, "", err)
	}
	id, err := w.newID()
	if err != nil {
		return Appended{}, err
	}
	kept := ""
	if c.FirstKept != nil {
		kept = c.FirstKept.ID()
	}
	sys, err := w.systemMessage(ts)
	if err != nil {
		return Appended{}, err
	}
	line, err := transcript.MarshalJS(compactionV3{Type: "compaction", ID: id, ParentID: w.parentPtr(), Timestamp: ts,
		Summary: c.Summary, FirstKeptEntryID: kept, TokensBefore: c.TokensBefore, Details: c.Details, FromHook: c.FromHook,
		SystemMessage: sys})
	return w.done(line, id, err)
}

func (w *Writer) parentPtr() *string {
	if w.parent == "" {
		return nil
	}
	p := w.parent
	return &p
}

func (w *Writer) done(line []byte, id string, err error) (Appended, error) {
	if err != nil {
		return Appended{}, err
	}
	a := Appended{Line: line, ID: id, Index: w.index}
	w.index++
	if id != "" {
		w.parent = id
	}
	return a, nil
}

type customMessageV3 struct {
	Type       string  `json:"type"`
	CustomType string  `json:"customType"`
	Content    any     `json:"content"`
	Display    bool    `json:"display"`
	Details    any     `json:"details,omitempty"`
	ID         string  `json:"id"`
	ParentID   *string `json:"parentId"`
	Timestamp  string  `json:"timestamp"`
}

type customMessageV1 struct {
	Type       string `json:"type"`
	CustomType string `json:"customType"`
	Content    any    `json:"content"`
	Display    bool   `json:"display"`
	Details    any    `json:"details,omitempty"`
	Timestamp  string `json:"timestamp"`
}

// CustomMessage builds a custom_message entry line: extension-injected
// context that pi sends to the model as a user message.
func (w *Writer) CustomMessage(customType string, content any, display bool, details any) (Appended, error) {
	ts := w.timestamp()
	if w.s.Version < 2 {
		line, err := transcript.MarshalJS(customMessageV1{Type: "custom_message", CustomType: customType, Content: content,
			Display: display, Details: details, Timestamp: ts})
		return w.done(line, "", err)
	}
	id, err := w.newID()
	if err != nil {
		return Appended{}, err
	}
	line, err := transcript.MarshalJS(customMessageV3{Type: "custom_message", CustomType: customType, Content: content,
		Display: display, Details: details, ID: id, ParentID: w.parentPtr(), Timestamp: ts})
	return w.done(line, id, err)
}

type toolResultMessage struct {
	Role       string             `json:"role"`
	ToolCallID string             `json:"toolCallId"`
	ToolName   string             `json:"toolName"`
	Content    []transcript.Block `json:"content"`
	IsError    bool               `json:"isError"`
	Timestamp  int64              `json:"timestamp"`
}

type messageV3 struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	ParentID  *string `json:"parentId"`
	Timestamp string  `json:"timestamp"`
	Message   any     `json:"message"`
}

type messageV1 struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Message   any    `json:"message"`
}

// ToolResult builds a toolResult message entry answering a tool call with
// a single text block, in pi's key order (what pi's provider layer
// synthesises in memory for an unanswered call: "No result provided",
// isError true).
func (w *Writer) ToolResult(callID, toolName, text string, isError bool) (Appended, error) {
	now := w.Now()
	msg := toolResultMessage{Role: "toolResult", ToolCallID: callID, ToolName: toolName,
		Content: []transcript.Block{{Type: "text", Text: text}}, IsError: isError, Timestamp: now.UnixMilli()}
	ts := w.timestamp()
	if w.s.Version < 2 {
		line, err := transcript.MarshalJS(messageV1{Type: "message", Timestamp: ts, Message: msg})
		return w.done(line, "", err)
	}
	id, err := w.newID()
	if err != nil {
		return Appended{}, err
	}
	line, err := transcript.MarshalJS(messageV3{Type: "message", ID: id, ParentID: w.parentPtr(), Timestamp: ts, Message: msg})
	return w.done(line, id, err)
}

// systemMessage is what pi 1.6.0's appendCompaction stores with a
// compaction: the current system message of the context the writer
// appends to, stamped with the compaction's time (nil without one). Only
// when the writer appends after the session's leaf: the context is then
// the session's.
func (w *Writer) systemMessage(ts string) (json.RawMessage, error) {
	leaf := w.s.Leaf()
	if leaf == nil || leaf.ID() != w.parent {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, nil
	}
	return w.s.CurrentSystemMessage(w.s.Context(), t.UnixMilli())
}
