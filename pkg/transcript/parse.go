package transcript

import (
	"bytes"
	"strings"
	"unique"
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
}

// blank reports whether pi skips the line (empty after trim()).
func blank(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

// parseLine parses one physical line (without its newline) into entry
// metadata, in a single validating pass.
func parseLine(line []byte) parsedLine {
	if blank(line) {
		return parsedLine{kind: kindBlank}
	}
	s := scanner{b: line}
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
	e := &Entry{FirstKeptEntryIndex: -1}
	var h *Header
	var msgStart, msgEnd = -1, -1
	var msgDone bool
	var contentStart, contentEnd = -1, -1
	var summaryLen, summaryWide int
	var hasSummary bool
	first := true
	for {
		key, ok, done := s.objNext(&first)
		if !ok {
			return parsedLine{kind: kindMalformed, err: s.err.Error()}
		}
		if done {
			break
		}
		var good bool
		switch string(key) {
		case "type":
			e.Type, good = s.maybeInterned()
		case "id":
			e.ID, good = s.maybeString()
		case "parentId":
			e.ParentID, good = s.maybeString()
		case "timestamp":
			e.Timestamp, good = s.maybeString()
		case "message":
			if e.Type == "message" {
				// The usual key order (type first): validate and extract in one pass.
				good = s.message(e)
				msgDone = true
			} else {
				msgStart = s.i
				good = s.skip(0)
				msgEnd = s.i
			}
		case "content":
			contentStart = s.i
			good = s.skip(0)
			contentEnd = s.i
		case "summary":
			if s.peek() == '"' {
				var n int
				w0 := s.wide
				_, _, n, good = s.str()
				summaryLen, hasSummary = n, true
				summaryWide = s.wide - w0
			} else {
				good = s.skip(0)
			}
		case "firstKeptEntryId":
			e.FirstKeptEntryID, good = s.maybeString()
		case "firstKeptEntryIndex":
			var f float64
			f, good = s.maybeNumber()
			if good && f >= 0 && f == float64(int(f)) {
				e.FirstKeptEntryIndex = int(f)
			}
		case "tokensBefore":
			var f float64
			f, good = s.maybeNumber()
			e.TokensBefore = int(f)
		case "fromHook":
			e.FromHook, good = s.maybeBool()
		case "provider":
			e.Provider, good = s.maybeInterned()
		case "modelId":
			e.Model, good = s.maybeInterned()
		case "thinkingLevel":
			e.ThinkingLevel, good = s.maybeInterned()
		case "customType":
			e.CustomType, good = s.maybeInterned()
		case "fromId":
			e.FromID, good = s.maybeString()
		case "targetId":
			e.TargetID, good = s.maybeString()
		case "version", "cwd", "parentSession":
			if h == nil {
				h = &Header{}
			}
			switch string(key) {
			case "version":
				var f float64
				f, good = s.maybeNumber()
				h.Version = int(f)
			case "cwd":
				h.Cwd, good = s.maybeString()
			default:
				h.ParentSession, good = s.maybeString()
			}
		default:
			good = s.skip(0)
		}
		if !good {
			return parsedLine{kind: kindMalformed, err: s.err.Error()}
		}
	}
	s.ws()
	if s.i != len(s.b) {
		s.fail("unexpected data after JSON value")
		return parsedLine{kind: kindMalformed, err: s.err.Error()}
	}

	if e.Type == "session" {
		if h == nil {
			h = &Header{}
		}
		h.ID, h.Timestamp = e.ID, e.Timestamp
		h.Provider, h.ModelID, h.ThinkingLevel = e.Provider, e.Model, e.ThinkingLevel
		if h.Version == 0 {
			h.Version = 1
		}
		h.Raw = append([]byte(nil), line...)
		return parsedLine{kind: kindHeader, header: h}
	}

	switch e.Type {
	case "message":
		if !msgDone && msgStart >= 0 {
			ms := scanner{b: line[msgStart:msgEnd]}
			ms.message(e)
		}
	case "custom_message":
		e.Role = "custom"
		if contentStart >= 0 {
			cs := scanner{b: line[contentStart:contentEnd]}
			var st contentStatsT
			cs.content(&st)
			e.Chars, e.Images, e.Wide = st.customChars(), st.images, st.wide
		}
	case "branch_summary":
		if hasSummary && summaryLen > 0 {
			e.Role = "branchSummary"
			e.Chars, e.Wide = summaryLen, summaryWide
		}
	case "compaction":
		e.Role = "compactionSummary"
		e.Chars, e.Wide = summaryLen, summaryWide
	case "model_change", "thinking_level_change", "label", "session_info", "custom":
	default:
		// Unknown entry types stay in the tree and produce no message.
	}
	if e.Type != "model_change" && e.Type != "message" {
		// provider/modelId are only meaningful on these two types.
		e.Provider, e.Model = "", ""
	}
	return parsedLine{kind: kindEntry, entry: e}
}

func (s *scanner) maybeString() (string, bool) {
	if s.peek() == '"' {
		return s.stringValue()
	}
	return "", s.skip(0)
}

// maybeInterned is maybeString for values that repeat across a session
// (types, roles, model names): one shared copy instead of one per entry keeps
// a 100 MB session's metadata small.
func (s *scanner) maybeInterned() (string, bool) {
	if s.peek() != '"' {
		return "", s.skip(0)
	}
	st, en, _, ok := s.str()
	if !ok {
		return "", false
	}
	raw := s.b[st:en]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return unique.Make(decodeString(raw)).Value(), true
	}
	return unique.Make(string(raw)).Value(), true
}

func (s *scanner) maybeNumber() (float64, bool) {
	c := s.peek()
	if c == '-' || (c >= '0' && c <= '9') {
		return s.numberValue()
	}
	return 0, s.skip(0)
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
func (s *scanner) message(e *Entry) bool {
	if s.peek() != '{' {
		return s.skip(0)
	}
	var cs contentStatsT
	var command, output int
	wide0 := s.wide
	first := true
	for {
		key, ok, done := s.objNext(&first)
		if !ok {
			return false
		}
		if done {
			break
		}
		var good bool
		switch string(key) {
		case "role":
			e.Role, good = s.maybeInterned()
		case "content":
			good = s.content(&cs)
		case "command":
			command, good = s.maybeStringLen()
		case "output":
			output, good = s.maybeStringLen()
		case "stopReason":
			e.StopReason, good = s.maybeInterned()
		case "model":
			e.Model, good = s.maybeInterned()
		case "provider":
			e.Provider, good = s.maybeInterned()
		case "timestamp":
			e.MsgTimestamp, good = s.maybeNumber()
		case "toolCallId":
			e.ToolCallID, good = s.maybeString()
		case "toolName":
			e.ToolName, good = s.maybeInterned()
		case "isError":
			e.IsError, good = s.maybeBool()
		case "excludeFromContext":
			e.ExcludeFromContext, good = s.maybeBool()
		case "customType":
			e.CustomType, good = s.maybeInterned()
		case "usage":
			e.Usage, good = s.usage()
		default:
			good = s.skip(0)
		}
		if !good {
			return false
		}
	}
	e.Images = cs.images
	e.Wide = cs.wide
	switch e.Role {
	case "user":
		if cs.isString {
			e.Chars = cs.strLen
		} else {
			e.Chars = cs.text
		}
	case "assistant":
		e.Chars = cs.text + cs.thinking + cs.toolCalls
		e.ThinkingChars = cs.thinking
		e.ToolCallIDs = cs.toolCallIDs
	case "toolResult", "custom", "hookMessage":
		// hookMessage (v2's name for custom) is renamed by pi's migration
		// only in files older than v3; Session.finish decides.
		e.Chars = cs.customChars()
	case "bashExecution":
		e.Chars = command + output
		e.Wide = s.wide - wide0
	default:
		e.Chars = 0
	}
	return true
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
	u := &Usage{}
	first := true
	for {
		key, ok, done := s.objNext(&first)
		if !ok {
			return nil, false
		}
		if done {
			return u, true
		}
		var f float64
		var good bool
		switch string(key) {
		case "input":
			f, good = s.maybeNumber()
			u.Input = int(f)
		case "output":
			f, good = s.maybeNumber()
			u.Output = int(f)
		case "cacheRead":
			f, good = s.maybeNumber()
			u.CacheRead = int(f)
		case "cacheWrite":
			f, good = s.maybeNumber()
			u.CacheWrite = int(f)
		case "totalTokens":
			f, good = s.maybeNumber()
			u.TotalTokens = int(f)
		default:
			good = s.skip(0)
		}
		if !good {
			return nil, false
		}
	}
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
		var typ, id string
		var textLen, thinkingLen, nameLen, argsLen int
		wide0 := s.wide
		bfirst := true
		for {
			key, ok, done := s.objNext(&bfirst)
			if !ok {
				return false
			}
			if done {
				break
			}
			var good bool
			switch string(key) {
			case "type":
				typ, good = s.maybeString()
			case "text":
				textLen, good = s.maybeStringLen()
			case "thinking":
				thinkingLen, good = s.maybeStringLen()
			case "name":
				nameLen, good = s.maybeStringLen()
			case "id":
				id, good = s.maybeString()
			case "arguments":
				// One pass validates and measures JSON.stringify(arguments).
				argsLen = s.canonLen(0)
				good = s.err == nil
			default:
				good = s.skip(0)
			}
			if !good {
				return false
			}
		}
		if typ == "text" || typ == "toolCall" {
			cs.wide += s.wide - wide0
		}
		switch typ {
		case "text":
			cs.text += textLen
		case "thinking":
			cs.thinking += thinkingLen
		case "toolCall":
			cs.toolCalls += nameLen + argsLen
			cs.toolCallIDs = append(cs.toolCallIDs, id)
		case "image":
			cs.images++
		}
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
		case pl.kind == kindEntry && pl.entry.Type == "message":
			out = append(out, "message/"+pl.entry.Role)
		case pl.kind == kindEntry:
			out = append(out, pl.entry.Type)
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
