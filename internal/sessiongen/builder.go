package sessiongen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
	"unsafe"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// DefaultStart is the clock start when Config.Start is zero.
var DefaultStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// DefaultStep is how far the builder clock moves for an entry without an
// explicit Meta.Time.
const DefaultStep = 15 * time.Millisecond

// Config sets up a Builder.
type Config struct {
	// Version of the file: 1, 2 or 3 (0 = 3). v1 writes no id/parentId,
	// no header version and compactions with firstKeptEntryIndex.
	Version int
	// SessionID is the header id; "" = a UUID derived from Seed.
	SessionID string
	// Start is the header timestamp and the clock start (zero = DefaultStart).
	Start time.Time
	// Cwd of the header ("" = "/home/dev/project").
	Cwd string
	// ParentSession is written in the header when non-empty (v2/v3).
	ParentSession string
	// Provider/Model/API of assistant messages until a ModelChange
	// (defaults: anthropic / claude-sonnet-4-5 / anthropic-messages).
	// v1 headers also carry provider, modelId and ThinkingLevel.
	Provider, Model, API string
	ThinkingLevel        string // v1 header only ("" = "off")
	// Seed drives ids and tool-call ids.
	Seed uint64
	// SystemTokens is the fixed ground-truth overhead of every request
	// (system prompt + tool definitions); 0 = DefaultSystemTokens.
	SystemTokens int
	// NoLineIndex skips Result.Lines and Result.Context.Entries (for
	// very large files).
	NoLineIndex bool
}

// Line describes one physical line written.
type Line struct {
	N      int   // 1-based line number
	Offset int64 // byte offset of the line start
	Len    int   // bytes, without the newline
	// Type is "session" for the header, the entry type, or "" for a
	// garbage line.
	Type string
	Role string // message role for message entries
	// ID of the entry (v1: synthetic, not in the file); "" for header and
	// malformed lines.
	ID string
	// Index is pi's loader index (header = 0, used by v1
	// firstKeptEntryIndex); -1 for lines pi skips.
	Index     int
	Malformed bool
	// Objects lists the types of complete records glued into a malformed
	// line (Builder.Glued), or of the record a torn line started.
	Objects []string
	// NoNewline is true for a truncated last line.
	NoNewline bool
}

// Context is what pi's buildSessionContext yields for the file's leaf (the
// last loaded entry), with the same numbers the oracle (pi-check.mjs) prints.
type Context struct {
	Messages          int
	Roles             map[string]int
	FirstRole         string
	LastRole          string
	HeuristicTokens   int // Σ pi estimateTokens (oracle heuristicTokens)
	UsageTokens       int // pi estimateContextTokens (oracle usageTokens)
	OrphanToolResults int
	OrphanToolCalls   int
	// TrueTokens is the ground truth: what a provider would count for a
	// request made now = SystemTokens + Σ provider-visible message tokens
	// (see the package doc).
	TrueTokens    int
	CompactionID  string // active compaction entry id ("" = none)
	Provider      string
	Model         string
	ThinkingLevel string
	PathEntries   int
	// Entries and Lines: the entry id / 1-based line behind each context
	// message (the compaction entry for the summary). Nil with NoLineIndex.
	Entries []string
	Lines   []int
}

// Result summarises a written file.
type Result struct {
	Version int
	Bytes   int64
	// LineCount counts physical lines, including an unterminated last one
	// (the oracle's "lines").
	LineCount int
	Lines     []Line // nil with Config.NoLineIndex
	// Entries is how many records pi loads, header excluded (oracle
	// "entries").
	Entries        int
	MalformedLines []int
	Types          map[string]int // loaded entries by type
	Roles          map[string]int // loaded message entries by role
	LeafID         string
	Context        Context
	Compactions    int
	Facts          []PlantedFact // filled by Generate
	ToolCalls      int
	ToolResults    int
	Images         int
}

type node struct {
	id        string
	parent    *node
	typ, role string
	line      int
	index     int // pi loader index (header = 0)
	images    int
	emits     bool
	heur      int // pi estimateTokens of the context message
	trueTok   int // provider-visible ground-truth tokens
	ctxTrue   int // provider-visible tokens of the context if this were the leaf
	usage     int // calculateContextTokens of a trusted assistant; -1 = none
	calls     []string
	result    string // toolResult: toolCallId
	firstKept string // compaction
	provider  string // model_change, assistant
	model     string
	thinking  string // thinking_level_change
}

// Builder writes a session file entry by entry, exactly as pi would, and
// keeps enough bookkeeping to report what pi will load (Result). Methods
// record the first error (see Err) and become no-ops after it, like
// bufio.Writer, so handcrafted sessions read as a plain list of calls.
type Builder struct {
	w         *bufio.Writer
	cfg       Config
	version   int
	rng       *rand.Rand
	clock     time.Time
	prevClock time.Time
	buf       []byte
	off       int64
	line      int
	index     int
	ids       map[string]*node
	leaf      *node
	last      *node
	provider  string
	model     string
	api       string
	sysTokens int
	cacheOK   bool
	cached    int
	closed    bool
	ended     bool // truncated tail written
	err       error
	res       Result
}

// NewBuilder writes the header line and returns a Builder appending to w.
func NewBuilder(w io.Writer, cfg Config) *Builder {
	if cfg.Version == 0 {
		cfg.Version = 3
	}
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	if cfg.Cwd == "" {
		cfg.Cwd = "/home/dev/project"
	}
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	if cfg.API == "" {
		cfg.API = apiFor(cfg.Provider)
	}
	if cfg.SystemTokens == 0 {
		cfg.SystemTokens = DefaultSystemTokens
	}
	b := &Builder{
		w:         bufio.NewWriterSize(w, 1<<20),
		cfg:       cfg,
		version:   cfg.Version,
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0x5e55107)),
		clock:     cfg.Start.UTC(),
		ids:       map[string]*node{},
		provider:  cfg.Provider,
		model:     cfg.Model,
		api:       cfg.API,
		sysTokens: cfg.SystemTokens,
	}
	b.prevClock = b.clock
	b.res.Version = cfg.Version
	b.res.Types = map[string]int{}
	b.res.Roles = map[string]int{}
	if cfg.Version < 1 || cfg.Version > 3 {
		b.err = fmt.Errorf("sessiongen: version %d not supported (1, 2 or 3)", cfg.Version)
		return b
	}
	if cfg.SessionID == "" {
		cfg.SessionID = b.UUID()
		b.cfg.SessionID = cfg.SessionID
	}
	h := append(b.buf[:0], `{"type":"session"`...)
	if cfg.Version > 1 {
		h = append(h, `,"version":`...)
		h = append(h, byte('0'+cfg.Version))
	}
	h = append(h, `,"id":`...)
	h = formats.AppendString(h, cfg.SessionID)
	h = append(h, `,"timestamp":`...)
	h = appendTime(h, b.clock)
	h = append(h, `,"cwd":`...)
	h = formats.AppendString(h, cfg.Cwd)
	if cfg.Version == 1 {
		tl := cfg.ThinkingLevel
		if tl == "" {
			tl = "off"
		}
		h = append(h, `,"provider":`...)
		h = formats.AppendString(h, cfg.Provider)
		h = append(h, `,"modelId":`...)
		h = formats.AppendString(h, cfg.Model)
		h = append(h, `,"thinkingLevel":`...)
		h = formats.AppendString(h, tl)
	}
	if cfg.ParentSession != "" {
		h = append(h, `,"parentSession":`...)
		h = formats.AppendString(h, cfg.ParentSession)
	}
	h = append(h, '}')
	b.buf = h
	b.writeLine(h, Line{Type: "session", Index: 0}, true)
	b.index = 1
	return b
}

func apiFor(provider string) string {
	switch provider {
	case "openai":
		return "openai-responses"
	case "google":
		return "google-generative-ai"
	case "mistral":
		return "mistral-conversations"
	case "amazon-bedrock":
		return "bedrock-converse-stream"
	case "ollama":
		return "openai-completions"
	}
	return "anthropic-messages"
}

// Err returns the first error met (bad input, write failure).
func (b *Builder) Err() error { return b.err }

// Lines returns how many lines have been written so far (the next line's
// number minus one).
func (b *Builder) Lines() int { return b.line }

// Bytes written so far.
func (b *Builder) Bytes() int64 { return b.off }

// Leaf returns the id of the current leaf ("" when unset).
func (b *Builder) Leaf() string {
	if b.leaf == nil {
		return ""
	}
	return b.leaf.id
}

// Now returns the builder clock.
func (b *Builder) Now() time.Time { return b.clock }

// Advance moves the builder clock forward.
func (b *Builder) Advance(d time.Duration) { b.clock = b.clock.Add(d) }

// Rand is the builder's deterministic random source (seeded by Config.Seed).
func (b *Builder) Rand() *rand.Rand { return b.rng }

// ContextTokens is the ground-truth size of a request made from the current
// leaf: SystemTokens + provider-visible tokens of its context.
func (b *Builder) ContextTokens() int {
	if b.leaf == nil {
		return b.sysTokens
	}
	return b.sysTokens + b.leaf.ctxTrue
}

// Branch moves the leaf to the entry id, as pi's branch(id) does: the next
// entry becomes a child of id and the entries after it become an abandoned
// branch. id "" resets the leaf (the next entry is a new root). v1 files
// are linear and cannot branch.
func (b *Builder) Branch(id string) {
	if b.err != nil {
		return
	}
	if b.version == 1 {
		b.err = errors.New("sessiongen: v1 sessions are linear; Branch is not possible")
		return
	}
	if id == "" {
		b.leaf = nil
		b.cacheOK = false
		return
	}
	n := b.ids[id]
	if n == nil { // unknown, or a record lost in a malformed line
		b.err = fmt.Errorf("sessiongen: Branch(%q): no such entry", id)
		return
	}
	b.leaf = n
	b.cacheOK = false
}

// NewID returns a fresh random 8-hex id that is unique in the file.
func (b *Builder) NewID() string {
	const hex = "0123456789abcdef"
	for {
		v := b.rng.Uint32()
		var s [8]byte
		for i := 7; i >= 0; i-- {
			s[i] = hex[v&0xf]
			v >>= 4
		}
		id := string(s[:])
		if _, dup := b.ids[id]; !dup {
			b.ids[id] = nil // reserve
			return id
		}
	}
}

// UUID returns a random (seeded) version-4 UUID string.
func (b *Builder) UUID() string {
	var u [16]byte
	for i := 0; i < 16; i += 8 {
		v := b.rng.Uint64()
		for j := 0; j < 8; j++ {
			u[i+j] = byte(v >> (8 * j))
		}
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xf])
	}
	return string(out)
}

// ToolCallID returns a provider-style tool-call id for the current model:
// Anthropic "toolu_01" + 22 chars, OpenAI Responses "call_…|fc_…",
// others "call_" + 24 chars.
func (b *Builder) ToolCallID() string {
	const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	s := make([]byte, 0, 80)
	n := 24
	switch b.provider {
	case "anthropic", "amazon-bedrock":
		s = append(s, "toolu_01"...)
		n = 22
	default:
		s = append(s, "call_"...)
	}
	for i := 0; i < n; i++ {
		s = append(s, alnum[b.rng.IntN(len(alnum))])
	}
	if b.provider == "openai" {
		s = append(s, "|fc_"...)
		s = append(s, hexString(b.rng, 48)...)
	}
	return string(s)
}

// Append writes e as the next entry and returns its id.
func (b *Builder) Append(e Entry) string {
	if b.err != nil {
		return ""
	}
	if b.ended {
		b.err = errors.New("sessiongen: the truncated last line was written; nothing can follow it")
		return ""
	}
	n, line, err := b.render(e)
	if err != nil {
		b.err = err
		return ""
	}
	b.commit(n)
	b.writeLine(line, Line{Type: n.typ, Role: n.role, ID: n.id, Index: b.index}, true)
	b.index++
	return n.id
}

// User appends a user message.
func (b *Builder) User(u User) string { return b.Append(&u) }

// UserText appends a user message with one text block (pi's usual form).
func (b *Builder) UserText(text string) string {
	return b.Append(&User{Blocks: []Block{Text(text)}})
}

// Assistant appends an assistant message.
func (b *Builder) Assistant(a Assistant) string { return b.Append(&a) }

// AssistantText appends an assistant message with one text block.
func (b *Builder) AssistantText(text string) string {
	return b.Append(&Assistant{Content: []Block{Text(text)}})
}

// ToolResult appends a toolResult message.
func (b *Builder) ToolResult(r ToolResult) string { return b.Append(&r) }

// ToolResultText appends a successful text toolResult.
func (b *Builder) ToolResultText(callID, toolName, text string) string {
	return b.Append(&ToolResult{ToolCallID: callID, ToolName: toolName, Content: []Block{TextKind(text, KindCode)}})
}

// BashExecution appends a bashExecution message.
func (b *Builder) BashExecution(x BashExecution) string { return b.Append(&x) }

// CustomMessage appends a custom_message entry.
func (b *Builder) CustomMessage(x CustomMessage) string { return b.Append(&x) }

// CustomRole appends a role-custom message entry.
func (b *Builder) CustomRole(x CustomRole) string { return b.Append(&x) }

// Custom appends a custom entry.
func (b *Builder) Custom(x Custom) string { return b.Append(&x) }

// ModelChange appends a model_change entry and switches the current model.
func (b *Builder) ModelChange(x ModelChange) string { return b.Append(&x) }

// ThinkingLevelChange appends a thinking_level_change entry.
func (b *Builder) ThinkingLevelChange(x ThinkingLevelChange) string { return b.Append(&x) }

// Compaction appends a compaction entry.
func (b *Builder) Compaction(x Compaction) string { return b.Append(&x) }

// BranchSummary appends a branch_summary entry.
func (b *Builder) BranchSummary(x BranchSummary) string { return b.Append(&x) }

// Label appends a label entry.
func (b *Builder) Label(x Label) string { return b.Append(&x) }

// SessionInfo appends a session_info entry.
func (b *Builder) SessionInfo(x SessionInfo) string { return b.Append(&x) }

// Garbage writes a line that is not JSON (pi skips it). It does not move
// the leaf. text must not contain a newline and must not parse as JSON.
func (b *Builder) Garbage(text string) {
	if b.err != nil {
		return
	}
	if strings.ContainsAny(text, "\n") || json.Valid([]byte(text)) || strings.TrimSpace(text) == "" {
		b.err = fmt.Errorf("sessiongen: Garbage(%.40q) must be a non-empty, invalid JSON line without newline", text)
		return
	}
	b.writeLine([]byte(text), Line{Malformed: true, Index: -1}, true)
}

// Glued writes several complete entries on one line with nothing between
// them, as happens when a line is appended to a file that lacks its final
// newline. JSON.parse fails on such a line, so pi loses all of them: they
// get ids (reserved, unique) and parent = the current leaf, but the leaf
// does not move and they are not in the Result's entries or context.
// It returns the ids of the hidden records.
func (b *Builder) Glued(entries ...Entry) []string {
	if b.err != nil {
		return nil
	}
	if len(entries) < 2 {
		b.err = errors.New("sessiongen: Glued needs at least two entries")
		return nil
	}
	var line []byte
	var ids, types []string
	for _, e := range entries {
		n, l, err := b.render(e)
		if err != nil {
			b.err = err
			return nil
		}
		line = append(line, l...)
		ids = append(ids, n.id)
		types = append(types, n.typ)
	}
	b.writeLine(line, Line{Malformed: true, Index: -1, Objects: types}, true)
	return ids
}

// Torn writes the first keep bytes of entry e (keep <= 0 or too large =
// half of it), as a crash mid-write leaves it. With newline false this is
// the file's last line and nothing may follow; with newline true it is a
// torn line in the middle (a later writer added the newline first). The
// record is lost to pi; its id is returned.
func (b *Builder) Torn(e Entry, keep int, newline bool) string {
	if b.err != nil {
		return ""
	}
	n, l, err := b.render(e)
	if err != nil {
		b.err = err
		return ""
	}
	if keep <= 0 || keep >= len(l) {
		keep = len(l) / 2
	}
	// never cut inside a UTF-8 sequence: node would decode a partial
	// sequence as U+FFFD, which is fine, but keep the file valid UTF-8.
	for keep > 1 && l[keep]&0xC0 == 0x80 {
		keep--
	}
	b.writeLine(l[:keep], Line{Malformed: true, Index: -1, Objects: []string{n.typ}, NoNewline: !newline}, newline)
	if !newline {
		b.ended = true
	}
	return n.id
}

// Close flushes the output and returns what pi will load from the file.
func (b *Builder) Close() (*Result, error) {
	if b.closed {
		return &b.res, b.err
	}
	b.closed = true
	if err := b.w.Flush(); err != nil && b.err == nil {
		b.err = err
	}
	b.res.Bytes = b.off
	b.res.LineCount = b.line
	if b.last != nil {
		b.res.LeafID = b.last.id
	}
	b.res.Context = b.context()
	return &b.res, b.err
}

func (b *Builder) writeLine(line []byte, l Line, newline bool) {
	b.line++
	l.N = b.line
	l.Offset = b.off
	l.Len = len(line)
	if l.Malformed {
		b.res.MalformedLines = append(b.res.MalformedLines, l.N)
	}
	if !b.cfg.NoLineIndex {
		b.res.Lines = append(b.res.Lines, l)
	}
	if _, err := b.w.Write(line); err != nil && b.err == nil {
		b.err = err
	}
	b.off += int64(len(line))
	if newline {
		if err := b.w.WriteByte('\n'); err != nil && b.err == nil {
			b.err = err
		}
		b.off++
	}
}

// commit makes a rendered node part of the tree and moves the leaf to it.
func (b *Builder) commit(n *node) {
	n.line = b.line + 1
	b.ids[n.id] = n
	b.leaf = n
	b.last = n
	b.res.Entries++
	b.res.Types[n.typ]++
	if n.role != "" {
		b.res.Roles[n.role]++
	}
	b.res.ToolCalls += len(n.calls)
	b.res.Images += n.images
	if n.role == "toolResult" {
		b.res.ToolResults++
	}
	if n.typ == "compaction" {
		b.res.Compactions++
		b.cacheOK = false
	}
	if n.typ == "model_change" {
		b.provider, b.model, b.api = n.provider, n.model, apiFor(n.provider)
		b.cacheOK = false
	}
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	return append(b, '"')
}

func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// context rebuilds what pi's buildSessionContext yields for the last loaded
// entry and computes the oracle's numbers for it.
func (b *Builder) context() Context {
	c := Context{Roles: map[string]int{}, ThinkingLevel: "off"}
	if b.last == nil {
		return c
	}
	var path []*node
	for n := b.last; n != nil; n = n.parent {
		path = append(path, n)
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	c.PathEntries = len(path)
	comp := -1
	for i, n := range path {
		switch {
		case n.typ == "thinking_level_change":
			c.ThinkingLevel = n.thinking
		case n.typ == "model_change", n.role == "assistant":
			c.Provider, c.Model = n.provider, n.model
		case n.typ == "compaction":
			comp = i
		}
	}
	var msgs []*node
	if comp >= 0 {
		cn := path[comp]
		c.CompactionID = cn.id
		msgs = append(msgs, cn)
		found := false
		for _, n := range path[:comp] {
			if n.id == cn.firstKept {
				found = true
			}
			if found && n.emits {
				msgs = append(msgs, n)
			}
		}
		path = path[comp+1:]
	}
	for _, n := range path {
		if n.emits {
			msgs = append(msgs, n)
		}
	}
	c.Messages = len(msgs)
	c.TrueTokens = b.sysTokens
	anchor := -1
	lastA := -1
	lastResult := map[string]int{}
	calls := map[string]bool{}
	for i, n := range msgs {
		role := n.role
		switch n.typ {
		case "compaction":
			role = "compactionSummary"
		case "branch_summary":
			role = "branchSummary"
		case "custom_message":
			role = "custom"
		}
		c.Roles[role]++
		if i == 0 {
			c.FirstRole = role
		}
		c.LastRole = role
		c.HeuristicTokens += n.heur
		c.TrueTokens += n.trueTok
		if n.usage >= 0 {
			anchor = i
		}
		if role == "assistant" {
			lastA = i
			for _, id := range n.calls {
				calls[id] = true
			}
		}
		if role == "toolResult" {
			if !calls[n.result] {
				c.OrphanToolResults++
			}
			lastResult[n.result] = i
		}
		if !b.cfg.NoLineIndex {
			c.Entries = append(c.Entries, n.id)
			c.Lines = append(c.Lines, n.line)
		}
	}
	for i, n := range msgs {
		if n.role != "assistant" || i == lastA {
			continue
		}
		for _, id := range n.calls {
			if j, ok := lastResult[id]; !ok || j < i {
				c.OrphanToolCalls++
			}
		}
	}
	if anchor < 0 {
		c.UsageTokens = c.HeuristicTokens
	} else {
		c.UsageTokens = msgs[anchor].usage
		for _, n := range msgs[anchor+1:] {
			c.UsageTokens += n.heur
		}
	}
	return c
}
