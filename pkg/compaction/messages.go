package compaction

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Msg is one context message to summarise: the entry that produced it and
// its decoded content.
type Msg struct {
	E *transcript.Entry
	M *transcript.Message

	// scanned caches the message's facts: the summary and its audit both
	// read them.
	scanOnce sync.Once
	scanned  []facts.Fact
}

// Facts are the facts of the message (pkg/facts), scanned once.
func (m *Msg) Facts() []facts.Fact {
	m.scanOnce.Do(func() {
		var groups [][]facts.Fact
		for _, src := range facts.FromMessage(m.E, m.M) {
			groups = append(groups, facts.Scan(src))
		}
		m.scanned = facts.Merge(groups)
	})
	return m.scanned
}

// msgFacts merges the facts of msgs in order (the session's recency).
func msgFacts(msgs ...[]*Msg) [][]facts.Fact {
	var groups [][]facts.Fact
	for _, ms := range msgs {
		for _, m := range ms {
			groups = append(groups, m.Facts())
		}
	}
	return groups
}

// Role is the context role (user, assistant, toolResult, …).
func (m *Msg) Role() string { return m.E.Role() }

// loadMsgs decodes the messages of entries (entries that produce none are
// skipped, as are compactions: their summary travels as previousSummary).
func loadMsgs(s *transcript.Session, entries []*transcript.Entry) ([]*Msg, error) {
	out := make([]*Msg, 0, len(entries))
	for _, e := range entries {
		if !e.ProducesMessage() {
			continue
		}
		m, err := s.Message(e)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", s.File, e.Line, err)
		}
		if m == nil {
			continue
		}
		out = append(out, &Msg{E: e, M: m})
	}
	return out, nil
}

// text returns the plain text of a message for the summariser.
func msgText(m *transcript.Message) string {
	switch m.Role {
	case "bashExecution":
		return "$ " + m.Command + "\n" + m.Output
	case "compactionSummary", "branchSummary":
		return m.Summary
	}
	// One text block (the usual case, and a huge tool result's) is
	// returned as is: no copy of a string that can be hundreds of MB.
	return joinBlocks(m, "text", "", func(bl transcript.Block) string { return bl.Text })
}

func thinkingText(m *transcript.Message) string {
	return joinBlocks(m, "thinking", "\n", func(bl transcript.Block) string { return bl.Thinking })
}

func assistantText(m *transcript.Message) string {
	return joinBlocks(m, "text", "\n", func(bl transcript.Block) string { return bl.Text })
}

// joinBlocks joins with sep the non-empty text (read by text) of m's blocks
// of type typ.
func joinBlocks(m *transcript.Message, typ, sep string, text func(transcript.Block) string) string {
	var parts []string
	for _, bl := range m.Content {
		if t := text(bl); bl.Type == typ && t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, sep)
}

// formatCall renders a tool call as name(k=v, …) with values as JSON.
func formatCall(b transcript.Block) string {
	var args map[string]json.RawMessage
	if len(b.Arguments) > 0 && json.Unmarshal(b.Arguments, &args) == nil {
		parts := make([]string, 0, len(args))
		for _, k := range slices.Sorted(maps.Keys(args)) {
			parts = append(parts, k+"="+string(args[k]))
		}
		return b.Name + "(" + strings.Join(parts, ", ") + ")"
	}
	return b.Name + "(" + string(b.Arguments) + ")"
}

// ResultPreview decides how much of a tool result the summariser sees.
type ResultPreview func(s string) string

// headPreview keeps the first n units, like pi (2,000 chars).
func headPreview(n int) ResultPreview {
	return func(s string) string {
		if u16len(s) <= n {
			return s
		}
		head := cutUnits(s, n)
		return fmt.Sprintf("%s\n[… %d more characters not shown]", head, u16len(s)-u16len(head))
	}
}

// headTailPreview keeps the first head and last tail units (single pass: 500 +
// 200), because a command's verdict is usually at the end of its output.
func headTailPreview(head, tail int) ResultPreview {
	return func(s string) string {
		n := u16len(s)
		if n <= head+tail {
			return s
		}
		h := cutUnits(s, head)
		t := lastUnits(s, tail)
		return fmt.Sprintf("%s\n[… %d characters omitted …]\n%s", h, n-u16len(h)-u16len(t), t)
	}
}

// serialize turns messages into a labelled transcript. The labels make the
// summariser read it as a document, not as a conversation to continue.
func serialize(msgs []*Msg, preview ResultPreview, thinkingMax int) string {
	var parts []string
	for _, mm := range msgs {
		m := mm.M
		switch mm.Role() {
		case "user":
			if t := msgText(m); strings.TrimSpace(t) != "" {
				parts = append(parts, "[User]: "+t)
			}
			if mm.E.Images > 0 {
				parts = append(parts, fmt.Sprintf("[User attached %d image(s)]", mm.E.Images))
			}
		case "assistant":
			if t := thinkingText(m); t != "" && thinkingMax > 0 {
				parts = append(parts, "[Assistant thinking]: "+headPreview(thinkingMax)(t))
			}
			if t := assistantText(m); t != "" {
				parts = append(parts, "[Assistant]: "+t)
			}
			var calls []string
			for _, b := range m.ToolCalls() {
				calls = append(calls, formatCall(b))
			}
			if len(calls) > 0 {
				parts = append(parts, "[Assistant called tools]: "+strings.Join(calls, "; "))
			}
			if m.StopReason == "error" || m.StopReason == "aborted" {
				parts = append(parts, fmt.Sprintf("[Assistant turn %s: %s]", m.StopReason, oneLine(m.ErrorMsg, 200)))
			}
		case "toolResult":
			label := "[Tool result " + m.ToolName + "]"
			if m.IsError {
				label = "[Tool error " + m.ToolName + "]"
			}
			t := msgText(m)
			if mm.E.Images > 0 {
				t += fmt.Sprintf("\n[%d image(s)]", mm.E.Images)
			}
			if strings.TrimSpace(t) != "" {
				parts = append(parts, label+": "+preview(t))
			}
		case "bashExecution":
			parts = append(parts, "[User ran a command]: "+preview(msgText(m)))
		case "custom":
			if t := msgText(m); t != "" {
				parts = append(parts, "[Injected context]: "+preview(t))
			}
		case "branchSummary":
			parts = append(parts, "[Summary of an abandoned branch]: "+m.Summary)
		}
	}
	return strings.Join(parts, "\n\n")
}

// capMiddle cuts text longer than max units out of its middle, so that both
// the start (the task) and the end (the latest state) survive.
func capMiddle(s string, max int) string {
	n := u16len(s)
	if max <= 0 || n <= max {
		return s
	}
	marker := fmt.Sprintf("\n\n[… %d characters of the middle of the transcript omitted to fit the summariser's input limit …]\n\n", n-max)
	keep := max - u16len(marker)
	if keep < 2 {
		return cutUnits(s, max)
	}
	return cutUnits(s, keep/2) + marker + lastUnits(s, keep-keep/2)
}

// u16len is JavaScript's String length: UTF-16 code units, what pi counts.
func u16len(s string) int { return transcript.UTF16Len(s) }

// cutUnits returns the longest prefix of s with at most n UTF-16 units,
// never splitting a rune.
func cutUnits(s string, n int) string { return transcript.PrefixUTF16(s, n) }

// lastUnits returns the longest suffix of s with at most n UTF-16 units.
func lastUnits(s string, n int) string { return transcript.SuffixUTF16(s, n) }

// oneLine collapses whitespace and cuts to max units with an ellipsis.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if u16len(s) > max {
		return strings.TrimSpace(cutUnits(s, max-1)) + "…"
	}
	return s
}

// FileOps are the files the summarised region touched, cumulative across
// compactions.
type FileOps struct {
	Read, Written, Edited map[string]bool
}

// NewFileOps returns empty file operations.
func NewFileOps() *FileOps {
	return &FileOps{Read: map[string]bool{}, Written: map[string]bool{}, Edited: map[string]bool{}}
}

// AddMessage records read/write/edit tool calls that name a path (pi's rule:
// other tools are ignored because their paths are not reliable, and an empty
// path names no file). compact and roll both take their lists from here.
func (f *FileOps) AddMessage(m *transcript.Message) {
	if m.Role != "assistant" {
		return
	}
	for _, b := range m.ToolCalls() {
		var args struct {
			Path any `json:"path"`
		}
		if json.Unmarshal(b.Arguments, &args) != nil {
			continue
		}
		p, ok := args.Path.(string)
		if !ok || p == "" {
			continue
		}
		switch b.Name {
		case "read":
			f.Read[p] = true
		case "write":
			f.Written[p] = true
		case "edit":
			f.Edited[p] = true
		}
	}
}

// Lists returns pi's lists: modified = edited ∪ written; read = read −
// modified; both sorted.
func (f *FileOps) Lists() (read, modified []string) {
	mod := map[string]bool{}
	for p := range f.Edited {
		mod[p] = true
	}
	for p := range f.Written {
		mod[p] = true
	}
	read, modified = []string{}, []string{}
	for p := range f.Read {
		if !mod[p] {
			read = append(read, p)
		}
	}
	for p := range mod {
		modified = append(modified, p)
	}
	sort.Strings(read)
	sort.Strings(modified)
	return read, modified
}

// ToolFailure is one failed tool call in the summarised region.
type ToolFailure struct {
	Tool       string `json:"tool"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Line       int    `json:"line"`
	Status     string `json:"status,omitempty"`
	ExitCode   *int   `json:"exitCode,omitempty"`
	Text       string `json:"text"`
}

// Limits on reported tool failures (OpenClaw's).
const (
	maxToolFailures     = 8
	maxToolFailureChars = 240
)

// collectFailures gathers failed tool results, de-duplicated by tool call id,
// each cut to 240 characters; it returns the first 8 and the total count.
func collectFailures(msgs []*Msg) ([]ToolFailure, int) {
	var out []ToolFailure
	seen := map[string]bool{}
	total := 0
	for _, mm := range msgs {
		m := mm.M
		if mm.Role() != "toolResult" || !m.IsError {
			continue
		}
		if m.ToolCallID != "" {
			if seen[m.ToolCallID] {
				continue
			}
			seen[m.ToolCallID] = true
		}
		total++
		if len(out) >= maxToolFailures {
			continue
		}
		t := oneLine(msgText(m), maxToolFailureChars)
		if t == "" {
			t = "failed (no output)"
		}
		f := ToolFailure{Tool: m.ToolName, ToolCallID: m.ToolCallID, Line: mm.E.Line, Text: t}
		var d struct {
			Status   string `json:"status"`
			ExitCode *int   `json:"exitCode"`
		}
		if len(m.Details) > 0 && json.Unmarshal(m.Details, &d) == nil {
			f.Status, f.ExitCode = d.Status, d.ExitCode
		}
		out = append(out, f)
	}
	return out, total
}

// formatFailures renders the "## Tool failures" section.
func formatFailures(fs []ToolFailure, total int) string {
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Tool failures\n")
	for _, f := range fs {
		meta := ""
		if f.Status != "" || f.ExitCode != nil {
			var kv []string
			if f.Status != "" {
				kv = append(kv, "status="+f.Status)
			}
			if f.ExitCode != nil {
				kv = append(kv, fmt.Sprintf("exitCode=%d", *f.ExitCode))
			}
			meta = " (" + strings.Join(kv, " ") + ")"
		}
		name := f.Tool
		if name == "" {
			name = "tool"
		}
		fmt.Fprintf(&b, "- %s%s: %s\n", name, meta, f.Text)
	}
	if total > len(fs) {
		fmt.Fprintf(&b, "- …and %d more\n", total-len(fs))
	}
	return strings.TrimRight(b.String(), "\n")
}

// formatFileLists renders pi's <read-files>/<modified-files> blocks, each
// list capped at listMax units and the whole at sectionMax (0: no caps).
func formatFileLists(read, modified []string, listMax, sectionMax int) string {
	block := func(tag string, files []string) string {
		if len(files) == 0 {
			return ""
		}
		var lines []string
		used := 0
		for i, f := range files {
			if listMax > 0 && used+u16len(f)+1 > listMax {
				lines = append(lines, fmt.Sprintf("...and %d more", len(files)-i))
				break
			}
			lines = append(lines, f)
			used += u16len(f) + 1
		}
		return "<" + tag + ">\n" + strings.Join(lines, "\n") + "\n</" + tag + ">"
	}
	var parts []string
	if r := block("read-files", read); r != "" {
		parts = append(parts, r)
	}
	if m := block("modified-files", modified); m != "" {
		parts = append(parts, m)
	}
	s := strings.Join(parts, "\n\n")
	if sectionMax > 0 && u16len(s) > sectionMax {
		s = cutUnits(s, sectionMax-30) + "\n[file lists truncated]"
	}
	return s
}
