package recall

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/swar"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Extraction turns one physical JSONL line into the searchable text of the
// entries on it. It reads the raw line itself (not the pi context) because
// recall has to find what compactions and rolls removed from the context:
// every branch, every entry, the whole file.
//
// What is indexed, per entry (one content line each, whitespace collapsed as
// OpenClaw's session indexer does):
//   - user / assistant text blocks ("User: …", "Assistant: …");
//   - assistant thinking blocks: they hold the reasons behind decisions,
//     which is exactly what an agent later asks its memory for;
//   - tool calls: name, then argument keys and values as plain text;
//   - tool results: text blocks, whole (images become "[image]");
//   - bashExecution: command and output, whole;
//   - role custom / hookMessage messages and custom_message entries;
//   - compaction and branch_summary summaries (earlier summaries are history
//     too: a later compaction may have rewritten them).
//
// Tool output is indexed whole (a subagent's report or a long command's
// output is often the most valuable text of a session, and its words were
// lost past a 4,000-character cut): chunked like everything else. Only
// blobs are left out, each replaced by a marker and counted in the stats:
// base64 runs of blobChars or more (images pasted as data URLs, encoded
// files), output that is binary (control bytes), and image blocks.
// recall.toolOutputChars > 0 caps each piece again (head and tail kept).
// A piece over maxPieceBytes (8 MiB) is cut to that in any case, head and
// tail kept, the middle counted in the stats as left out: a 200 MB tool
// result, indexed whole, held its decoded text, the joined and the
// whitespace-collapsed copies and all its chunks at once (1.1 GB peak RSS,
// over the three times the line that index may hold).
//
// Not indexed: custom entries (extension state), model/thinking changes,
// labels, session_info, image data, toolResult details.
// Secrets are redacted before extraction (unless recall.redact is false),
// as OpenClaw redacts before indexing: the index is read by agents and
// printed by search, unlike the transcripts it was built from.

// unit is the text of one entry with what a citation needs.
type unit struct {
	text string
	id   string
	ts   int64 // unix ms, 0 if unknown
	// tool marks tool output (tool results, bash runs): ranked below what
	// the user and the assistant wrote (toolWeight in score.go).
	tool bool
}

// extractor holds the per-index limits and counts what it left out.
type extractor struct {
	// maxChars caps tool results, tool call arguments, thinking and bash
	// output per message (head + tail are kept); 0: no cap.
	maxChars int
	leftOut  LeftOut
	// redact replaces secrets with their markers (secrets.RedactJSON).
	redact bool
}

// LeftOut counts what extraction left out of the index.
type LeftOut struct {
	Blobs     int   `json:"blobs,omitempty"`     // base64 runs and binary outputs
	BlobBytes int64 `json:"blobBytes,omitempty"` // their bytes
	Images    int   `json:"images,omitempty"`    // image blocks
	// Cut counts the pieces of tool output over maxPieceBytes, CutBytes
	// the bytes left out of their middles.
	Cut      int   `json:"cut,omitempty"`
	CutBytes int64 `json:"cutBytes,omitempty"`
}

// Add adds o's counts to s.
func (s *LeftOut) Add(o LeftOut) {
	s.Blobs += o.Blobs
	s.BlobBytes += o.BlobBytes
	s.Images += o.Images
	s.Cut += o.Cut
	s.CutBytes += o.CutBytes
}

// maxPieceBytes bounds one piece of tool output (a tool result, a bash
// command or its output, a tool call's arguments) whatever
// recall.toolOutputChars says: a longer piece keeps its first two thirds
// and its last third of maxPieceBytes. Index holds a piece's decoded
// text, its collapsed copy and its chunks at once: uncut, a 200 MB tool
// result peaked at 1.1 GB. 8 MiB is some 5,000 chunks, more than any
// output an agent reads back whole.
const maxPieceBytes = 8 << 20

// clip is the indexed text of a piece of tool output: cut to maxPieceBytes,
// blobs replaced, capped when maxChars is set.
func (x *extractor) clip(s string) string {
	if n := len(s); n > maxPieceBytes {
		s = capText(s, maxPieceBytes)
		x.leftOut.Cut++
		x.leftOut.CutBytes += int64(n - (len(s) - len(capMarker)))
	}
	return capText(x.stripBlobs(s), x.maxChars)
}

// blobChars is the shortest base64 run taken for a blob (a SHA-512 in
// base64 is 88 characters; a 200-byte image 268).
const blobChars = 256

// b64 marks the bytes of base64 (standard and URL-safe).
var b64 = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c], t[c+'a'-'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "+/=-_" {
		t[c] = true
	}
	return t
}()

// stripBlobs replaces base64 runs of blobChars or more (with upper case,
// lower case and digits: not a long word or a row of dashes) by a marker,
// and binary output (control bytes in over a tenth of its first 4 KiB)
// whole.
//
// Such a run covers at least one of the points blobChars apart that it
// looks at (one byte in 256), so only the runs through those points are
// measured: byte by byte, the scan of code and paths (base64 bytes, most
// of them) was a sixth of the CPU of re-reading a search's candidates
// from their files (reread.go), and tool output is most of what is
// indexed.
func (x *extractor) stripBlobs(s string) string {
	if len(s) < blobChars {
		return s
	}
	if binaryText(s) {
		x.leftOut.Blobs++
		x.leftOut.BlobBytes += int64(len(s))
		return "[binary output, " + strconv.Itoa(len(s)) + " bytes]"
	}
	const step = blobChars
	var b strings.Builder
	last := 0
	for p := step - 1; p < len(s); p += step {
		if !b64[s[p]] {
			continue
		}
		// The maximal run through p (it starts past the last run
		// measured, which ended at a byte that is not base64).
		i, j := p, p
		for i > 0 && b64[s[i-1]] {
			i--
		}
		for j < len(s) && b64[s[j]] {
			j++
		}
		if j-i >= blobChars && base64Kinds(s[i:j]) {
			if b.Len() == 0 {
				b.Grow(len(s) - (j - i))
			}
			b.WriteString(s[last:i])
			b.WriteString("[base64, " + strconv.Itoa(j-i) + " bytes]")
			last = j
			x.leftOut.Blobs++
			x.leftOut.BlobBytes += int64(j - i)
		}
		p += (j - p) / step * step // the next point is past the run
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// base64Kinds reports whether run holds upper case, lower case and digits
// (a blob, not a long word or a row of dashes).
func base64Kinds(run string) bool {
	kinds := 0
	for i := 0; i < len(run) && kinds != 7; i++ {
		switch c := run[i]; {
		case c >= 'a' && c <= 'z':
			kinds |= 1
		case c >= 'A' && c <= 'Z':
			kinds |= 2
		case c >= '0' && c <= '9':
			kinds |= 4
		}
	}
	return kinds == 7
}

// binaryText reports output whose first 4 KiB are over a tenth control
// bytes (other than whitespace).
//
// Eight bytes at a time: words without a byte below 0x20 or DEL (most of
// text) are skipped whole. Byte by byte, this was a fifth of the CPU of
// re-reading a search's candidates from their files (reread.go).
func binaryText(s string) bool {
	n := min(len(s), 4096)
	ctrl := 0
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := swar.LoadString(s, i); (swar.Below(x, 0x20)|swar.Equal(x, 0x7f))&swar.High == 0 {
			continue
		}
		for _, c := range []byte(s[i : i+8]) {
			if c < 0x20 && !asciiSpace(c) || c == 0x7f {
				ctrl++
			}
		}
	}
	for ; i < n; i++ {
		if c := s[i]; c < 0x20 && !asciiSpace(c) || c == 0x7f {
			ctrl++
		}
	}
	return ctrl*10 > n
}

// extractLine decodes one physical line. ok=false means the line is
// malformed (not one JSON object). A line holding several concatenated JSON
// objects (how a missing final newline followed by an append looks) is still
// reported malformed, but the text of each object is indexed: pi drops such
// records from the context, which is all the more reason to keep them
// findable.
func (x *extractor) extractLine(line []byte) (units []unit, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, true
	}
	if r, m, ok := transcript.ParseRecord(line); ok {
		if u, has := x.entryUnit(r, m); has {
			units = append(units, u)
		}
		return units, true
	}
	// Glued objects: the decoder only finds where each one ends.
	dec := json.NewDecoder(bytes.NewReader(line))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if r, m, ok := transcript.ParseRecord(raw); ok {
			if u, has := x.entryUnit(r, m); has {
				units = append(units, u)
			}
		}
	}
	return units, false
}

// entryUnit is the searchable text of one entry (false when it has none):
// its message's text under a label saying whose it is.
func (x *extractor) entryUnit(e transcript.Record, m *transcript.Message) (unit, bool) {
	if m == nil {
		return unit{}, false
	}
	var b strings.Builder
	var ts int64
	tool := false
	if t, ok := e.TimestampTime(); ok {
		ts = t.UnixMilli()
	}
	switch e.Type {
	case "message", "custom_message": // transcript's message decoder gives a custom_message the role "custom"
		if t := msgTimestamp(m); t > 0 {
			ts = t
		}
		switch m.Role {
		case "user":
			b.WriteString("User: ")
			x.writeBlocks(&b, m.Content)
		case "assistant":
			b.WriteString("Assistant: ")
			x.writeBlocks(&b, m.Content)
		case "toolResult":
			tool = true
			b.WriteString("Tool result")
			if m.ToolName != "" {
				b.WriteString(" (" + m.ToolName + ")")
			}
			b.WriteString(": ")
			if len(m.Content) == 1 && m.Content[0].Type == "text" {
				// One text block (the usual result) is clipped where it is:
				// joining it first copied a 200 MB result once more.
				b.WriteString(x.clip(m.Content[0].Text))
				break
			}
			var rb strings.Builder
			x.writeBlocks(&rb, m.Content)
			b.WriteString(x.clip(rb.String()))
		case "bashExecution":
			tool = true
			b.WriteString("Bash: $ ")
			b.WriteString(x.clip(m.Command))
			b.WriteString(" → ")
			b.WriteString(x.clip(m.Output))
		case "custom": // also v2's hookMessage, which transcript's message decoder renames
			b.WriteString("Custom")
			if m.CustomType != "" {
				b.WriteString(" (" + m.CustomType + ")")
			}
			b.WriteString(": ")
			x.writeBlocks(&b, m.Content)
		default:
			return unit{}, false
		}
	case "compaction":
		b.WriteString("Compaction summary: ")
		b.WriteString(m.Summary)
	case "branch_summary":
		b.WriteString("Branch summary: ")
		b.WriteString(m.Summary)
	default:
		return unit{}, false
	}
	text := normalizeSpace(b.String())
	if i := strings.IndexByte(text, ':'); i >= 0 && strings.TrimSpace(text[i+1:]) == "" {
		return unit{}, false // label only, nothing to find
	}
	return unit{text: text, id: e.ID, ts: ts, tool: tool}, true
}

// writeBlocks appends the text of a message's content blocks (a string
// content is its one text block). Thinking and tool call arguments are capped here; callers cap
// whole tool results.
func (x *extractor) writeBlocks(b *strings.Builder, blocks []transcript.Block) {
	for i, bl := range blocks {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
		case "thinking":
			if bl.Thinking != "" {
				b.WriteString("(thinking: ")
				b.WriteString(capText(bl.Thinking, x.maxChars))
				b.WriteString(")")
			}
		case "toolCall":
			b.WriteString("[tool call ")
			b.WriteString(bl.Name)
			if len(bl.Arguments) > 0 && string(bl.Arguments) != "null" {
				b.WriteByte(' ')
				b.WriteString(x.clip(argsText(bl.Arguments)))
			}
			b.WriteString("]")
		case "image":
			x.leftOut.Images++
			b.WriteString("[image]")
		}
	}
}

// argsText renders tool-call arguments as their keys and values in order,
// space-separated, strings unescaped, so that code and paths inside them ("\n" escapes,
// quotes) tokenize like the text they are.
func argsText(raw json.RawMessage) string {
	var b strings.Builder
	b.Grow(len(raw))
	transcript.Scalars(raw, func(tok string, str bool) {
		if !str || b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(tok)
	})
	return b.String()
}

// capText keeps the head and tail of s within max bytes (cut on rune
// boundaries), marking the gap. The middle of a long tool output is the
// least likely part to be asked for; its first and last lines (the command's
// header, the error at the end) are the most.
func capText(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	head := max * 2 / 3
	tail := max - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + capMarker + s[start:]
}

// capMarker stands for the middle capText leaves out.
const capMarker = " […] "

// normalizeSpace collapses every whitespace run (newlines included) to one
// space and trims, as OpenClaw's session indexer does (what
// strings.Join(strings.Fields(s), " ") gives). Runs of plain ASCII words
// with single spaces between them are found eight bytes at a time and
// copied whole: byte by byte this was a fifth of the reader's CPU.
func normalizeSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); {
		c, size := s[i], 1
		isSpace := asciiSpace(c)
		if c >= utf8.RuneSelf {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			isSpace = unicode.IsSpace(r)
		}
		if isSpace {
			space = true
			i += size
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		j := i + size
		if c < utf8.RuneSelf {
			j = plainEnd(s, j)
		} else {
			j = ideographsEnd(s, j)
		}
		b.WriteString(s[i:j])
		i = j
	}
	return b.String()
}

// ideographsEnd is where the run of CJK ideographs at s[i:] ends: runes
// U+4000-U+9FFF (UTF-8 lead bytes 0xE4-0xE9; none is a space), copied as
// one run. Rune by rune, with a table lookup for spaces, CJK text was a
// tenth of the CPU of re-reading a search's candidates (reread.go).
func ideographsEnd(s string, i int) int {
	for i+3 <= len(s) && s[i] >= 0xE4 && s[i] <= 0xE9 && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
		i += 3
	}
	return i
}

// plainEnd is where the plain ASCII at s[i:] ends: bytes that are not
// whitespace, and single spaces between them.
func plainEnd(s string, i int) int {
	for i < len(s) {
		// Skip words with no byte below '!' or above DEL.
		for i+8 <= len(s) {
			x := swar.LoadString(s, i)
			if (swar.Below(x, '!')|x)&swar.High != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			return i
		}
		switch c := s[i]; {
		case c > ' ' && c < utf8.RuneSelf, c < ' ' && !asciiSpace(c):
			i++
		case c == ' ' && i+1 < len(s) && s[i+1] > ' ' && s[i+1] < utf8.RuneSelf:
			i += 2
		default:
			return i
		}
	}
	return i
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// msgTimestamp reads message.timestamp (epoch ms; positive numbers below
// 1e11 are seconds, as OpenClaw treats them; ISO strings accepted), 0 when
// absent or unusable.
func msgTimestamp(m *transcript.Message) int64 {
	if m.TimestampText != "" {
		return parseISOms(m.TimestampText)
	}
	f := m.Timestamp
	if f <= 0 || f > math.MaxInt64/2 {
		return 0
	}
	if f < 1e11 {
		f *= 1000
	}
	return int64(f)
}

func parseISOms(s string) int64 {
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
