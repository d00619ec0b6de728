package transcript_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

const header = `{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/"}`

func msg(id, parent, content string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-03-02T09:00:01.000Z","message":{"role":"user","content":` + content + `,"timestamp":1}}`
}

func writeSession(t *testing.T, name, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	testkit.WriteFile(t, f, []byte(content), 0o644)
	return f
}

// Files pi loads are read the way pi reads them: pi trims the whole file
// with String#trim (a BOM or other Unicode whitespace before the header or
// after the last line is not part of a line), skips lines that trim to
// nothing, and JSON.parse has no nesting limit.
func TestReadsWhatPiReads(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	cases := map[string]struct {
		content  string
		messages int
	}{
		"bom before the header":    {"\uFEFF" + header + "\n" + msg("a", "", `"hi"`) + "\n", 1},
		"nbsp-only line":           {header + "\n\u00A0\u2003\n" + msg("a", "", `"hi"`) + "\n", 1},
		"nbsp after the last line": {header + "\n" + msg("a", "", `"hi"`) + "\u00A0\u3000\n\n", 1},
		"deep nesting": {header + "\n" + msg("a", "", `"hi"`) + "\n" +
			`{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"x","content":"ok","details":` + deep + `,"isError":false,"timestamp":2}}` + "\n", 2},
	}
	var files []string
	for name, c := range cases {
		f := writeSession(t, strings.ReplaceAll(name, " ", "-")+".jsonl", c.content)
		s := testkit.Load(t, f)
		if len(s.Malformed) != 0 || len(s.Context().Messages) != c.messages {
			t.Fatalf("%s: malformed %v, %d context messages (want %d)", name, s.Malformed, len(s.Context().Messages), c.messages)
		}
		for _, e := range s.Entries {
			if _, err := s.Message(e); err != nil {
				t.Fatalf("%s: line %d: %v", name, e.Line, err)
			}
		}
		s.Close()
		files = append(files, f)
	}
	if oracle.Available() || os.Getenv("CI") == "true" {
		for i, r := range oracle.Check(t, false, false, files...) {
			if !r.Loads || len(r.MalformedLines) != 0 {
				t.Fatalf("%s: pi: loads %v, malformed %v", files[i], r.Loads, r.MalformedLines)
			}
		}
		oracle.CompareWithPi(t, files)
	}
}

// Counts beyond 2^53 (1e400 is Infinity to pi) are clamped to
// Number.MAX_SAFE_INTEGER with a warning naming the line, never wrapped to
// a negative number.
func TestOutOfRangeNumbersClamped(t *testing.T) {
	f := writeSession(t, "big.jsonl", header+"\n"+msg("a", "", `"hi"`)+"\n"+
		`{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input":1,"output":-1e999,"cacheRead":0,"cacheWrite":0,"totalTokens":1e400},"stopReason":"stop","timestamp":1e400}}`+"\n"+
		`{"type":"compaction","id":"c","parentId":"b","timestamp":"t","summary":"s","firstKeptEntryId":"b","tokensBefore":123456789012345678901234567890}`+"\n")
	s := testkit.Load(t, f)
	defer s.Close()
	u := s.Entries[1].Usage
	if u.TotalTokens != transcript.MaxSafeInt || u.Output != -transcript.MaxSafeInt || s.Entries[2].TokensBefore() != transcript.MaxSafeInt {
		t.Fatalf("usage %+v, tokensBefore %d", u, s.Entries[2].TokensBefore())
	}
	if !s.Entries[1].Time().IsZero() {
		t.Fatalf("an Infinity timestamp read as %v", s.Entries[1].Time())
	}
	var lines []int
	for _, w := range s.Warnings {
		lines = append(lines, w.Line)
		if !strings.Contains(w.String(), "out of range") {
			t.Fatalf("warning %q", w)
		}
	}
	if len(lines) != 4 || lines[0] != 3 || lines[3] != 4 {
		t.Fatalf("warnings %v", s.Warnings)
	}
	m, err := s.Message(s.Entries[1])
	if err != nil || m.Usage.TotalTokens != transcript.MaxSafeInt {
		t.Fatalf("decoded usage %+v, %v", m, err)
	}
}

// A line over the cap is not read into memory: it keeps its place in the
// tree (type, id and parent from its first bytes), is reported, and counts
// nothing; reading its content says why it cannot.
func TestOversizedLine(t *testing.T) {
	defer transcript.SetMaxLineBytes(4 << 20)()
	big := `"` + strings.Repeat("x", 5<<20) + `"`
	f := writeSession(t, "over.jsonl", header+"\n"+msg("a", "", `"hi"`)+"\n"+msg("b", "a", big)+"\n"+msg("c", "b", `"after"`)+"\n"+strings.Repeat("\x00", 6<<20))
	s := testkit.Load(t, f)
	defer s.Close()
	if len(s.Oversized) != 2 || s.Oversized[0].Line != 3 || s.Oversized[1].Line != 5 {
		t.Fatalf("oversized %+v", s.Oversized)
	}
	if len(s.Entries) != 3 || !s.Entries[1].Oversized || s.Entries[1].ID() != "b" || s.Entries[1].Chars != 0 || s.Entries[2].ParentID() != "b" {
		t.Fatalf("entries %+v", s.Entries)
	}
	if len(s.Context().Messages) != 3 {
		t.Fatalf("the oversized entry broke the path: %d messages", len(s.Context().Messages))
	}
	if len(s.Malformed) != 1 || s.Malformed[0].Line != 5 || !strings.Contains(s.Malformed[0].Err, "line cap") {
		t.Fatalf("malformed %+v", s.Malformed)
	}
	if _, err := s.Message(s.Entries[1]); err == nil || !strings.Contains(err.Error(), "line cap") {
		t.Fatalf("Message of an oversized entry: %v", err)
	}
	found := false
	for _, w := range s.Warnings {
		found = found || (w.Line == 3 && strings.Contains(w.Msg, "not read or counted"))
	}
	if !found {
		t.Fatalf("no warning for the oversized entry: %v", s.Warnings)
	}
}
