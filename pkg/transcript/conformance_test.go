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

func TestFixturesMatchPi(t *testing.T) {
	oracle.CompareWithPi(t, oracle.Fixtures(t))
}

func TestSpecExamplesMatchPi(t *testing.T) {
	oracle.CompareWithPi(t, []string{"testdata/spec-v3.jsonl", "testdata/spec-v1.jsonl"})
	s := testkit.Load(t, "testdata/spec-v3.jsonl")
	ctx := s.Context()
	if len(ctx.Messages) != 6 || ctx.HeuristicTokens() != 78 || s.Leaf().ID() != "a1f00012" {
		t.Fatalf("spec example: %d messages, %d tokens, leaf %s; want 6, 78, a1f00012", len(ctx.Messages), ctx.HeuristicTokens(), s.Leaf().ID())
	}
}

func writeEdgeCases(t *testing.T) []string {
	dir := t.TempDir()
	var files []string
	for name, content := range testkit.EdgeCases {
		p := filepath.Join(dir, name)
		testkit.WriteFile(t, p, []byte(content), 0o644)
		files = append(files, p)
	}
	return files
}

func TestEdgeCasesMatchPi(t *testing.T) {
	oracle.CompareWithPi(t, writeEdgeCases(t))
}

func TestTruncatedLastLineReported(t *testing.T) {
	s, err := transcript.LoadBytes("x.jsonl", []byte(testkit.EdgeCases["truncated.jsonl"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Malformed) != 1 || s.Malformed[0].Line != 5 || !s.Malformed[0].Truncated {
		t.Fatalf("malformed = %+v, want line 5 truncated", s.Malformed)
	}
	if s.EndsWithNewline {
		t.Fatal("EndsWithNewline should be false")
	}
	if len(s.Blank) != 1 || s.Blank[0] != 3 {
		t.Fatalf("blank = %v, want [3]", s.Blank)
	}
}

func TestGluedLinesAreDescribed(t *testing.T) {
	files := oracle.Fixtures(t)
	for _, f := range files {
		if !strings.Contains(f, "705ba5d") {
			continue
		}
		s := testkit.Load(t, f)
		if len(s.Malformed) != 1 {
			t.Fatalf("malformed: %+v", s.Malformed)
		}
		m := s.Malformed[0]
		if m.Line != 1013 || m.Bytes != 7741 || !m.HidesCompaction() || strings.Join(m.Objects, ",") != "message/assistant,compaction" {
			t.Fatalf("glued line: %+v", m)
		}
	}
}

func TestInvalidHeader(t *testing.T) {
	_, err := transcript.LoadBytes("bad.jsonl", []byte(`{"type":"message","id":"a"}`+"\n"))
	var he *transcript.InvalidHeaderError
	if err == nil || !asHeaderErr(err, &he) || he.Line != 1 {
		t.Fatalf("err = %v, want InvalidHeaderError at line 1", err)
	}
	if !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Fatalf("error must name file and line: %v", err)
	}
	_, err = transcript.LoadBytes("empty.jsonl", nil)
	if err == nil {
		t.Fatal("empty file must be an error")
	}
}

func asHeaderErr(err error, target **transcript.InvalidHeaderError) bool {
	he, ok := err.(*transcript.InvalidHeaderError)
	if ok {
		*target = he
	}
	return ok
}

// Byte-exact preservation: loading never changes a file, and Raw returns each
// line's original bytes.
func TestRawReturnsOriginalBytes(t *testing.T) {
	for _, f := range oracle.Fixtures(t) {
		data, _ := os.ReadFile(f)
		s := testkit.Load(t, f)
		lines := strings.Split(string(data), "\n")
		for _, e := range s.Entries {
			raw, err := s.Raw(e)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != lines[e.Line-1] {
				t.Fatalf("%s:%d: Raw differs from the file", f, e.Line)
			}
		}
		s.Close()
		after, _ := os.ReadFile(f)
		if string(after) != string(data) {
			t.Fatalf("%s changed by loading", f)
		}
	}
}
