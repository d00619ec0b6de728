package transcript_test

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A loaded session's memory is its entries: a 1 GB session has 739k of
// them, and every command's peak sits on top of them. Fields only a few
// entry types carry live behind one pointer (rareFields), the strings that
// take few values behind one shared pointer (names), the timestamp is a
// number; a field added to Entry itself costs every entry.
func TestEntrySize(t *testing.T) {
	const limit = 152
	if n := unsafe.Sizeof(transcript.Entry{}); n > limit {
		t.Errorf("Entry is %d bytes, over %d: put a field few entry types have in rareFields", n, limit)
	}
}

// The heap a loaded session keeps per entry, on a generated session of the
// benchmark's shape (assistant turns with tool calls, tool results,
// compactions): the Entry, its strings, its usage and the id index. It
// was 551 bytes with a map index and entries, usages and parent ids
// allocated one by one; 380-386 with blocks; 261 since the timestamp is a
// number and the six low-cardinality strings share one interned record
// (251 on the 1 GB session: 177 MiB live after Load, was 262); 234 since
// ids are numbers (219 at 1 GB: 155 MiB).
func TestLoadedBytesPerEntry(t *testing.T) {
	o, err := sessiongen.PresetOptions("bench")
	if err != nil {
		t.Fatal(err)
	}
	o.TargetBytes = 8 << 20
	f := filepath.Join(t.TempDir(), "s.jsonl")
	if _, err := sessiongen.GenerateFile(f, o); err != nil {
		t.Fatal(err)
	}
	checkBytesPerEntry(t, f, transcript.Load, 245)
}

// checkBytesPerEntry fails t when the session load makes of file keeps
// more than limit heap bytes per entry.
func checkBytesPerEntry(t *testing.T, file string, load func(string) (*transcript.Session, error), limit int64) {
	t.Helper()
	var before, after runtime.MemStats
	// Two collections: the first moves the pooled read buffers to the
	// victim cache, the second frees them.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := load(file)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int64(after.HeapAlloc-before.HeapAlloc) / int64(len(s.Entries))
	runtime.KeepAlive(s)
	s.Close()
	t.Logf("%d entries, %d heap bytes each", len(s.Entries), per)
	if per > limit {
		t.Errorf("a loaded entry keeps %d heap bytes, over %d", per, limit)
	}
}

// The same for Claude Code and Codex files of the benchmark's cadence (one
// compaction per 594 kB), loaded as estimate loads them: the entries come
// from the converters, with these formats' ids (311 and 231 bytes; 299
// and 219 since a result's toolCallId shares its call's string).
func TestLoadedBytesPerForeignEntry(t *testing.T) {
	for _, c := range []struct {
		name  string
		gen   func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)
		limit int64
	}{
		{"claude-code", sessiongen.GenerateClaudeCode, 305},
		{"codex", sessiongen.GenerateCodex, 225},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), c.name+".jsonl")
			w, err := os.Create(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.gen(w, sessiongen.AgentOptions{Seed: 1, Thinking: true, TargetBytes: 8 << 20, Compactions: 14}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			checkBytesPerEntry(t, f, transcript.LoadLazy, c.limit)
		})
	}
}

// Timestamps of pi's shape are kept as a number and rebuilt on demand;
// every timestamp, of that shape or not, must read back byte for byte.
func TestTimestampReadsBack(t *testing.T) {
	for _, ts := range []string{"2026-03-02T09:00:00.015Z", "2024-02-29T23:59:59.999Z", "0000-01-01T00:00:00.000Z",
		"9999-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z", "2023-02-29T00:00:00.000Z",
		"2026-13-02T09:00:00.015Z", "2026-03-02T24:00:00.000Z", "2026-03-02T09:00:60.000Z", "2026-03-02T09:00:00Z",
		"2026-03-02T09:00:00.015+01:00", "2026-03-02t09:00:00.015Z", "2026-03-02T09:00:00.01xZ", "", "yesterday"} {
		line := `{"type":"label","id":"a","parentId":null,"timestamp":` + strconv.Quote(ts) + `}`
		e, _, ok := transcript.ParseEntry([]byte(line))
		if !ok || e == nil {
			t.Fatalf("%s: not parsed", line)
		}
		if got := e.Timestamp(); got != ts {
			t.Errorf("timestamp %q reads back as %q", ts, got)
		}
		want, err := time.Parse(time.RFC3339Nano, ts)
		if got, ok := e.TimestampTime(); ok != (err == nil) || ok && !got.Equal(want) {
			t.Errorf("timestamp %q: TimestampTime %v %v, want %v %v", ts, got, ok, want, err == nil)
		}
		if err != nil {
			want = time.Time{}
		}
		if got := e.Time(); !got.Equal(want) {
			t.Errorf("timestamp %q: Time %v, want %v", ts, got, want)
		}
	}
}

// Ids of pi's shape (and a translation's "L<row>", v1's "v1:L<line>") are
// kept as a number and rebuilt on demand; every id, of those shapes or
// not, must read back byte for byte and find its entry and its parent.
func TestIDReadsBack(t *testing.T) {
	ids := []string{"0b9a9877", "ffffffff", "00000000", "0B9A9877", "0b9a987", "0b9a98770", "0b9a987g", "L0", "L7", "L01",
		"L4294967295", "L4294967296", "L-1", "L", "v1:L12", "v1:L012", "v1:L", "L1234567", "v1:L1234", "L123456g", "L8.2", "7d48cbd2-6615-4dd8-87f6-38f12b8167d6", "é1234567", "a"}
	for _, parent := range append(ids, "") {
		for _, id := range ids {
			p := `null`
			if parent != "" {
				p = strconv.Quote(parent)
			}
			line := `{"type":"label","id":` + strconv.Quote(id) + `,"parentId":` + p + `,"timestamp":"2026-03-02T09:00:00.015Z"}`
			e, _, ok := transcript.ParseEntry([]byte(line))
			if !ok || e == nil {
				t.Fatalf("%s: not parsed", line)
			}
			if e.ID() != id || e.ParentID() != parent {
				t.Fatalf("id %q parent %q read back as %q %q", id, parent, e.ID(), e.ParentID())
			}
		}
	}
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/"}` + "\n")
	prev := "null"
	for _, id := range ids {
		b.WriteString(`{"type":"label","id":` + strconv.Quote(id) + `,"parentId":` + prev + `,"timestamp":"2026-03-02T09:00:00.015Z"}` + "\n")
		prev = strconv.Quote(id)
	}
	s := testkit.Load(t, testkit.WriteTemp(t, "s.jsonl", []byte(b.String())))
	defer s.Close()
	path := s.Branch()
	if len(path) != len(ids) {
		t.Fatalf("branch of %d entries, want %d", len(path), len(ids))
	}
	for i, id := range ids {
		if path[i].ID() != id || s.ByID(id) != path[i] {
			t.Errorf("entry %d: id %q, ByID %v", i, path[i].ID(), s.ByID(id))
		}
	}
}
