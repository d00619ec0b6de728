package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The incremental capture of docs/design/checkpoints.md for a command line: OpenClaw's
// context-manager extension records state on every tool_result and context
// event; ctxtool gets the same effect by reading, each time it runs, the
// session lines appended since it last ran (from a cron job or a hook) and
// applying layers A and B to them. What it records lives in the state files
// until the next checkpoint bundles and resets them, so a session that is
// reset, rewritten or switched to another branch keeps what was captured.

// captureFile remembers how far the capture has read (one per session key,
// next to the state files; ResetState leaves it alone).
const captureFile = "capture.json"

// DefaultStateLockWait is how long Capture and Take wait for another capture
// or checkpoint of the same session key to finish.
const DefaultStateLockWait = 10 * time.Second

// maxCallWalk bounds the walk from a tool result back to its call, so a
// session full of orphaned results stays linear.
const maxCallWalk = 1000

// captureMark is capture.json: the part of the session file already
// captured. The hash of the last captured line tells an append (the line is
// still there, unchanged) from a rewrite or truncation (it is not).
type captureMark struct {
	File       string `json:"file"`       // absolute path of the session file
	Offset     int64  `json:"offset"`     // end of the last captured line, newline included
	Line       int    `json:"line"`       // physical lines captured
	LineOffset int64  `json:"lineOffset"` // start of the last captured line
	LineHash   string `json:"lineHash"`   // sha256 (hex) of that line without its newline
	CapturedAt string `json:"capturedAt"`
}

// CaptureOptions configures Capture (checkpoint --capture).
type CaptureOptions struct {
	File       string
	SessionKey string // "" = KeyFromFile
	Store      *Store
	Now        func() time.Time // stamps capture.json (nil: time.Now)
	Wait       time.Duration    // state lock wait (≤ 0: DefaultStateLockWait)
}

// CaptureResult is the outcome; its JSON is the output line of
// checkpoint --capture.
type CaptureResult struct {
	File       string `json:"file"`
	SessionKey string `json:"sessionKey"`
	// Captured: complete lines were read and applied to the state files.
	Captured bool `json:"captured"`
	NewLines int  `json:"newLines"`
	// FromLine..ToLine are the physical lines read (1-based, inclusive).
	FromLine    int `json:"fromLine,omitempty"`
	ToLine      int `json:"toLine,omitempty"`
	Decisions   int `json:"decisions"`   // decisions added to decisions.json
	ToolResults int `json:"toolResults"` // tool results read (layer A)
	ToolErrors  int `json:"toolErrors"`  // of which failed
	// Malformed counts lines that are not session entries (skipped).
	Malformed int `json:"malformed,omitempty"`
	// MalformedLines are the lines of the range pi drops (reported as
	// every command reports them).
	MalformedLines []transcript.Malformed `json:"malformedLines,omitempty"`
	// Restarted: the file was new to the capture, or changed other than
	// by appending, so reading started over (Reason says from where).
	Restarted bool     `json:"restarted,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Capture records the incremental state of the lines appended to a session
// since the last capture, under the session key's state lock.
func Capture(o CaptureOptions) (*CaptureResult, error) {
	if o.File == "-" {
		return nil, fmt.Errorf("capturing needs a session file: the capture remembers how far it read, which stdin cannot tell")
	}
	key := o.SessionKey
	if key == "" {
		key = KeyFromFile(o.File)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	back := tailBytes
	s, from, err := loadCaptured(o.Store, key, o.File, back)
	if err != nil {
		return nil, err
	}
	defer func() {
		if s != nil { // nil: a read again failed
			s.Close()
		}
	}()
	lock, err := o.Store.lockState(key, o.Wait)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	if s.Unread > 0 && !markIs(o.Store, key, from) {
		// Another capture moved the mark the lines are numbered from
		// before the lock was taken: read from the one it wrote.
		s.Close()
		if s, _, err = loadCaptured(o.Store, key, o.File, back); err != nil {
			return nil, err
		}
	}
	now := o.Now()
	for {
		res, err := captureSession(o.Store, s, key, now, &branch{s: s})
		if !errors.Is(err, errUnread) {
			return res, err
		}
		// What the lines refer to is further back: read more of them.
		s.Close()
		back *= 4
		if s, _, err = loadCaptured(o.Store, key, o.File, back); err != nil {
			return nil, err
		}
	}
}

// tailBytes is how much of the captured part of the session a capture
// reads again, at first, for what the new lines refer to (a tool result's
// call, the answer a reply follows): reading the whole session again cost
// a hook run after every turn 1.6 s at 1 GB. Tests change it.
var tailBytes int64 = 1 << 20

// errUnread: the lines read do not reach what the new lines refer to, or
// the capture must start over and read the whole session.
var errUnread = errors.New("checkpoint: the capture needs lines it did not read")

// loadCaptured loads what a capture reads: the lines after the capture
// mark m and back bytes before them (transcript.LoadTail) when the mark is
// of this file, else (or when LoadTail cannot) the whole session. The mark
// is read again under the state lock.
func loadCaptured(st *Store, key, file string, back int64) (s *transcript.Session, m *captureMark, err error) {
	m, why := readMark(filepath.Join(st.StateFilesDir(key), captureFile))
	abs, err := filepath.Abs(file)
	if why == "" && err == nil && m.File == abs && back < m.Offset {
		if s, err := transcript.LoadTail(file, m.Offset, m.Line, back); err == nil {
			return s, m, nil
		}
	}
	s, err = transcript.Load(file)
	return s, m, err
}

// markIs reports whether the capture mark is still m.
func markIs(st *Store, key string, m *captureMark) bool {
	now, why := readMark(filepath.Join(st.StateFilesDir(key), captureFile))
	return why == "" && m != nil && *now == *m
}

// lockState takes the lock that keeps a capture and a checkpoint of the
// same key from interleaving (a capture between a checkpoint's read of the
// state and its reset would be lost). It is OpenClaw's lock protocol on
// <state>/context/state/<key>/capture.lock.
func (s *Store) lockState(key string, wait time.Duration) (*filelock.Lock, error) {
	dir := s.StateFilesDir(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w (check --state-dir)", err)
	}
	if wait <= 0 {
		wait = DefaultStateLockWait
	}
	return filelock.Acquire(context.Background(), filepath.Join(dir, "capture"), wait)
}

// captureSession is Capture on a loaded session; the caller holds the state
// lock. The lines are read along with b, Take's pass over the branch (a
// capture alone walks an empty one), so a message on both is decoded once.
func captureSession(st *Store, s *transcript.Session, key string, now time.Time, b *branch) (*CaptureResult, error) {
	res := &CaptureResult{File: s.File, SessionKey: key}
	abs, err := filepath.Abs(s.File)
	if err != nil {
		abs = s.File
	}
	// The session's bytes, not the file's: for a compressed or foreign
	// transcript the offsets are in its pi translation.
	f := io.ReaderAt(s)
	// Only complete lines: a last line without its newline is a write in
	// progress, captured once it ends.
	lines, end := s.Lines, s.Size
	torn := !s.EndsWithNewline && s.Size > 0
	if torn {
		lines--
		nl, err := transcript.LastNewline(f, 0, s.Size)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		end = nl + 1
	}

	markPath := filepath.Join(st.StateFilesDir(key), captureFile)
	mark, why := readMark(markPath)
	if why == "" {
		why = mark.check(f, abs, end, lines)
	}
	if s.Unread > 0 && (why != "" || mark.Line < s.Unread) {
		return nil, errUnread
	}
	from := 0
	if why == "" {
		from = mark.Line
	} else {
		var where string
		from, where = restartLine(st, s, key, lines)
		res.Restarted = true
		res.Reason = why + "; reading " + where
		if why != "first capture of this session key" && why != "first capture of this file" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s", s.File, res.Reason))
		}
	}
	res.NewLines = lines - from
	if res.NewLines > 0 {
		res.FromLine, res.ToLine = from+1, lines
		if err := applyCapture(st, s, key, from, lines, res, b); err != nil {
			return nil, err
		}
		res.Captured = true
	} else if res.Reason == "" {
		res.Reason = "no new complete lines since the last capture"
		if torn {
			res.Reason += " (the last line has no newline yet: a write in progress)"
		}
	}
	if res.Captured || why != "" {
		nm := captureMark{File: abs, Offset: end, Line: lines, CapturedAt: now.UTC().Format(time.RFC3339)}
		if end > 0 {
			if nm.LineOffset, err = transcript.LastNewline(f, 0, end-1); err != nil {
				return nil, fmt.Errorf("%s: %w", s.File, err)
			}
			nm.LineOffset++
			if nm.LineHash, err = hashRange(f, nm.LineOffset, end-1); err != nil {
				return nil, fmt.Errorf("%s: %w", s.File, err)
			}
		}
		data, _ := json.MarshalIndent(nm, "", "  ")
		if err := writeAtomic(markPath, append(data, '\n')); err != nil {
			return nil, fmt.Errorf("write %s: %w", markPath, err)
		}
	}
	return res, nil
}

// readMark loads capture.json; a missing or unreadable one means starting
// over, and the second result says why.
func readMark(path string) (*captureMark, string) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "first capture of this session key"
	}
	var m captureMark
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		return nil, fmt.Sprintf("%s is unreadable (%v)", path, err)
	}
	return &m, ""
}

// check says why the captured part is no longer the start of the file ("":
// it is, only appends happened).
func (m *captureMark) check(f io.ReaderAt, abs string, end int64, lines int) string {
	switch {
	case m.File != abs:
		return "first capture of this file"
	case m.Offset > end || m.Line > lines || m.Offset < 0 || m.LineOffset < 0 || m.LineOffset > m.Offset:
		return "the session file is shorter than what was captured (truncated or rewritten)"
	case m.Offset == 0:
		return ""
	}
	var nl [1]byte
	if _, err := f.ReadAt(nl[:], m.Offset-1); err != nil || nl[0] != '\n' {
		return "the session file was rewritten (the last captured line no longer ends where it did)"
	}
	if h, err := hashRange(f, m.LineOffset, m.Offset-1); err != nil || h != m.LineHash {
		return "the session file was rewritten (the last captured line changed)"
	}
	return ""
}

// restartLine is where reading starts over: after the last entry written
// no later than the latest checkpoint (its state was bundled then), or at
// the start of the file when the key has no checkpoint.
func restartLine(st *Store, s *transcript.Session, key string, lines int) (int, string) {
	cp, _, err := st.Latest(key)
	if err != nil {
		return 0, "from the start of the file"
	}
	created, err := time.Parse(time.RFC3339, cp.Meta.CreatedAt)
	if err != nil {
		return 0, "from the start of the file"
	}
	from := 0
	for _, e := range s.Entries {
		if e.Line > lines {
			break
		}
		if t := e.Time(); !t.IsZero() && !t.After(created) {
			from = e.Line
		}
	}
	return from, fmt.Sprintf("from line %d, after checkpoint %s (%s)", from+1, cp.Meta.CheckpointID, cp.Meta.CreatedAt)
}

// applyCapture reads lines from+1..to and records layers A and B in the state.
func applyCapture(st *Store, s *transcript.Session, key string, from, to int, res *CaptureResult, b *branch) error {
	inRange := func(line int) bool { return line > from && line <= to }
	noteMalformed(s, inRange, res)
	_, warns := st.ReadState(key) // UpdateState drops stale files silently; say so
	res.Warnings = append(res.Warnings, warns...)
	// decode's message is valid until recentMessages more are decoded.
	decode := func(e *transcript.Entry) *Message {
		if m, ok := b.recent.get(e); ok {
			return m
		}
		m, err := b.message(e)
		if err != nil {
			res.Malformed++
			res.Warnings = append(res.Warnings, fmt.Sprintf("skipped: %v", err))
			b.recent.fail(e)
			return nil
		}
		return b.recent.put(e, m)
	}
	up := parents{s: s}
	return st.UpdateState(key, func(state *State) error {
		var topic string // the last user message that names a task
		for at, e := range s.Entries {
			if !inRange(e.Line) {
				continue
			}
			if err := b.through(e); err != nil {
				return err
			}
			if e.Type() != "message" {
				continue
			}
			switch e.Role() {
			case "toolResult":
				m := decode(e)
				if m == nil {
					continue
				}
				res.ToolResults++
				if m.IsError {
					res.ToolErrors++
				}
				result := *m // the walk to its call decodes more
				recordToolResult(state, &up, e, at, &result, decode)
			case "user":
				m := decode(e)
				if m == nil || strings.TrimSpace(m.Text) == "" {
					continue
				}
				// Layer B: the last user message is the current topic; a
				// short reply to a long answer is a decision.
				reply := *m // the walk to the answer decodes more
				if facts.IsAsk(reply.Text) {
					topic = reply.Text // "yes" or "hi" names no task
				}
				if recordDecision(state, &reply, answerBefore(&up, e, at, decode)) {
					res.Decisions++
				}
			}
		}
		if up.short {
			return errUnread // nothing is written
		}
		if topic != "" {
			state.Thread.Topic = gist(topic, TopicChars)
		}
		return nil
	})
}

// noteMalformed counts the malformed and non-object lines the capture
// reads (inRange) in its result.
func noteMalformed(s *transcript.Session, inRange func(line int) bool, res *CaptureResult) {
	for _, m := range s.Malformed {
		if inRange(m.Line) {
			res.Malformed++
			res.MalformedLines = append(res.MalformedLines, m)
		}
	}
	for _, l := range s.NonObjects {
		if inRange(l) {
			res.Malformed++
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s:%d: not a JSON object; skipped", s.File, l))
		}
	}
}

// recordDecision adds to the state the decision a user's reply makes to
// the answer before it (layer B), unless there is none or the state has
// it already; it says whether it added one.
func recordDecision(state *State, reply, answer *Message) bool {
	what, ok := decisionAt(reply, answer)
	if !ok || hasDecision(state.Decisions, what) {
		return false
	}
	when := ""
	if !reply.Time.IsZero() {
		when = reply.Time.UTC().Format(time.RFC3339)
	}
	state.Decisions = append(state.Decisions, StateDecision{What: what, When: when})
	return true
}

// parents walks parent chains for the capture. Of a session loaded by
// LoadTail, a parent that is not among the lines read may be before them:
// short says a walk stopped where the lines read end.
type parents struct {
	s     *transcript.Session
	short bool
}

// of is Session.Parent.
func (up *parents) of(e *transcript.Entry, pos int) (*transcript.Entry, int) {
	p, pos := up.s.Parent(e, pos)
	if p == nil && up.s.Unread > 0 {
		up.short = true
	}
	return p, pos
}

// recordToolResult is layer A for one tool result, e at s.Entries[at]:
// the call it answers (found up the parent chain) gives the name and the
// path arguments.
func recordToolResult(state *State, up *parents, e *transcript.Entry, at int, m *Message, decode func(*transcript.Entry) *Message) {
	var call *ToolCall
	p, pos := up.of(e, at)
	// No step beyond the call or the last entry walked: read from a tail,
	// it could end where the lines read end, for nothing.
	for i := 1; p != nil; i++ {
		for _, id := range p.ToolCallIDs {
			if id != m.ToolCallID {
				continue
			}
			if am := decode(p); am != nil {
				for j := range am.ToolCalls {
					if am.ToolCalls[j].ID == id {
						call = &am.ToolCalls[j]
					}
				}
			}
		}
		if call != nil || i == maxCallWalk {
			break
		}
		p, pos = up.of(p, pos)
	}
	name := m.ToolName
	if call == nil {
		call = &ToolCall{}
	} else if name == "" {
		name = call.Name
	}
	name = strings.TrimSpace(Clean(name))
	if name == "" {
		return
	}
	when := e.Time()
	n := len(state.Thread.Errors)
	state.recordCall(name, call, m.IsError, firstLine(m.Text), when)
	// The same failure read again (after a restart) is not a new one.
	if len(state.Thread.Errors) > n {
		last := state.Thread.Errors[len(state.Thread.Errors)-1]
		for _, x := range state.Thread.Errors[:n] {
			if x == last {
				state.Thread.Errors = state.Thread.Errors[:n]
				break
			}
		}
	}
}

// answerBefore is the answer decisionAt compares a user message (e at
// s.Entries[at]) with: the last assistant message with text in the turn
// before it, walking the parent chain the way splitTurns cuts the branch
// (messages only, a user message with text ends the previous turn).
func answerBefore(up *parents, e *transcript.Entry, at int, decode func(*transcript.Entry) *Message) *Message {
	for p, pos := up.of(e, at); p != nil; p, pos = up.of(p, pos) {
		if p.Type() != "message" || (p.Role() != "assistant" && p.Role() != "user") {
			continue
		}
		m := decode(p)
		if m == nil || strings.TrimSpace(m.Text) == "" {
			continue
		}
		if m.Role == "user" {
			return nil
		}
		return m
	}
	return nil
}

func hasDecision(ds []StateDecision, what string) bool {
	for _, d := range ds {
		if d.What == what {
			return true
		}
	}
	return false
}

// hashRange is the sha256 (hex) of the bytes [from, to).
func hashRange(f io.ReaderAt, from, to int64) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, from, to-from))
	if err != nil {
		return "", err
	}
	if n != to-from {
		return "", io.ErrUnexpectedEOF
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
