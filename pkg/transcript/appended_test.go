package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// WithAppended gives, in memory, exactly the session that appending the same
// lines and loading the file again gives: same entries, ids, context,
// sizes and content — for v1 (index-resolved compactions) and v3 files, and
// for a file without its final newline.
func TestWithAppendedEqualsAppendAndReload(t *testing.T) {
	files := append(oracle.Fixtures(t), "testdata/spec-v3.jsonl", "testdata/spec-v1.jsonl")
	torn := filepath.Join(t.TempDir(), "torn.jsonl")
	os.WriteFile(torn, []byte(testkit.EdgeCases["truncated.jsonl"]), 0o644)
	files = append(files, torn)
	for _, src := range files {
		f := testkit.CopyToTemp(t, src)
		s := testkit.Load(t, f)
		w := sessionwrite.NewWriter(s)
		a, err := w.Compaction(sessionwrite.CompactionSpec{Summary: "note", FirstKept: testkit.KeepFrom(s.Context()), TokensBefore: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := w.CustomMessage("x", "after", true, nil)
		mem, err := s.WithAppended(a.Line, b.Line)
		if err != nil {
			t.Fatal(err)
		}
		if err := sessionwrite.Update(context.Background(), f, sessionwrite.UpdateOptions{}, func(*transcript.Session) ([][]byte, error) {
			return [][]byte{a.Line, b.Line}, nil
		}); err != nil {
			t.Fatal(err)
		}
		disk := testkit.Load(t, f)
		if mem.Size != disk.Size || mem.Lines != disk.Lines || len(mem.Entries) != len(disk.Entries) {
			t.Fatalf("%s: size %d/%d lines %d/%d entries %d/%d", src, mem.Size, disk.Size, mem.Lines, disk.Lines, len(mem.Entries), len(disk.Entries))
		}
		mc, dc := mem.Context(), disk.Context()
		if len(mc.Messages) != len(dc.Messages) || mc.HeuristicTokens() != dc.HeuristicTokens() || mc.Compaction.Line != dc.Compaction.Line || mc.KeptStart != dc.KeptStart {
			t.Fatalf("%s: context differs: %d/%d messages, %d/%d tokens", src, len(mc.Messages), len(dc.Messages), mc.HeuristicTokens(), dc.HeuristicTokens())
		}
		for i := range mc.Messages {
			me, de := mc.Messages[i].Entry, dc.Messages[i].Entry
			if me.Line != de.Line || me.Offset != de.Offset || me.Index != de.Index || me.Role() != de.Role() {
				t.Fatalf("%s: message %d: line %d/%d offset %d/%d", src, i, me.Line, de.Line, me.Offset, de.Offset)
			}
			if disk.Version >= 2 && me.ID() != de.ID() {
				t.Fatalf("%s: message %d id %s/%s", src, i, me.ID(), de.ID())
			}
			mr, err1 := mem.Raw(me)
			dr, err2 := disk.Raw(de)
			if err1 != nil || err2 != nil || string(mr) != string(dr) {
				t.Fatalf("%s: message %d content differs (%v, %v)", src, i, err1, err2)
			}
		}
		s.Close()
		disk.Close()
	}
}

// LoadTail reads the lines from a window before a line on exactly as Load
// reads them: the same entries (numbers, offsets, ids, sizes), malformed,
// blank and other lines and the file's line count, for windows of any size
// before any line, on a session with garbage, glued and torn lines; a v1
// session, whose ids are numbered from its start, is refused.
func TestLoadTailEqualsLoad(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "g.jsonl")
	sessiongen.Write(t, f, sessiongen.Options{Seed: 9, Turns: 12, Branches: 2, Compactions: 2, GarbageLines: 3,
		GluedLines: 2, TruncatedTail: true, CJKShare: 0.3, CustomMessages: 2})
	// A second header in the middle, which pi ignores.
	data := testkit.ReadFile(t, f)
	mid := bytes.Index(data[len(data)/2:], []byte("\n")) + len(data)/2 + 1
	data = append(data[:mid:mid], append([]byte(`{"type":"session","version":3,"id":"again","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/"}`+"\n"), data[mid:]...)...)
	testkit.WriteFile(t, f, data, 0o600)
	whole := testkit.Load(t, f)
	defer whole.Close()
	if len(whole.ExtraHeaders) != 1 {
		t.Fatalf("extra headers %v", whole.ExtraHeaders)
	}
	entry := func(e *transcript.Entry) string {
		return fmt.Sprintf("%d %d %d %s %s %s %s %d %v %s %v", e.Line, e.Offset, e.Length, e.ID(), e.ParentID(),
			e.Type(), e.Role(), e.Chars, e.ToolCallIDs, e.ToolCallID, e.IsError)
	}
	var want []string
	for _, e := range whole.Entries {
		want = append(want, entry(e))
	}
	line, at := 1, int64(bytes.IndexByte(data, '\n')+1)
	for at < int64(len(data)) {
		for _, back := range []int64{0, 1, 700, 9000, at} {
			s, err := transcript.LoadTail(f, at, line, back)
			if err != nil {
				t.Fatalf("line %d, back %d: %v", line+1, back, err)
			}
			var got []string
			for _, e := range s.Entries {
				got = append(got, entry(e))
			}
			skip := len(want) - len(got)
			if s.Lines != whole.Lines || s.Size != whole.Size || s.EndsWithNewline != whole.EndsWithNewline ||
				skip < 0 || fmt.Sprint(got) != fmt.Sprint(want[skip:]) || (skip > 0) != (s.Unread > 0) ||
				skip > 0 && whole.Entries[skip-1].Line > s.Unread || skip < len(want) && whole.Entries[skip].Line <= s.Unread {
				t.Fatalf("line %d, back %d: %d of %d entries, %d unread lines", line+1, back, len(got), len(want), s.Unread)
			}
			for _, m := range whole.Malformed {
				if m.Line > s.Unread && !containsMalformed(s.Malformed, m) {
					t.Fatalf("line %d, back %d: malformed line %d missing", line+1, back, m.Line)
				}
			}
			if s.Header.ID != whole.Header.ID || len(s.ExtraHeaders) > 1 || len(s.Blank)+len(s.Malformed)+len(s.NonObjects) > len(whole.Blank)+len(whole.Malformed)+len(whole.NonObjects) {
				t.Fatalf("line %d, back %d: more odd lines than Load found", line+1, back)
			}
			s.Close()
		}
		n := bytes.IndexByte(data[at:], '\n')
		if n < 0 {
			break
		}
		at += int64(n + 1)
		line++
	}
	v1 := filepath.Join(dir, "v1.jsonl")
	sessiongen.Write(t, v1, sessiongen.Options{Seed: 9, Version: 1, Turns: 3})
	v1data := testkit.ReadFile(t, v1)
	if _, err := transcript.LoadTail(v1, int64(bytes.LastIndexByte(v1data[:len(v1data)-1], '\n')+1), 5, 0); err == nil {
		t.Errorf("a v1 session loaded from its middle")
	}
}

func containsMalformed(ms []transcript.Malformed, m transcript.Malformed) bool {
	for _, x := range ms {
		if fmt.Sprint(x) == fmt.Sprint(m) {
			return true
		}
	}
	return false
}
