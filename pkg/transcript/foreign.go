package transcript

import (
	"errors"
	"io/fs"
	"strconv"
	"unique"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// The transcript core reads pi JSONL itself; every other format (Claude
// Code, Codex, zstd, OpenClaw's SQLite store) comes in through
// pkg/formats, which translates it to pi v3 lines. The session is then
// built from those lines exactly as from a pi file, and entry line
// numbers are mapped back to the source's lines (or database rows), so
// every reading command works on every format and cites the user's file.
//
// The Claude Code and Codex converters hand over each line they write with
// its values (formats.Produced), and the session is built from those
// (produced, below) rather than by parsing the translated copy again: that
// second parse cost as much as reading the source. The other views (zstd
// pi JSONL, OpenClaw's stores) hold the source's own lines, which the pi
// parser reads as it reads a file.

// Format is the source format of the session.
func (s *Session) Format() formats.Format {
	if s.Foreign == nil {
		return formats.Pi
	}
	return s.Foreign.Format
}

// ReadOnly reports whether ctxtool refuses to write this session's file.
func (s *Session) ReadOnly() bool { return !s.Format().Writable() }

// LoadLazy is Load for a caller that reads entries and seldom their
// content (estimate without an exact tokenizer): the pi translation of a
// Claude Code or Codex file is then written when content is first read,
// by translating the file again, not while the file loads
// (formats.OpenLazy). Other files load as Load loads them.
func LoadLazy(path string) (*Session, error) {
	if path != "-" {
		if s, handled, err := loadForeign(path, formats.OpenLazy); handled {
			return s, err
		}
	}
	return Load(path)
}

// loadForeign loads path through pkg/formats (with open: formats.Open or
// OpenLazy) when it is not pi JSONL. handled is false for pi files (and
// for paths that do not exist, which the pi reader reports).
func loadForeign(path string, open func(string, func(*formats.Produced)) (*formats.View, error)) (s *Session, handled bool, err error) {
	b := newProduced(path)
	v, err := open(path, b.add)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, true, err
	}
	if v == nil {
		return nil, false, nil
	}
	s, err = b.load(v)
	return s, true, err
}

// load is the session of view v: built from what the converter handed b,
// or, for a view no converter wrote, read from the view.
func (b *produced) load(v *formats.View) (*Session, error) {
	if b.s.Header == nil {
		return loadView(b.s.File, v)
	}
	s := b.s
	s.Size, s.Lines, s.EndsWithNewline = v.Size(), b.lines, v.Size() > 0
	s.Version = s.Header.Version
	s.finish()
	attachView(s, v)
	return s, nil
}

// loadView builds a session by parsing a translated view.
func loadView(name string, v *formats.View) (*Session, error) {
	s, err := load(name, v.ReaderAt(), v.Size())
	if err != nil {
		v.Close()
		return nil, err
	}
	for _, e := range s.Entries {
		e.Line = v.SourceRow(e.Line)
		e.placeSystem()
	}
	if s.Header != nil {
		s.Header.Line = v.SourceRow(s.Header.Line)
	}
	for i := range s.Malformed {
		s.Malformed[i].Line = v.SourceRow(s.Malformed[i].Line)
	}
	for i := range s.Warnings {
		s.Warnings[i].Line = v.SourceRow(s.Warnings[i].Line)
	}
	attachView(s, v)
	return s, nil
}

// attachView makes v the bytes s reads content from and adds what v says
// of the source.
func attachView(s *Session, v *formats.View) {
	s.Foreign, s.src = v, v.ReaderAt()
	if s.Header != nil {
		s.Header.ContextWindow, s.Header.WindowSource = v.ContextWindow, v.WindowSource
	}
	for _, m := range v.Malformed {
		s.Malformed = append(s.Malformed, Malformed{Line: m.Line, Bytes: m.Bytes, Err: m.Err})
	}
}

// produced builds a session from the lines a converter wrote, from the
// values it hands with each (formats.Produced): the session load would
// read from those lines, without parsing them. What pi's rules make of a
// message (its size, its tool calls) is still read by the pi parser's own
// code from the line's content, one value of it.
type produced struct {
	s     *Session
	lines int // lines of the view so far
	names interner
	// Entries and usages come from blocks, as the pi parser's do.
	entries block[Entry]
	usages  block[Usage]
	ns      parser // for its records of entry names and of the last calls
}

func newProduced(name string) *produced {
	return &produced{s: &Session{File: name, byID: &idIndex{}}}
}

// add takes one line of the view.
func (b *produced) add(p *formats.Produced) {
	b.lines++
	s := b.s
	if p.Header {
		// One line per file: the pi parser reads it.
		if pl := parseLine(p.Line); pl.kind == kindHeader && s.Header == nil {
			pl.header.Line = p.Row
			s.Header = pl.header
		}
		return
	}
	e := b.entry(p)
	e.Line, e.Offset, e.Length, e.Index = p.Row, p.Offset, p.Length, b.lines-1
	s.Entries = append(s.Entries, e)
}

// entry is what parseLine reads from p's line.
func (b *produced) entry(p *formats.Produced) *Entry {
	x := &b.names
	e := take(&b.entries)
	e.setPackedID(producedID(p.ID, &p.IDUUID, p.HasIDUUID, p.IDRow, p.HasIDRow))
	e.setPackedParent(producedID(p.ParentID, &p.ParentUUID, p.HasParentUUID, p.ParentRow, p.HasParentRow))
	e.shareParent(b.ns.knownIDs())
	if p.HasTimestampMS {
		e.setTimestampMS(p.TimestampMS)
	} else {
		e.setTimestamp(p.Timestamp)
	}
	n := names{typ: x.get(p.Type)}
	switch p.Type {
	case "message":
		n.role, n.stopReason, n.toolName = x.get(p.Role), x.get(p.StopReason), x.get(p.ToolName)
		n.provider, n.model = x.get(p.Provider), x.get(p.Model)
		e.ToolCallID, e.IsError, e.MsgTimestamp = knownOr(p.ToolCallID, b.ns.knownCalls()), p.IsError, float64(p.MsgTime)
		if p.HasUsage {
			u := p.Usage
			e.Usage = take(&b.usages)
			*e.Usage = Usage{Input: b.count(p, "usage.input", u[0]), Output: b.count(p, "usage.output", u[1]),
				CacheRead: b.count(p, "usage.cacheRead", u[2]), CacheWrite: b.count(p, "usage.cacheWrite", u[3]),
				TotalTokens: b.count(p, "usage.totalTokens", u[4])}
		}
		var m messageFields
		contentStats(p, &m.cs)
		e.size(n.role, &m, m.cs.wide)
	case "custom_message":
		n.role, e.more().customType = "custom", x.get(p.CustomType)
		var cs contentStatsT
		contentStats(p, &cs)
		e.setCustomSize(&cs)
	case "compaction":
		n.role = "compactionSummary"
		if p.Summary[1] > 0 {
			sc := scanner{b: p.Line[p.Summary[0]:p.Summary[1]]}
			_, _, e.Chars, _ = sc.str()
			e.Wide = count32(sc.wide)
		}
		e.more().tokensBefore = b.count(p, "tokensBefore", p.TokensBefore)
	case "model_change":
		n.provider, n.model = x.get(p.Provider), x.get(p.Model)
	}
	e.names = b.ns.intern(n)
	b.ns.saw(e)
	return e
}

// contentStats is what content reads of p's content: the sizes the
// converter handed for the blocks it measured, the other blocks read from
// the line (which holds them even when it holds nothing else: see
// formats.Produced.Measured).
func contentStats(p *formats.Produced, cs *contentStatsT) {
	switch p.Content {
	case 0:
		return
	case '"':
		bl := p.Blocks[0] // a string content is one block
		if bl.Sized {
			cs.isString, cs.strLen = true, bl.Chars
			return
		}
		sc := scanner{b: p.Line[bl.Span[0]:bl.Span[1]]}
		sc.content(cs)
		return
	}
	for _, bl := range p.Blocks {
		if bl.Sized {
			cs.add(bl.Kind, bl.Chars)
			continue
		}
		sc := scanner{b: p.Line[bl.Span[0]:bl.Span[1]]}
		sc.block(cs)
	}
}

// producedID is packID of an id a converter handed: as text, as the 16
// bytes of a UUID (uuid set), kept as they are, or as the number of a row
// id "L<row>" (isRow set), which packID reads as that number.
func producedID(text string, key *[16]byte, uuid bool, row uint32, isRow bool) (idForm, uint32, string) {
	switch {
	case uuid:
		return idUUID, 0, string(key[:])
	case isRow:
		return idRow, row, ""
	}
	return packID(text)
}

// count is the count pi reads from the integer n written on p's line
// (clamped to ±MaxSafeInt with a warning, as maybeInt reads it).
func (b *produced) count(p *formats.Produced, field string, n int64) int {
	if n <= MaxSafeInt && n >= -MaxSafeInt {
		return int(n)
	}
	v, warn := safeInt(field, strconv.AppendInt(nil, n, 10), float64(n))
	b.s.Warnings = append(b.s.Warnings, Warning{Line: p.Row, Msg: warn})
	return v
}

// interner hands out unique.Make's copy of the names a converter repeats
// (types, roles, models, tools), as maybeInterned keeps them: the last few
// are remembered, so most lines cost a string compare.
type interner struct {
	last [8][2]string
	n    int
}

func (x *interner) get(s string) string {
	if s == "" {
		return ""
	}
	for i := range x.last {
		if x.last[i][0] == s {
			return x.last[i][1]
		}
	}
	v := unique.Make(s).Value()
	x.last[x.n%len(x.last)] = [2]string{s, v}
	x.n++
	return v
}

// CheckWritable refuses (with a *formats.ReadOnlyError saying why and what
// to do instead) a write to a format ctxtool only reads.
func CheckWritable(path string) error { return formats.CheckWritable(path) }
