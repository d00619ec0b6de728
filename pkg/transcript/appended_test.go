package transcript_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// WithAppended gives, in memory, exactly the session that appending the same
// lines and loading the file again gives: same entries, ids, context,
// sizes and content — for v1 (index-resolved compactions) and v3 files, and
// for a file without its final newline.
func TestWithAppendedEqualsAppendAndReload(t *testing.T) {
	files := append(oracle.Fixtures(t), "testdata/spec-v3.jsonl", "testdata/spec-v1.jsonl")
	torn := filepath.Join(t.TempDir(), "torn.jsonl")
	os.WriteFile(torn, []byte(edgeCases["truncated.jsonl"]), 0o644)
	files = append(files, torn)
	for _, src := range files {
		f := testkit.CopyToTemp(t, src)
		s := testkit.Load(t, f)
		w := s.NewWriter()
		a, err := w.Compaction(transcript.CompactionSpec{Summary: "note", FirstKept: keepFrom(s.Context()), TokensBefore: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := w.CustomMessage("x", "after", true, nil)
		mem, err := s.WithAppended(a.Line, b.Line)
		if err != nil {
			t.Fatal(err)
		}
		if err := transcript.Update(context.Background(), f, transcript.UpdateOptions{}, func(*transcript.Session) ([][]byte, error) {
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
