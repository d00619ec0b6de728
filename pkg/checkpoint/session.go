package checkpoint

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// branch is Take's one pass over the session's branch (ctx.Path, root →
// leaf): each message is decoded once and folded in, and, when the
// capture reads the same lines (at first, the whole file), handed to it
// too. The capture reads lines in file order, which a branch follows in a
// file pi appends to; where it does not, the capture decodes for itself.
type branch struct {
	s    *transcript.Session
	path []*transcript.Entry
	next int // path[next] is the next entry to fold
	fold *folder
	// recent are the messages last decoded, the branch's and the
	// capture's (which reads a tool result's call and a reply's answer,
	// just before them).
	recent recent
	lines  lineWindow
	// decoded is the message last decoded (DecodeWords), its content
	// array reused from one message to the next.
	decoded transcript.Message
	// msg is what the builder reads of the message last read (message),
	// reused too: a Message on the heap per message was a sixth of what
	// folding a 1 GB branch allocated.
	msg Message
}

// lineWindow reads entries' lines through one buffer filled by large
// reads: the branch and the capture read lines in file order, and a read
// into a new buffer per message (Session.Raw) was most of a checkpoint's
// allocation at 1 GB.
type lineWindow struct {
	buf []byte
	off int64 // the session offset of buf[0]
}

// windowBytes is a window's read; a longer line is read on its own.
const windowBytes = 1 << 20

// line is e's line, valid until the next call.
func (w *lineWindow) line(s *transcript.Session, e *transcript.Entry) ([]byte, error) {
	end := e.Offset + int64(e.Length)
	if e.Offset < w.off || end > w.off+int64(len(w.buf)) {
		if w.buf == nil {
			w.buf = make([]byte, windowBytes)
		}
		n, err := s.ReadAt(w.buf[:cap(w.buf)], e.Offset)
		if n < e.Length {
			w.buf = w.buf[:0]
			return nil, err
		}
		w.buf, w.off = w.buf[:n], e.Offset
	}
	return w.buf[e.Offset-w.off : end-w.off], nil
}

// recent is a cache of the messages last decoded, of a size that does not
// grow with the session: copies in a ring, so a message it returns is
// valid until recentMessages more are put (what is read after more
// decoding is copied first). Decode errors are kept apart, to be reported
// once.
type recent struct {
	at     map[*transcript.Entry]int // the entry's place in ring
	ring   []recentMsg
	pos    int
	failed map[*transcript.Entry]bool
}

// recentMsg is one entry's message in the ring (none: it has none).
type recentMsg struct {
	e    *transcript.Entry
	m    Message
	none bool
}

// recentMessages bounds recent.
const recentMessages = 256

func (r *recent) get(e *transcript.Entry) (*Message, bool) {
	i, ok := r.at[e]
	if !ok {
		return nil, r.failed[e]
	}
	if r.ring[i].none {
		return nil, true
	}
	return &r.ring[i].m, true
}

// put keeps a copy of m (nil: e has no message), forgetting the oldest
// message when full, and returns the copy.
func (r *recent) put(e *transcript.Entry, m *Message) *Message {
	if r.at == nil {
		r.at, r.ring = map[*transcript.Entry]int{}, make([]recentMsg, recentMessages)
	}
	if _, ok := r.at[e]; ok {
		kept, _ := r.get(e)
		return kept
	}
	slot := &r.ring[r.pos]
	if slot.e != nil {
		delete(r.at, slot.e)
	}
	*slot = recentMsg{e: e, none: m == nil}
	r.at[e] = r.pos
	r.pos = (r.pos + 1) % len(r.ring)
	if m == nil {
		return nil
	}
	slot.m = *m
	return &slot.m
}

func (r *recent) fail(e *transcript.Entry) {
	if r.failed == nil {
		r.failed = map[*transcript.Entry]bool{}
	}
	r.failed[e] = true
}

// newBranch is the builder Input of the session's context, less the
// messages, and the branch that folds them in. A message on the branch
// that cannot be read (an oversized line) is an error before anything is
// written.
func newBranch(s *transcript.Session, ctx *transcript.Context) (Input, *branch, error) {
	// The absolute path: the checkpoint says which file it came from
	// wherever restore is run.
	in := Input{SessionFile: s.File, SessionID: s.Header.ID}
	if s.File != "-" {
		if abs, err := filepath.Abs(s.File); err == nil {
			in.SessionFile = abs
		}
	}
	for _, e := range ctx.Path {
		if e.Oversized && (e.Type() == "message" || e.Type() == "custom_message") {
			_, err := decodeMessage(s, e)
			return in, nil, err
		}
	}
	b := &branch{s: s, path: withHidden(s, ctx.Path), fold: newFolder()}
	for _, e := range b.path {
		if e.Type() == "message" && e.Role() == "toolResult" {
			b.fold.result(e.ToolCallID, e.ToolName(), e.IsError)
		}
	}
	in.SplitTurn = splitTurn(ctx)
	for _, e := range s.Entries {
		if e.Type() == "compaction" {
			in.CompactionCount++
		}
	}
	return in, b, nil
}

// withHidden is path with, before it, what a compaction that starts a
// new root hid. pi chains a compaction to the entry before it, so its
// branch holds the messages it summarised; Claude Code's compact_boundary
// (parentUuid null) and Codex's compacted record replace the history, and
// pkg/formats makes them roots: the branch then began at the summary, and
// a checkpoint named no file, tool or user turn from before the last
// compaction once the capture had moved past them (a second checkpoint,
// or a capture after the first). The branch a compaction hid is the path
// to the entry before it in the file (the leaf it summarised: Claude
// Code's logicalParentUuid); compactions in a row are followed back.
// Oversized entries of the hidden part are left out (the live branch's
// are an error, as before).
func withHidden(s *transcript.Session, path []*transcript.Entry) []*transcript.Entry {
	pos := -1 // where the last root compaction was found in s.Entries
	for len(path) > 0 {
		root := path[0]
		if root.Type() != "compaction" || root.ParentID() != "" {
			return path
		}
		i := pos
		if i < 0 || i >= len(s.Entries) || s.Entries[i] != root {
			i = entryPos(s, root)
		}
		if i <= 0 {
			return path
		}
		hidden := s.PathTo(s.Entries[i-1])
		kept := make([]*transcript.Entry, 0, len(hidden)+len(path))
		for _, e := range hidden {
			if e.Line < root.Line && !e.Oversized {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 || kept[0] == root {
			return path
		}
		path = append(kept, path...)
		pos = entryPos(s, path[0])
	}
	return path
}

// entryPos is e's position in s.Entries (file order), -1 if absent.
func entryPos(s *transcript.Session, e *transcript.Entry) int {
	i := sort.Search(len(s.Entries), func(i int) bool { return s.Entries[i].Line >= e.Line })
	for ; i < len(s.Entries) && s.Entries[i].Line == e.Line; i++ {
		if s.Entries[i] == e {
			return i
		}
	}
	for i, x := range s.Entries { // lines out of order: look everywhere
		if x == e {
			return i
		}
	}
	return -1
}

// through folds the branch up to line (file order).
func (b *branch) through(e *transcript.Entry) error {
	for b.next < len(b.path) && b.path[b.next].Line <= e.Line {
		b.next++
		if err := b.step(b.path[b.next-1]); err != nil {
			return err
		}
	}
	return nil
}

// rest folds what is left of the branch, then reads again the arguments
// of the calls the checkpoint may show, which keep did not keep.
func (b *branch) rest() error {
	for ; b.next < len(b.path); b.next++ {
		if err := b.step(b.path[b.next]); err != nil {
			return err
		}
	}
	// The shown calls are mostly one message's (the trailing one's, and
	// the last call a copy of one of them): each line is decoded once.
	var from *transcript.Entry
	var m *Message
	for _, tc := range b.fold.shownCalls() {
		if tc.from == nil || tc.Args != nil {
			continue
		}
		if tc.from != from {
			var err error
			if m, err = decodeMessage(b.s, tc.from); err != nil {
				return err
			}
			from = tc.from
		}
		if m != nil && tc.nth < len(m.ToolCalls) {
			tc.Args = m.ToolCalls[tc.nth].Args
		}
	}
	return nil
}

// step folds one branch entry in: a message, or a compaction's file lists.
func (b *branch) step(e *transcript.Entry) error {
	switch e.Type() {
	case "message", "custom_message":
	case "compaction":
		b.fold.compaction(compactionFiles(b.s, e))
		return nil
	default:
		return nil
	}
	m, err := b.message(e)
	if err != nil {
		return err
	}
	if m != nil {
		b.fold.add(m)
	}
	b.recent.put(e, m)
	return nil
}

// message decodes a message or custom_message entry into what the
// builder reads (nil when the entry produces no message), valid until the
// next call. The builder and the incremental capture share it, so both
// see the same text.
func (b *branch) message(e *transcript.Entry) (*Message, error) {
	if e.Type() == "message" && e.Role() == "toolResult" && !e.IsError && !e.Oversized {
		// Of a successful tool result only what the entry already holds is
		// read (slimText drops its text): decoding every tool output was
		// most of a checkpoint's CPU.
		b.msg = Message{EntryID: e.ID(), Role: e.Role(), ToolCallID: e.ToolCallID, ToolName: e.ToolName(), Time: e.Time()}
		return &b.msg, nil
	}
	if (e.Type() == "message" || e.Type() == "custom_message") && !e.Oversized && e.Length <= windowBytes {
		if line, err := b.lines.line(b.s, e); err == nil {
			if transcript.DecodeWords(e, line, &b.decoded) == nil {
				b.msg = fromTranscript(e, &b.decoded)
				keep(e, &b.msg)
				return &b.msg, nil
			}
		}
	}
	// Read on its own, a long line is garbage once decoded, and what
	// cannot be read or decoded is reported as Session.Message says it.
	return decodeMessage(b.s, e)
}

// keep reads the facts of m's tool calls, whose arguments alias the line
// DecodeWords read, and drops the arguments: a copy of every call's
// arguments was a third of what folding a 1 GB branch allocated, and of
// all the calls only the few the checkpoint shows (folder.shownCalls) need
// them again, read again from e's line at the end.
func keep(e *transcript.Entry, m *Message) {
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		tc.facts()
		tc.Args, tc.from, tc.nth = nil, e, i
	}
}

// decodeMessage is message from Session.Message, every field decoded.
func decodeMessage(s *transcript.Session, e *transcript.Entry) (*Message, error) {
	m, err := s.Message(e)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", s.File, e.Line, err)
	}
	if m == nil {
		return nil, nil
	}
	msg := fromTranscript(e, m)
	return &msg, nil
}

// fromTranscript is what the builder reads of a decoded message. Its tool
// calls are a new slice, which copies of the message share. Text and
// arguments are redacted here, before any gist cuts a secret in two (a
// half secret is no longer recognised, yet still half given away).
func fromTranscript(e *transcript.Entry, m *transcript.Message) Message {
	msg := Message{
		EntryID: e.ID(), Role: m.Role, CustomType: m.CustomType, Text: secrets.Redact(m.Text()),
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError, StopReason: m.StopReason,
		Time: e.Time(),
	}
	if e.Type() == "custom_message" {
		msg.Role = "custom"
	}
	if m.Role == "bashExecution" {
		msg.Text = "$ " + secrets.Redact(m.Command)
	}
	if m.Role == "user" {
		// the user's words only: an OpenClaw envelope is stripped, and an
		// injected prompt (heartbeat, memory flush, task notification) is
		// no user turn — the topic detector compaction's summaries use
		text, injected := facts.CleanUserText(msg.Text)
		if injected {
			text = ""
		}
		msg.Text = text
	}
	// The calls' slice is made to size: grown by append, it was a tenth of
	// what folding a 1 GB branch allocated.
	calls := 0
	for _, b := range m.Content {
		if b.Type == "toolCall" {
			calls++
		}
	}
	if calls > 0 {
		msg.ToolCalls = make([]ToolCall, 0, calls)
	}
	for _, b := range m.Content {
		if b.Type == "toolCall" {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: secrets.RedactJSON(b.Arguments), scanned: true})
		}
	}
	return msg
}

// splitTurn: the compaction in force kept a turn from its middle (the first
// kept entry is not a user message, pi's isSplitTurn) and nothing has been
// said since, so the turn it cut is still the one in progress.
func splitTurn(ctx *transcript.Context) bool {
	if ctx.Compaction == nil || ctx.KeptStart < 0 || ctx.KeptStart >= len(ctx.Path) {
		return false
	}
	if ctx.Path[ctx.KeptStart].Role() == "user" {
		return false
	}
	for _, e := range ctx.Path[ctx.CompactionIndex+1:] {
		if e.Role() != "" {
			return false
		}
	}
	return true
}

// compactionFiles reads pi's details {readFiles, modifiedFiles} of a compaction.
func compactionFiles(s *transcript.Session, e *transcript.Entry) CompactionInfo {
	raw, err := s.Raw(e)
	if err != nil {
		return CompactionInfo{}
	}
	var c struct {
		Details struct {
			ReadFiles     []string `json:"readFiles"`
			ModifiedFiles []string `json:"modifiedFiles"`
		} `json:"details"`
	}
	_ = json.Unmarshal(raw, &c) // details are free-form; anything else means no files
	return CompactionInfo{ReadFiles: c.Details.ReadFiles, ModifiedFiles: c.Details.ModifiedFiles}
}
