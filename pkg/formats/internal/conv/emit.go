package conv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Part is one pi content block, its values encoded as JSON already (most
// are copied from the source line as they are: see Str).
type Part struct {
	Kind     string // text, thinking, image, toolCall
	Text     Text   // text, thinking: a JSON string (nil: "")
	Sig      []byte // thinkingSignature: a JSON string (nil: none)
	Redacted bool
	ID, Name string // toolCall
	Args     []byte // toolCall arguments: a JSON object
	Data     []byte // image base64: a JSON string
	Mime     []byte // a JSON string
}

// Usage is a pi usage record; total carries the source format's context
// rule (see each converter), which is what pi's calculateContextTokens and
// every estimator read.
type Usage struct {
	Input, Output, CacheRead, CacheWrite, Total int64
}

// Pid is a pi id to write: a canonical lower-case UUID (Claude Code's) as
// its 16 bytes when uuid is set, any other id as text ("" for none). A
// UUID is written as its text and handed to the transcript core as its
// bytes (Produced.IDUUID): made a string here and packed back there, a
// million lines' ids were the converter's work done twice.
//
// A row id ("L<row>", a converter's id for the first entry of a source
// row) is its number when isRow, likewise written as text and handed over
// as the number (Produced.IDRow): the core packs it as that number.
type Pid struct {
	text  string
	Key   uuidKey
	UUID  bool
	row   uint32
	isRow bool
}

// TextID is the Pid of the id text.
func TextID(text string) Pid { return Pid{text: text} }

// RowID is the Pid "L<row>".
func RowID(row int) Pid { return Pid{row: uint32(row), isRow: true} }

// String is p's text.
func (p Pid) String() string {
	switch {
	case p.UUID:
		return UUIDText(p.Key)
	case p.isRow:
		return "L" + strconv.FormatUint(uint64(p.row), 10)
	}
	return p.text
}

// none reports whether p is no id at all (a root's parentId).
func (p Pid) none() bool { return !p.UUID && !p.isRow && p.text == "" }

// Entry is one pi entry to write.
type Entry struct {
	Typ       string // message, compaction, custom_message, model_change
	ID        Pid
	Parent    Pid    // none = root
	Timestamp string // ISO-8601
	// TsPi: the timestamp is pi's form of the epoch ms TsMS, and timestamp
	// is not set (see Produced.TimestampMS).
	TsPi bool
	TsMS int64

	// message
	Role          string // user, assistant, toolResult
	Content       []Part
	ContentString bool // content is content[0].text as a plain string
	MsgTime       int64
	API, Provider string
	Model         string
	StopReason    string
	Usage         *Usage
	ToolCallID    string
	ToolName      string
	IsError       bool

	// compaction
	Summary      []byte // a JSON string
	TokensBefore int64

	// custom_message
	CustomType string
}

// Emitter is what converters write into.
type Emitter struct {
	Out  *Spool
	Rows []int32
	// W holds the lines not in out yet, the one being written from lineAt.
	W      JSONWriter
	lineAt int
	// header is written lazily, before the first entry, from what the
	// converter learnt by then.
	HeaderDone bool
	SessionID  string
	Started    string
	Cwd        string
	HeaderRow  int
	Malformed  []Malformed
	Notes      []string
	Window     int
	WindowFrom string
	// Sink, when set, is handed every line with its values (Produced),
	// by drain: pend are those of the lines in w, the last one the line
	// being written.
	Sink   func(*Produced)
	p      Produced // the line being written, without a sink
	pend   []Produced
	blks   []Block // the Blocks of pend
	blocks chan outBlock
	free   chan outBlock
	outErr chan error
	// Measure: the lines are measured, not written (a lazy view, see
	// OpenLazy), but for the parts the sink's reader reads (keep); off is
	// where the next line starts in the view.
	Measure bool
	off     int64
}

// Produced is one pi line a converter wrote, with the values the pi parser
// reads back from it (the decoded strings and numbers as written). The
// transcript core builds its entries from these instead of parsing again
// every line it was just handed: that second parse of the translated copy
// cost as much as reading the source.
type Produced struct {
	// Line is the pi line without its newline, valid during the call.
	// For a lazy view (OpenLazy), whose lines are measured rather than
	// written, Line holds only the parts of the line a reader needs
	// (Measured): the header line whole, a compaction's summary and each
	// content block that is not Sized, back to back; the spans below
	// point into it either way.
	Line     []byte
	Measured bool
	// Length is the line's length (len(Line) unless Measured), Offset
	// where it starts in the view, Row the source row it came from.
	Length int
	Offset int64
	Row    int
	// Header marks the session line; the fields below are then unset.
	Header bool
	// Each field is set when the line has its key ("" or 0 otherwise).
	Type, ID, ParentID, Timestamp string
	// TimestampMS, when HasTimestampMS, is the timestamp as epoch ms, and
	// Timestamp is "": the line writes it in pi's form, which the
	// converter read from the source without making it a string.
	TimestampMS    int64
	HasTimestampMS bool
	// IDUUID and ParentUUID are the id and parentId when HasIDUUID and
	// HasParentUUID (ID and ParentID are "" then): a canonical lower-case
	// UUID as its 16 bytes, kept as they are rather than read from text.
	IDUUID, ParentUUID       [16]byte
	HasIDUUID, HasParentUUID bool
	// IDRow and ParentRow are the id and parentId "L<n>" as n, when
	// HasIDRow and HasParentRow (ID and ParentID are "" then).
	IDRow, ParentRow                                        uint32
	HasIDRow, HasParentRow                                  bool
	Role, Provider, Model, StopReason, ToolCallID, ToolName string
	CustomType                                              string
	MsgTime                                                 int64
	IsError                                                 bool
	// Usage is input, output, cacheRead, cacheWrite, totalTokens, when
	// HasUsage.
	Usage        [5]int64
	HasUsage     bool
	TokensBefore int64
	// Content is the first byte of the line's content value: '"' (a
	// string), '[' (blocks), 0 when the line has none.
	Content byte
	// Summary is the span in Line of a compaction's summary string, {0,
	// 0} when the line has none.
	Summary [2]int
	// Blocks are the content's blocks (for a string content, one: the
	// string), valid during the call like Line.
	Blocks []Block
}

// Block is one block of a produced line's content, with the length of
// its text when the converter knew it: the decoder measured the source
// string as it read it, so the transcript core need not read the copy
// again to size the message (the third pass over every text's bytes).
type Block struct {
	// Kind is the pi block type (text, thinking, image, toolCall).
	Kind string
	// Span is the block's value in Line: its object, or the string (of
	// a Sized block, only when the line is not Measured).
	Span [2]int
	// Chars is the text's (or thinking's) length in UTF-16 units when
	// Sized: a text of ASCII written as the source wrote it, which holds
	// no wide character either. An image is Sized too (it is counted,
	// never measured). Other blocks are read from Span.
	Chars int
	Sized bool
}

// Malformed is a source line that is not one JSON object. It is reported
// (file, line, error) and left out, as pi leaves out its malformed lines.
type Malformed struct {
	Line  int
	Bytes int
	Err   string
}

// Put ends the line written in v.w at lineAt (or measured, see
// view.measure), the source row it came from. Lines gather in v.w and go
// to the Spool a block at a time: one copy fewer of every byte than a
// write per line through the Spool's buffer.
func (v *Emitter) Put(row int) error {
	length := len(v.W.B) - v.lineAt + v.W.gone
	if v.Sink != nil {
		p := &v.pend[len(v.pend)-1]
		p.Line, p.Measured, p.Length, p.Offset, p.Row = v.W.B[v.lineAt:], v.Measure, length, v.off, row
		if span := &p.Summary; span[1] > 0 {
			span[0], span[1] = span[0]-v.lineAt, span[1]-v.lineAt
		}
		for i := range p.Blocks {
			sp := &p.Blocks[i].Span
			sp[0], sp[1] = sp[0]-v.lineAt, sp[1]-v.lineAt
		}
	} else {
		v.p = Produced{}
	}
	v.off += int64(length) + 1
	v.W.gone = 0
	if !v.Measure {
		v.W.B = append(v.W.B, '\n')
	}
	v.Rows = append(v.Rows, int32(row))
	if len(v.W.B) < viewBlock && len(v.pend) < viewLines {
		v.lineAt = len(v.W.B)
		return nil
	}
	return v.FlushOut()
}

// line starts a line: the Produced it fills (with a sink, the next of
// pend, zero: drain clears them).
func (v *Emitter) line() *Produced {
	if v.Sink == nil {
		return &v.p
	}
	if n := len(v.pend); n < cap(v.pend) {
		v.pend = v.pend[:n+1]
	} else {
		v.pend = append(v.pend, Produced{})
	}
	return &v.pend[len(v.pend)-1]
}

// viewBlock is how many bytes of lines the view gathers before handing
// them on (to drain, and the Spool). The blocks in flight, each with its
// lines' Produced values, are held on top of the session being built:
// small ones keep that small.
const viewBlock = 256 << 10

// viewLines bounds the lines of a block: a measured view's blocks hold
// few bytes, and their lines' Produced records (~400 bytes each) would
// otherwise pile up.
const viewLines = 1024

// outBlock is a block of lines and what was produced with them.
type outBlock struct {
	b    []byte
	recs []Produced
	blks []Block
}

// FlushOut moves the lines gathered in v.w to the Spool. With a sink, a
// goroutine of its own hands the block's lines to the sink and writes them
// while the converter goes on: building the entries and writing the view
// were half of the converter's one-core part.
func (v *Emitter) FlushOut() error {
	if v.Sink == nil {
		_, err := v.Out.Write(v.W.B)
		v.W.B, v.lineAt = v.W.B[:0], 0
		return err
	}
	if len(v.pend) == 0 && len(v.W.B) == 0 {
		return nil
	}
	if v.blocks == nil {
		v.blocks, v.free, v.outErr = make(chan outBlock, 2), make(chan outBlock, 3), make(chan error, 1)
		go v.drain()
	}
	v.blocks <- outBlock{v.W.B, v.pend, v.blks}
	var next outBlock
	select {
	case next = <-v.free:
	default:
		// Room for a block and its last line: grown line by line, a
		// block was written twice over. A measuring view writes only
		// the parts its reader keeps: it grows what it needs.
		if !v.Measure {
			next.b = make([]byte, 0, 2*viewBlock)
		}
	}
	v.W.B, v.pend, v.blks, v.lineAt = next.b[:0], next.recs[:0], next.blks[:0], 0
	return nil
}

// drain hands each block's lines to the sink, in order, and writes them.
func (v *Emitter) drain() {
	var err error
	for blk := range v.blocks {
		for i := range blk.recs {
			v.Sink(&blk.recs[i])
		}
		if err == nil && !v.Measure {
			_, err = v.Out.Write(blk.b)
		}
		clear(blk.recs) // their strings are the session's now, or garbage
		select {
		case v.free <- blk:
		default:
		}
	}
	v.outErr <- err
}

// StopOut waits for the lines handed over to be written.
func (v *Emitter) StopOut() error {
	if v.blocks == nil {
		return nil
	}
	close(v.blocks)
	err := <-v.outErr
	v.blocks = nil
	return err
}

// FinishOut writes the last lines and finishes the Spool.
func (v *Emitter) FinishOut() error {
	err := v.FlushOut()
	if err2 := v.StopOut(); err == nil {
		err = err2
	}
	if err != nil {
		return err
	}
	if v.Measure {
		v.Out.Size = v.off
	}
	return v.Out.Finish()
}

func (v *Emitter) Header(row int) error {
	if v.HeaderDone {
		return nil
	}
	v.HeaderDone = true
	id := v.SessionID
	if id == "" {
		id = "imported"
	}
	ts := v.Started
	if ts == "" {
		ts = time.Unix(0, 0).UTC().Format(piLayout)
	}
	p := v.line()
	w := &v.W
	skip := w.Skip
	w.Skip = false // the header line is read whole
	defer func() { w.Skip = skip }()
	w.FirstKey("type")
	w.Str("session")
	w.key("version")
	w.Raw("3")
	w.key("id")
	w.Str(id)
	w.key("timestamp")
	w.Str(ts)
	w.key("cwd")
	w.Str(v.Cwd)
	w.Raw("}")
	if v.HeaderRow > 0 {
		row = v.HeaderRow
	}
	p.Header = true
	return v.Put(row)
}

// Emit writes one entry produced from source row.
func (v *Emitter) Emit(e *Entry, row int) error {
	if err := v.Header(row); err != nil {
		return err
	}
	p := v.line()
	if v.Sink == nil {
		encodeEntry(&v.W, e, p, nil)
		return v.Put(row)
	}
	from := len(v.blks)
	encodeEntry(&v.W, e, p, &v.blks)
	p.Blocks = v.blks[from:len(v.blks):len(v.blks)]
	return v.Put(row)
}

// encodeEntry writes e's line and notes in p what the line says, its
// content's blocks in blks (nil: not noted).
func encodeEntry(w *JSONWriter, e *Entry, p *Produced, blks *[]Block) {
	w.FirstKey("type")
	p.Type = w.strWritten(e.Typ)
	switch e.Typ {
	case "custom_message":
		p.CustomType = w.field("customType", e.CustomType)
		w.key("content")
		p.Content = encodeContent(w, e, blks)
		w.key("display")
		w.Raw("false")
		writeBase(w, e, p)
		w.Raw("}")
		return
	}
	writeBase(w, e, p)
	switch e.Typ {
	case "message":
		w.key("message")
		encodeMessage(w, e, p, blks)
	case "compaction":
		w.key("summary")
		skip := w.Skip
		w.Skip = false // read by the sink's reader
		at := len(w.B)
		w.jstr(e.Summary)
		p.Summary = [2]int{at, len(w.B)}
		w.Skip = skip
		w.key("firstKeptEntryId")
		w.Str("")
		w.key("tokensBefore")
		w.int(e.TokensBefore)
		p.TokensBefore = e.TokensBefore
		w.key("fromHook")
		w.Raw("false")
	case "model_change":
		p.Provider = w.field("provider", e.Provider)
		p.Model = w.field("modelId", e.Model)
	}
	w.Raw("}")
}

func writeBase(w *JSONWriter, e *Entry, p *Produced) {
	w.key("id")
	p.ID, p.IDUUID, p.HasIDUUID, p.IDRow, p.HasIDRow = w.id(e.ID)
	w.key("parentId")
	if e.Parent.none() {
		w.Raw("null")
	} else {
		p.ParentID, p.ParentUUID, p.HasParentUUID, p.ParentRow, p.HasParentRow = w.id(e.Parent)
	}
	if e.TsPi {
		w.key("timestamp")
		w.piTime(e.TsMS)
		p.TimestampMS, p.HasTimestampMS = e.TsMS, true
		return
	}
	p.Timestamp = w.field("timestamp", e.Timestamp)
}

func encodeMessage(w *JSONWriter, e *Entry, p *Produced, blks *[]Block) {
	w.FirstKey("role")
	p.Role = w.strWritten(e.Role)
	switch e.Role {
	case "toolResult":
		p.ToolCallID = w.field("toolCallId", e.ToolCallID)
		p.ToolName = w.field("toolName", e.ToolName)
		w.key("content")
		p.Content = encodeContent(w, e, blks)
		w.key("isError")
		if e.IsError {
			w.Raw("true")
		} else {
			w.Raw("false")
		}
		p.IsError = e.IsError
	case "assistant":
		w.key("content")
		p.Content = encodeContent(w, e, blks)
		w.key("api")
		w.Str(e.API)
		p.Provider = w.field("provider", e.Provider)
		p.Model = w.field("model", e.Model)
		u := e.Usage
		if u == nil {
			u = &Usage{}
		}
		p.Usage, p.HasUsage = [5]int64{u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Total}, true
		w.key("usage")
		w.FirstKey("input")
		w.int(u.Input)
		w.key("output")
		w.int(u.Output)
		w.key("cacheRead")
		w.int(u.CacheRead)
		w.key("cacheWrite")
		w.int(u.CacheWrite)
		w.key("totalTokens")
		w.int(u.Total)
		w.key("cost")
		w.Raw(`{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`)
		p.StopReason = w.field("stopReason", e.StopReason)
	default:
		w.key("content")
		p.Content = encodeContent(w, e, blks)
	}
	w.key("timestamp")
	w.int(e.MsgTime)
	p.MsgTime = e.MsgTime
	w.Raw("}")
}

// written is s as a reader of the line decodes it: AppendString writes
// each byte of invalid UTF-8 as U+FFFD.
func written(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return Str{Q: AppendString(nil, s), Esc: true}.String()
}

// encodeContent writes e's content and returns what it starts with ('"'
// or '['); blocks (unless nil) gets its blocks. When w measures, the
// blocks the converter did not size are written all the same: their
// reader sizes them from their bytes.
func encodeContent(w *JSONWriter, e *Entry, blks *[]Block) byte {
	skip := w.Skip
	defer func() { w.Skip = skip }()
	if e.ContentString {
		var s Text
		if len(e.Content) > 0 {
			s = e.Content[0].Text
		}
		w.Skip = skip && s.sized
		at := len(w.B)
		w.jstr(s.B)
		if blks != nil {
			*blks = append(*blks, Block{Kind: "text", Span: [2]int{at, len(w.B)}, Chars: s.chars, Sized: s.sized})
		}
		return '"'
	}
	w.Raw("[")
	for i := range e.Content {
		if i > 0 {
			w.Raw(",")
		}
		b := &e.Content[i]
		sized := b.Text.sized || b.Kind == "image" // an image is counted, not measured
		w.Skip = skip && sized
		from := len(w.B)
		encodeBlock(w, b)
		if blks != nil {
			*blks = append(*blks, Block{Kind: b.Kind, Span: [2]int{from, len(w.B)}, Chars: b.Text.chars, Sized: sized})
		}
		w.Skip = skip
	}
	w.Raw("]")
	return '['
}

// encodeBlock writes one content block.
func encodeBlock(w *JSONWriter, b *Part) {
	w.FirstKey("type")
	w.Str(b.Kind)
	switch b.Kind {
	case "text":
		w.key("text")
		w.jstr(b.Text.B)
	case "thinking":
		w.key("thinking")
		w.jstr(b.Text.B)
		if b.Sig != nil {
			w.key("thinkingSignature")
			w.rawb(b.Sig)
		}
		if b.Redacted {
			w.key("redacted")
			w.Raw("true")
		}
	case "image":
		w.key("data")
		w.jstr(b.Data)
		w.key("mimeType")
		w.jstr(b.Mime)
	case "toolCall":
		w.key("id")
		w.Str(b.ID)
		w.key("name")
		w.Str(b.Name)
		w.key("arguments")
		if len(b.Args) == 0 {
			w.Raw("{}")
		} else {
			w.rawb(b.Args)
		}
	}
	w.Raw("}")
}

// PiTime normalises an ISO-8601 timestamp to pi's form (UTC, ms, Z) and
// gives the message timestamp pi stores (epoch ms); an unparsable one is
// kept as it is, with 0.
func PiTime(s string) (iso string, ms int64) {
	if ms, ok := PiForm(s); ok {
		return s, ms
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s, 0
	}
	return t.UTC().Format(piLayout), t.UnixMilli()
}

// PiForm reads a timestamp already in pi's form (2026-03-02T09:00:02.370Z,
// what Claude Code and Codex write on every line) without time.Parse and
// Format, which were a tenth of a converter's work and a string per line;
// ok is false for any other form, and for a field out of range, which
// PiTime leaves to time.Parse.
func PiForm[T string | []byte](s T) (ms int64, ok bool) {
	if len(s) != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return 0, false
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, mo, d, h, mi, sec, frac := num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), num(17, 19), num(20, 23)
	if y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || frac < 0 {
		return 0, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, frac*1e6, time.UTC)
	if t.Day() != d {
		return 0, false // the 30th of February: time.Parse refuses it
	}
	return t.UnixMilli(), true
}

// CompactArgs is argsObject for a raw value Dec.raw measured: a compact
// object is used as it is.
func CompactArgs(raw []byte, compact bool) []byte {
	if compact && len(raw) > 0 && raw[0] == '{' {
		return raw
	}
	return argsObject(raw)
}

// argsObject returns raw JSON as a toolCall arguments object: objects as
// they are (compacted), anything else wrapped as {"input": value}.
func argsObject(raw []byte) []byte {
	if isObject(raw) && json.Valid(raw) {
		return compactJSON(raw)
	}
	var w JSONWriter
	w.FirstKey("input")
	if len(raw) == 0 || !json.Valid(raw) {
		w.Str(string(raw))
	} else {
		w.rawb(compactJSON(raw))
	}
	w.Raw("}")
	return w.B
}

// ArgsFromString parses a JSON-encoded arguments string (Codex's
// function_call.arguments); a string that is not a JSON object becomes
// {"input": string}.
func ArgsFromString(s string) []byte {
	b := []byte(s)
	if isObject(b) && json.Valid(b) {
		return compactJSON(b)
	}
	var w JSONWriter
	w.FirstKey("input")
	w.Str(s)
	w.Raw("}")
	return w.B
}

// ArgsFromJSON is ArgsFromString for the string s of a line. A compact
// object spelled with the common escapes only (an arguments string almost
// always is) is unescaped and checked here, without encoding/json.
func ArgsFromJSON(s Str) []byte {
	if b, ok := s.unescaped(); ok && len(b) > 0 && b[0] == '{' {
		d := NewDec(b)
		if raw, compact := d.Raw(); compact && !d.Bad && len(raw) == len(b) {
			return b // what json.Compact would write of it
		}
	}
	return ArgsFromString(s.String())
}

func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// View is a transcript translated to pi v3 JSONL.
type View struct {
	// Format is the source format; Inner is the format inside a zstd file.
	Format, Inner Format
	File          string
	// Unit is what SourceRow numbers: "line" (1-based source line) or
	// "seq" (an OpenClaw transcript_events row).
	Unit string
	// ContextWindow is the model's window as the file states it (Codex's
	// model_context_window), 0 when the file does not say.
	ContextWindow int
	// WindowSource says what in the file ContextWindow comes from ("Codex
	// model_context_window", "Claude Code auto-compaction at 171204
	// tokens").
	WindowSource string
	// Malformed are source lines that are not JSON objects.
	Malformed []Malformed
	// Notes are facts worth a warning (skipped side-chain lines, …).
	Notes []string

	data *Spool
	rows []int32
	// fill writes a lazy view's bytes (data only measured them so far);
	// mu guards it, data and fillErr.
	fill    func() (*Spool, error)
	fillErr error
	closed  bool
	mu      sync.Mutex
}

// ReaderAt reads the pi JSONL.
func (v *View) ReaderAt() io.ReaderAt { return viewBytes{v} }

// viewBytes reads a view's bytes, writing them first when it is lazy.
type viewBytes struct{ v *View }

func (r viewBytes) ReadAt(p []byte, off int64) (int, error) {
	data, err := r.v.bytes()
	if err != nil {
		return 0, err
	}
	return data.ReadAt(p, off)
}

// bytes is the Spool holding the view's bytes; a lazy view's are written
// by the first call.
func (v *View) bytes() (*Spool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.closed:
		return nil, fmt.Errorf("%s: the view is closed", v.File)
	case v.fill == nil || v.fillErr != nil:
		return v.data, v.fillErr
	}
	data, err := v.fill()
	if err == nil && data.Size != v.data.Size {
		data.Close()
		err = fmt.Errorf("%s changed while ctxtool read it (its translation is %d bytes now, %d before): run the command again", v.File, data.Size, v.data.Size)
	}
	if err != nil {
		v.fillErr = err
		return nil, err
	}
	v.data, v.fill = data, nil
	return data, nil
}

// Size is the length of the pi JSONL in bytes.
func (v *View) Size() int64 { return v.data.Size }

// Lines is the number of pi lines.
func (v *View) Lines() int { return len(v.rows) }

// SourceRow maps a 1-based pi line to its source line (or row seq).
func (v *View) SourceRow(line int) int {
	if line < 1 || line > len(v.rows) {
		return line
	}
	return int(v.rows[line-1])
}

// WriteTo copies the pi JSONL to w.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, io.NewSectionReader(v.ReaderAt(), 0, v.Size()))
}

// Close releases the Spool.
func (v *View) Close() error {
	if v == nil || v.data == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	return v.data.Close()
}

// Cite formats a source position for messages: "line 12" or "row seq 12".
func (v *View) Cite(row int) string {
	if v.Unit == "seq" {
		return fmt.Sprintf("seq %d", row)
	}
	return fmt.Sprintf("line %d", row)
}

func (v *Emitter) Finish(f Format, file, unit string) (*View, error) {
	if !v.HeaderDone {
		if err := v.Header(1); err != nil {
			return nil, err
		}
	}
	if err := v.FinishOut(); err != nil {
		return nil, err
	}
	return &View{Format: f, File: file, Unit: unit, ContextWindow: v.Window, WindowSource: v.WindowFrom, Malformed: v.Malformed,
		Notes: v.Notes, data: v.Out, rows: v.Rows}, nil
}

// ViewWritten reports whether v's bytes are written (a lazy view's are
// not, until read): OpenLazy and formats' tests ask.
func ViewWritten(v *View) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.data.Discard
}

// NewView is the view of the lines e holds that no converter wrote (pi
// lines copied, an OpenClaw store's events): format f, the source file, its
// unit ("line", "seq") and the malformed source lines.
func NewView(f Format, file, unit string, malformed []Malformed, e *Emitter) *View {
	return &View{Format: f, File: file, Unit: unit, Malformed: malformed, data: e.Out, rows: e.Rows}
}

// FillLater has a lazy view's bytes written on its first read, by fill,
// which converts the same source bytes again.
func FillLater(v *View, fill func() (*View, error)) {
	v.fill = func() (*Spool, error) {
		w, err := fill()
		if err != nil {
			return nil, err
		}
		return w.data, nil
	}
}
