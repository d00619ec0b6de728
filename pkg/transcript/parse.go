package transcript

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
	"unique"
	"unsafe"
)

type lineKind uint8

const (
	kindBlank lineKind = iota
	kindEntry
	kindHeader // an object with type "session"
	kindMalformed
	kindNonObject // valid JSON but not an object
)

type parsedLine struct {
	kind   lineKind
	entry  *Entry
	header *Header
	err    string
	// warns are odd values read in a defined way (clamped numbers).
	warns []string
}

// blank reports whether pi skips the line: empty after JavaScript's trim(),
// which strips Unicode whitespace (a BOM, no-break spaces, U+2028…) too.
func blank(line []byte) bool { return jsTrimLeft(line) == len(line) }

// TrimFileStart is the first content line of a file as pi reads it: pi
// trims the whole file before splitting it into lines, so leading Unicode
// whitespace (a BOM) is not part of the line. Every reader of a first line
// (the loader, ReadHeader, recall's extractor) strips it the same way.
func TrimFileStart(line []byte) []byte { return line[jsTrimLeft(line):] }

// isJSSpace reports whether JavaScript's String#trim strips r: WhiteSpace
// (tab, VT, FF, space, NBSP, BOM, the Zs category) and LineTerminator.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// jsTrimLeft returns how many leading bytes of b trim() strips.
func jsTrimLeft(b []byte) int {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if !isJSSpace(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError || !isJSSpace(r) {
			return i
		}
		i += n
	}
	return i
}

// jsTrimRight returns the length of b without the trailing bytes trim()
// strips.
func jsTrimRight(b []byte) int {
	j := len(b)
	for j > 0 {
		r, n := utf8.DecodeLastRune(b[:j])
		if r == utf8.RuneError || !isJSSpace(r) {
			return j
		}
		j -= n
	}
	return j
}

// parseLine parses one physical line (without its newline) into entry
// metadata, in a single validating pass.
func parseLine(line []byte) parsedLine { return parseLineIn(line, nil) }

// parseLineIn is parseLine for a parse worker (nil: none), which hands out
// the entry and the strings the line shares with the ones before it.
func parseLineIn(line []byte, p *parser) parsedLine {
	if blank(line) {
		return parsedLine{kind: kindBlank}
	}
	s := scanner{b: line, p: p}
	s.ws()
	if s.peek() != '{' {
		if s.skip(0) {
			s.ws()
			if s.i == len(s.b) {
				return parsedLine{kind: kindNonObject}
			}
			s.fail("unexpected data after JSON value")
		}
		return parsedLine{kind: kindMalformed, err: s.err.Error()}
	}
	e := p.next()
	f := lineFields{msgStart: -1, msgEnd: -1, contentStart: -1, contentEnd: -1}
	if !s.object(func(key []byte) bool { return s.field(string(key), e, &f) }) {
		return parsedLine{kind: kindMalformed, err: s.err.Error()}
	}
	s.ws()
	if s.i != len(s.b) {
		s.fail("unexpected data after JSON value")
		return parsedLine{kind: kindMalformed, err: s.err.Error()}
	}
	if f.names.typ == "session" {
		return parsedLine{kind: kindHeader, header: headerOf(e, &f, line), warns: s.warns}
	}
	s.finishEntry(line, e, &f)
	p.saw(e)
	return parsedLine{kind: kindEntry, entry: e, warns: s.warns}
}

// parser is a parse worker's state across the lines it reads, in file
// order within a batch. Entries and usages come from blocks: one
// allocation per 124 entries instead of one each, and no size-class
// rounding (an Entry of 264 bytes allocated alone takes 288, a Usage 48
// for 40); a loaded session keeps all its entries, so a block is garbage
// only with the session. A line's parentId is nearly always the id of the
// line before, and a tool result's toolCallId one of the tool call ids of
// the assistant before it: those values share the earlier strings instead
// of a copy each (16 and 32 bytes per entry of a 1 GB session).
type parser struct {
	entries block[Entry]
	usages  block[Usage]
	prevID  []string // the last entry's id
	calls   []string // the last assistant's tool call ids
	// names are the records of names this worker has shared, so that
	// most lines find theirs without the table's lock; strs the strings
	// it has interned, likewise.
	names map[names]*names
	strs  map[string]string
}

// block hands out zero values of T from arrays of 32 KiB, the largest
// small-object size class: a larger array is rounded up to whole pages
// (256 entries wasted 24 bytes each).
type block[T any] struct{ free []T }

// take is a zero T from b or, when b is nil (no parser), allocated alone.
func take[T any](b *block[T]) *T {
	if b == nil {
		return new(T)
	}
	if len(b.free) == 0 {
		var zero T
		b.free = make([]T, max(1, 32<<10/unsafe.Sizeof(zero)))
	}
	v := &b.free[0]
	b.free = b.free[1:]
	return v
}

// next is a zero Entry, nextUsage a zero Usage, for the line being read.
func (p *parser) next() *Entry {
	if p == nil {
		return take[Entry](nil)
	}
	return take(&p.entries)
}

func (p *parser) nextUsage() *Usage {
	if p == nil {
		return take[Usage](nil)
	}
	return take(&p.usages)
}

// intern is internNames through p's own records.
func (p *parser) intern(n names) *names {
	if p == nil {
		return internNames(n)
	}
	if v, ok := p.names[n]; ok {
		return v
	}
	v := internNames(n)
	if p.names == nil {
		p.names = map[names]*names{}
	}
	if len(p.names) < maxNames {
		p.names[n] = v
	}
	return v
}

// internBytes is unique.Make(string(raw)).Value() through p's own map of
// the strings it made: a session repeats a few types, roles and model
// names on every line, and the map finds them faster than unique's shared
// one (two thirds of its 5% of loading a 1 GB session).
func (p *parser) internBytes(raw []byte) string {
	if p == nil {
		return unique.Make(string(raw)).Value()
	}
	if v, ok := p.strs[string(raw)]; ok {
		return v
	}
	v := unique.Make(string(raw)).Value()
	if p.strs == nil {
		p.strs = map[string]string{}
	}
	if len(p.strs) < maxStrs {
		p.strs[v] = v
	}
	return v
}

// maxStrs bounds a worker's map of interned strings (a file of ever new
// model or tool names gains nothing from it).
const maxStrs = 1 << 12

// saw records the strings of entry e that the next lines may share.
func (p *parser) saw(e *Entry) {
	if p == nil {
		return
	}
	p.prevID = append(p.prevID[:0], e.longOrNone().id)
	if e.Role() == "assistant" {
		p.calls = e.ToolCallIDs
	}
}

// knownIDs and knownCalls are what a line's parentId and toolCallId may
// share (nil without a parser).
func (p *parser) knownIDs() []string {
	if p == nil {
		return nil
	}
	return p.prevID
}

func (p *parser) knownCalls() []string {
	if p == nil {
		return nil
	}
	return p.calls
}

// knownOr is the string of known equal to s, else s: one copy then
// serves both, as for a converted tool result's toolCallId and its call's
// (8 MB of a 1 GB Codex file's heap) or a kept parentId and the previous
// entry's id.
func knownOr(s string, known []string) string {
	for _, k := range known {
		if k == s {
			return k
		}
	}
	return s
}

// lineFields is what parseLine learns of a line beyond the entry's own
// fields: where the parts it reads once the type is known are, and the
// header fields.
type lineFields struct {
	h                        *Header
	names                    names // the entry's, interned once the line is read
	msgStart, msgEnd         int   // the message object when it came before "type"
	msgDone                  bool
	contentStart, contentEnd int
	summaryLen, summaryWide  int
	hasSummary               bool
}

// field reads the value of one top-level key into e or f (skipping the
// keys nothing reads), validating it; false when the line is malformed.
func (s *scanner) field(key string, e *Entry, f *lineFields) (good bool) {
	switch key {
	case "type":
		f.names.typ, good = s.maybeInterned()
	case "id":
		var id string
		id, good = s.maybeTransient()
		f, v, long := packID(id)
		e.setPackedID(f, v, owned(long, id, nil))
	case "parentId":
		var id string
		id, good = s.maybeTransient()
		f, v, long := packID(id)
		e.setPackedParent(f, v, owned(long, id, s.p.knownIDs()))
		e.shareParent(s.p.knownIDs())
	case "timestamp":
		var ts string
		ts, good = s.maybeTransient()
		e.setTimestamp(ts)
		if e.rare != nil && e.rare.timestamp == ts {
			e.rare.timestamp = strings.Clone(ts) // kept: not a pi timestamp
		}
	case "message":
		if f.names.typ == "message" {
			// The usual key order (type first): validate and extract in one pass.
			good = s.message(e, &f.names)
			f.msgDone = true
		} else {
			f.msgStart = s.i
			good = s.skip(0)
			f.msgEnd = s.i
		}
	case "content":
		f.contentStart = s.i
		good = s.skip(0)
		f.contentEnd = s.i
	case "summary":
		if s.peek() != '"' {
			return s.skip(0)
		}
		w0 := s.wide
		_, _, f.summaryLen, good = s.str()
		f.hasSummary, f.summaryWide = true, s.wide-w0
	case "firstKeptEntryId":
		e.more().firstKeptEntryID, good = s.maybeString()
	case "firstKeptEntryIndex":
		var n float64
		n, good = s.maybeNumber()
		if good && n >= 0 && n == float64(int(n)) {
			e.more().firstKeptEntryIndex = int(n)
		}
	case "tokensBefore":
		e.more().tokensBefore, good = s.maybeInt("tokensBefore")
	case "fromHook":
		e.more().fromHook, good = s.maybeBool()
	case "provider":
		f.names.provider, good = s.maybeInterned()
	case "modelId":
		f.names.model, good = s.maybeInterned()
	case "thinkingLevel":
		e.more().thinkingLevel, good = s.maybeInterned()
	case "customType":
		e.more().customType, good = s.maybeInterned()
	case "fromId":
		e.more().fromID, good = s.maybeString()
	case "targetId":
		e.more().targetID, good = s.maybeString()
	case "systemMessage":
		// pi 1.6.0's compaction: the system message it replays before the
		// summary (sessionEntryToContextMessages).
		if s.peek() != '{' {
			return s.skip(0)
		}
		sys := &Entry{Line: e.Line, Offset: e.Offset, Length: e.Length, rare: &rareFields{firstKeptEntryIndex: -1, replayed: true}}
		var n names
		good = s.message(sys, &n)
		if good && n.role == "system" {
			n.typ = "message"
			sys.names = s.p.intern(n)
			e.more().system = sys
		}
	case "replacement":
		// pi 1.6.0's context_edit: null, or {content} replacing its target's.
		switch s.peek() {
		case 'n':
			e.more().replaceNull, good = true, s.literal("null")
		case '{':
			st := &contentStatsT{}
			good = s.object(func(key []byte) bool {
				if string(key) == "content" {
					return s.content(st)
				}
				return s.skip(0)
			})
			e.more().replacement = st
		default:
			good = s.skip(0)
		}
	case "version", "cwd", "parentSession", "contextWindow", "contextWindowSource":
		good = s.headerField(key, f)
	default:
		good = s.skip(0)
	}
	return good
}

// headerField reads one of a session header's keys into f.h.
func (s *scanner) headerField(key string, f *lineFields) (good bool) {
	if f.h == nil {
		f.h = &Header{}
	}
	switch key {
	case "version":
		f.h.Version, good = s.maybeInt("version")
	case "cwd":
		f.h.Cwd, good = s.maybeString()
	case "contextWindow":
		// ctxtool export: the window the source agent stated.
		f.h.ContextWindow, good = s.maybeInt("contextWindow")
	case "contextWindowSource":
		var src string
		src, good = s.maybeString()
		if src != "" {
			f.h.WindowSource = "exported session header (" + src + ")"
		}
	default:
		f.h.ParentSession, good = s.maybeString()
	}
	return good
}

// customSize gives a custom_message entry its size from its content.
func (e *Entry) customSize(content []byte) {
	cs := scanner{b: content}
	var st contentStatsT
	cs.content(&st)
	e.setCustomSize(&st)
}

// setCustomSize gives a custom_message entry the size of content st.
func (e *Entry) setCustomSize(st *contentStatsT) {
	e.Chars, e.Images, e.Wide = st.customChars(), count32(st.images), count32(st.wide)
}

// headerOf is the session header a "session" line describes.
func headerOf(e *Entry, f *lineFields, line []byte) *Header {
	h := f.h
	if h == nil {
		h = &Header{}
	}
	h.ID, h.Timestamp = e.ID(), e.Timestamp()
	h.Provider, h.ModelID, h.ThinkingLevel = f.names.provider, f.names.model, e.ThinkingLevel()
	if h.Version == 0 {
		h.Version = 1
	}
	h.Raw = append([]byte(nil), line...)
	return h
}

// finishEntry gives e what depends on its type, known only once the whole
// line is read: the message read late, the role and size of the context
// message it produces.
func (s *scanner) finishEntry(line []byte, e *Entry, f *lineFields) {
	switch f.names.typ {
	case "message":
		if !f.msgDone && f.msgStart >= 0 {
			ms := scanner{b: line[f.msgStart:f.msgEnd], p: s.p}
			ms.message(e, &f.names)
			s.warns = append(s.warns, ms.warns...)
		}
	case "custom_message":
		f.names.role = "custom"
		if f.contentStart >= 0 {
			e.customSize(line[f.contentStart:f.contentEnd])
		}
	case "branch_summary":
		if f.hasSummary && f.summaryLen > 0 {
			f.names.role = "branchSummary"
			e.Chars, e.Wide = f.summaryLen, count32(f.summaryWide)
		}
	case "compaction":
		f.names.role = "compactionSummary"
		e.Chars, e.Wide = f.summaryLen, count32(f.summaryWide)
	case "model_change", "thinking_level_change", "label", "session_info", "custom":
	default:
		// Unknown entry types stay in the tree and produce no message.
	}
	if f.names.typ != "model_change" && f.names.typ != "message" {
		// provider/modelId are only meaningful on these two types.
		f.names.provider, f.names.model = "", ""
	}
	e.names = s.p.intern(f.names)
}

func (s *scanner) maybeString() (string, bool) { return s.maybeStringOf(nil) }

// maybeBody reads a value that should be a string, for the maybe readers
// that make their own string of its raw body (maybeTransient a view,
// maybeInterned a shared copy): str reports a well-formed string, raw its
// body; a value of another type is skipped (str false, ok whether it was
// well formed), as is a malformed string (ok false).
func (s *scanner) maybeBody() (raw []byte, str, ok bool) {
	if s.peek() != '"' {
		return nil, false, s.skip(0)
	}
	raw, ok = s.strBody()
	return raw, ok, ok
}

// maybeTransient is maybeString for a value read and dropped while the
// line is parsed (an id packed into a number, a timestamp into
// milliseconds): when the value is its raw bytes (no escape, valid UTF-8)
// it is a view of the line's buffer, which the parse worker reuses, so
// what is kept of it must be copied (owned). Three strings allocated per
// line for id, parentId and timestamp were 7% of loading a 1 GB session,
// and garbage at once.
func (s *scanner) maybeTransient() (string, bool) {
	raw, str, ok := s.maybeBody()
	if !str {
		return "", ok
	}
	if !utf8.Valid(raw) || bytes.IndexByte(raw, '\\') >= 0 {
		return decodeValue(raw), true // as stringValueOf
	}
	return unsafe.String(unsafe.SliceData(raw), len(raw)), true
}

// owned is what an entry keeps of the packed id long (packID) of the
// transient value id: the string of known it equals, a copy when it is
// the value itself (a text id), else long (a UUID's bytes, already its
// own; "" for a numeric id).
func owned(long, id string, known []string) string {
	if long == "" || unsafe.StringData(long) != unsafe.StringData(id) {
		return long
	}
	if k := knownOr(long, known); unsafe.StringData(k) != unsafe.StringData(id) {
		return k
	}
	return strings.Clone(long)
}

// maybeStringOf is maybeString returning the one of known the value
// equals, without allocating a copy.
func (s *scanner) maybeStringOf(known []string) (string, bool) {
	if s.peek() == '"' {
		return s.stringValueOf(known)
	}
	return "", s.skip(0)
}

// maybeInterned is maybeString for values that repeat across a session
// (types, roles, model names): one shared copy instead of one per entry keeps
// a 100 MB session's metadata small.
func (s *scanner) maybeInterned() (string, bool) {
	raw, str, ok := s.maybeBody()
	if !str {
		return "", ok
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		return unique.Make(decodeString(raw)).Value(), true
	}
	return s.p.internBytes(raw), true
}

func (s *scanner) maybeNumber() (float64, bool) {
	c := s.peek()
	if c == '-' || (c >= '0' && c <= '9') {
		return s.numberValue()
	}
	return 0, s.skip(0)
}

// MaxSafeInt is JavaScript's Number.MAX_SAFE_INTEGER: the largest count
// pi reads back exactly. Counts beyond it (1e400 is Infinity to pi) are
// clamped to it, with a warning, so they neither wrap around in Go nor get
// written back as something pi misreads.
const MaxSafeInt = 1<<53 - 1

// maybeInt reads an integer field; a number beyond ±MaxSafeInt is clamped
// and a warning naming the field is recorded.
func (s *scanner) maybeInt(field string) (int, bool) {
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, s.skip(0)
	}
	st := s.i
	f, ok := s.numberValue()
	if !ok {
		return 0, false
	}
	n, warn := safeInt(field, s.b[st:s.i], f)
	if warn != "" {
		s.warns = append(s.warns, warn)
	}
	return n, true
}

// safeInt is the count pi reads from the number raw (f as a float64):
// clamped to ±MaxSafeInt, with a warning naming field, beyond it.
func safeInt(field string, raw []byte, f float64) (int, string) {
	if f <= MaxSafeInt && f >= -MaxSafeInt {
		return int(f), ""
	}
	clamped := MaxSafeInt
	if f < 0 {
		clamped = -MaxSafeInt
	}
	shown := string(raw)
	if len(shown) > 24 {
		shown = shown[:24] + "…"
	}
	how := "a number beyond 2^53 that it rounds"
	if math.IsInf(f, 0) {
		how = "Infinity"
	}
	return clamped, fmt.Sprintf("%s %s is out of range (pi reads %s); read as %d", field, shown, how, clamped)
}

func (s *scanner) maybeBool() (bool, bool) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, s.skip(0)
}

// message validates a message object at the scanner position and extracts
// what the context and the estimators need.
func (s *scanner) message(e *Entry, n *names) bool {
	if s.peek() != '{' {
		return s.skip(0)
	}
	var m messageFields
	wide0 := s.wide
	if !s.object(func(key []byte) bool { return s.messageField(string(key), e, &m, n) }) {
		return false
	}
	e.size(n.role, &m, s.wide-wide0)
	return true
}

// size gives a message entry its size from its role and what its message
// holds (wide: the CJK characters in the whole message): pi's chars rule.
func (e *Entry) size(role string, m *messageFields, wide int) {
	e.Images = count32(m.cs.images)
	e.Wide = count32(m.cs.wide)
	switch role {
	case "user":
		if m.cs.isString {
			e.Chars = m.cs.strLen
		} else {
			e.Chars = m.cs.text
		}
	case "assistant":
		e.Chars = m.cs.text + m.cs.thinking + m.cs.toolCalls
		e.ThinkingChars = count32(m.cs.thinking)
		e.ToolCallIDs = m.cs.toolCallIDs
	case "toolResult", "custom", "hookMessage":
		// hookMessage (v2's name for custom) is renamed by pi's migration
		// only in files older than v3; Session.finish decides.
		e.Chars = m.cs.customChars()
	case "bashExecution":
		e.Chars = m.command + m.output
		e.Wide = count32(wide)
	case "system":
		// pi 1.6.0: content (text and images), its sections and the JSON
		// of toolsAdded (compaction.js estimateTokens).
		e.Chars = m.cs.customChars() + m.sections + m.toolsAdded
	default:
		e.Chars = 0
	}
}

// messageFields is what message reads of a message beyond the entry's own
// fields: its content's statistics and a bash execution's text lengths.
type messageFields struct {
	cs              contentStatsT
	command, output int
	// pi 1.6.0 system messages.
	sections, toolsAdded int
}

// messageField reads the value of one key of a message object into e, m
// or the entry's names n, validating it; false when the line is malformed.
// n is apart from m: m's content leaks into the entry (its tool call ids),
// and with n in it the line's lineFields, whose names n points into, were
// moved to the heap: 155 bytes of garbage per line, a third of what
// loading a session allocated.
func (s *scanner) messageField(key string, e *Entry, m *messageFields, n *names) (good bool) {
	switch key {
	case "role":
		n.role, good = s.maybeInterned()
	case "content":
		good = s.content(&m.cs)
	case "command":
		m.command, good = s.maybeStringLen()
	case "output":
		m.output, good = s.maybeStringLen()
	case "stopReason":
		n.stopReason, good = s.maybeInterned()
	case "model":
		n.model, good = s.maybeInterned()
	case "provider":
		n.provider, good = s.maybeInterned()
	case "timestamp":
		e.MsgTimestamp, good = s.maybeNumber()
		if math.IsInf(e.MsgTimestamp, 0) {
			s.warns = append(s.warns, "message.timestamp is out of range (pi reads Infinity); ignored")
			e.MsgTimestamp = 0
		}
	case "toolCallId":
		e.ToolCallID, good = s.maybeStringOf(s.p.knownCalls())
	case "toolName":
		n.toolName, good = s.maybeInterned()
	case "isError":
		e.IsError, good = s.maybeBool()
	case "excludeFromContext":
		e.ExcludeFromContext, good = s.maybeBool()
	case "customType":
		e.more().customType, good = s.maybeInterned()
	case "usage":
		e.Usage, good = s.usage()
	case "sections":
		// pi 1.6.0's system message: its prompt, in named sections
		// (estimateTokens counts every non-empty one).
		m.sections, good = s.sectionsLen()
	case "toolsAdded":
		// estimateTokens counts JSON.stringify(toolsAdded).
		if s.peek() == 'n' {
			good = s.skip(0)
		} else {
			m.toolsAdded = s.canonLen(0)
			good = s.err == nil
		}
	default:
		good = s.skip(0)
	}
	return good
}

// sectionsLen measures a system message's sections: Σ the lengths of its
// string values (a patch's null removes a section and counts nothing).
func (s *scanner) sectionsLen() (int, bool) {
	if s.peek() != '{' {
		return 0, s.skip(0)
	}
	n := 0
	ok := s.object(func(key []byte) bool {
		l, good := s.maybeStringLen()
		n += l
		return good
	})
	return n, ok
}

func (s *scanner) maybeStringLen() (int, bool) {
	if s.peek() == '"' {
		_, _, n, ok := s.str()
		return n, ok
	}
	return 0, s.skip(0)
}

func (s *scanner) usage() (*Usage, bool) {
	if s.peek() != '{' {
		return nil, s.skip(0)
	}
	u := s.p.nextUsage()
	ok := s.object(func(key []byte) (good bool) {
		switch string(key) {
		case "input":
			u.Input, good = s.maybeInt("usage.input")
		case "output":
			u.Output, good = s.maybeInt("usage.output")
		case "cacheRead":
			u.CacheRead, good = s.maybeInt("usage.cacheRead")
		case "cacheWrite":
			u.CacheWrite, good = s.maybeInt("usage.cacheWrite")
		case "totalTokens":
			u.TotalTokens, good = s.maybeInt("usage.totalTokens")
		default:
			good = s.skip(0)
		}
		return good
	})
	if !ok {
		return nil, false
	}
	return u, true
}

// contentStatsT summarises a message's content for pi's heuristic, without
// knowing the role yet (JSON key order is not guaranteed).
type contentStatsT struct {
	isString    bool
	strLen      int
	text        int // Σ text block lengths (blocks of type "text")
	thinking    int
	toolCalls   int // Σ name + JSON.stringify(arguments) lengths
	images      int
	wide        int // CJK characters in text blocks and tool calls
	toolCallIDs []string
}

func (c contentStatsT) customChars() int {
	if c.isString {
		return c.strLen
	}
	return c.text + 4800*c.images
}

// content validates a message content value (a string or an array of
// blocks) and accumulates its sizes into cs.
func (s *scanner) content(cs *contentStatsT) bool {
	switch s.peek() {
	case '"':
		w0 := s.wide
		_, _, n, ok := s.str()
		cs.isString, cs.strLen = true, n
		cs.wide = s.wide - w0
		return ok
	case '[':
	default:
		return s.skip(0)
	}
	first := true
	for {
		ok, done := s.arrNext(&first)
		if !ok {
			return false
		}
		if done {
			return true
		}
		if s.peek() != '{' {
			if !s.skip(0) {
				return false
			}
			continue
		}
		if !s.block(cs) {
			return false
		}
	}
}

// block validates one content block (an object) and adds its size to cs.
func (s *scanner) block(cs *contentStatsT) bool {
	var typ, id string
	var textLen, thinkingLen, nameLen, argsLen int
	wide0 := s.wide
	wellFormed := s.object(func(key []byte) (good bool) {
		switch string(key) {
		case "type":
			typ, good = s.maybeTransient() // only compared
		case "text":
			textLen, good = s.maybeStringLen()
		case "thinking":
			thinkingLen, good = s.maybeStringLen()
		case "name":
			nameLen, good = s.maybeStringLen()
		case "id":
			id, good = s.maybeTransient() // a tool call's is kept (owned below)
		case "arguments":
			// One pass validates and measures JSON.stringify(arguments).
			argsLen = s.canonLen(0)
			good = s.err == nil
		default:
			good = s.skip(0)
		}
		return good
	})
	if !wellFormed {
		return false
	}
	if typ == "text" || typ == "toolCall" {
		cs.wide += s.wide - wide0
	}
	chars := textLen
	switch typ {
	case "thinking":
		chars = thinkingLen
	case "toolCall":
		chars = nameLen + argsLen
		cs.toolCallIDs = append(cs.toolCallIDs, strings.Clone(id))
	}
	cs.add(typ, chars)
	return true
}

// add counts a block of type typ whose text (a text's, a thinking's, a
// tool call's name and arguments) is chars UTF-16 units long.
func (cs *contentStatsT) add(typ string, chars int) {
	switch typ {
	case "text":
		cs.text += chars
	case "thinking":
		cs.thinking += chars
	case "toolCall":
		cs.toolCalls += chars
	case "image":
		cs.images++
	}
}

// describeObjects splits a malformed line into the JSON values glued on it
// and names each ("message/assistant", "compaction", …). It returns nil when
// the line is not a sequence of complete values.
func describeObjects(line []byte) []string {
	var out []string
	s := scanner{b: line}
	for {
		s.ws()
		if s.i >= len(s.b) {
			break
		}
		st := s.i
		if !s.skip(0) {
			return nil
		}
		pl := parseLine(line[st:s.i])
		switch {
		case pl.kind == kindHeader:
			out = append(out, "session")
		case pl.kind == kindEntry && pl.entry.Type() == "message":
			out = append(out, "message/"+pl.entry.Role())
		case pl.kind == kindEntry:
			out = append(out, pl.entry.Type())
		default:
			out = append(out, "value")
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// shortErr trims a parse error for display.
func shortErr(err string) string {
	if i := strings.Index(err, ": "); i >= 0 && strings.HasPrefix(err, "offset ") {
		return err[i+2:] + " at byte " + strings.TrimPrefix(err[:i], "offset ")
	}
	return err
}

// parseHead reads what it can of an oversized line from its first bytes:
// the entry's type, id, parentId and timestamp (pi writes them first) and
// a message's role when it precedes the content. The line is not
// validated; it is an entry when its type was found.
func parseHead(head []byte) parsedLine {
	s := scanner{b: head}
	s.ws()
	bad := parsedLine{kind: kindMalformed, err: "over the line cap and does not start like a session entry"}
	if s.peek() != '{' {
		return bad
	}
	e := &Entry{}
	var f lineFields
	// Reading stops at the cut-off (or anything malformed): what was read
	// before it stands.
	s.object(func(key []byte) (good bool) {
		switch string(key) {
		case "type", "id", "parentId", "timestamp":
			good = s.field(string(key), e, &f) // the entry's own keys, read as parseLine does
		case "message":
			// Only the keys before the cut-off: the role, usually first.
			s.object(func(k []byte) bool {
				if string(k) == "role" {
					f.names.role, _ = s.maybeInterned()
					return true
				}
				return s.skip(0)
			})
			// good stays false: the message runs into the cut-off, so
			// nothing after it is read.
		default:
			good = s.skip(0)
		}
		return good
	})
	switch f.names.typ {
	case "", "session":
		return bad
	case "custom_message":
		f.names.role = "custom"
	case "compaction":
		f.names.role = "compactionSummary"
	case "branch_summary":
		f.names.role = "branchSummary"
	}
	e.names = internNames(f.names)
	return parsedLine{kind: kindEntry, entry: e}
}

// count32 is a count bounded by a line's bytes as Entry stores it: a pi
// line held in memory is under MaxLineBytes, but a converter's line has no
// cap, so a count beyond int32 saturates instead of wrapping.
func count32(n int) int32 { return int32(min(n, math.MaxInt32)) }
