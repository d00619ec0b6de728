package sessionwrite_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Appending a compaction and a custom_message to every fixture (v1) and to
// the v3 example: the original bytes stay, pi loads the file, and pi
// rebuilds exactly the context ctxtool then reads.
func TestAppendLoadsInPi(t *testing.T) {
	oracle.Require(t)
	files := append(oracle.Fixtures(t), "../transcript/testdata/spec-v3.jsonl")
	for name, content := range testkit.EdgeCases {
		if name == "late-header.jsonl" {
			continue
		}
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(content), 0o644)
		files = append(files, p)
	}
	var written []string
	for _, src := range files {
		f := testkit.CopyToTemp(t, src)
		before, _ := os.ReadFile(f)
		var kept *transcript.Entry
		var summary = "## Goal\nTest <summary> & \u2028 \"quotes\" 日本語 ✓"
		err := sessionwrite.Update(context.Background(), f, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
			w := sessionwrite.NewWriter(s)
			kept = testkit.KeepFrom(s.Context())
			a, err := w.Compaction(sessionwrite.CompactionSpec{Summary: summary, FirstKept: kept, TokensBefore: 123,
				Details: map[string]any{"readFiles": []string{}, "modifiedFiles": []string{"a.go"}}})
			if err != nil {
				return nil, err
			}
			b, err := w.CustomMessage("ctxtool.test", "resume here", true, nil)
			if err != nil {
				return nil, err
			}
			return [][]byte{a.Line, b.Line}, nil
		})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		after, _ := os.ReadFile(f)
		if !strings.HasPrefix(string(after), string(before)) {
			t.Fatalf("%s: original bytes changed", src)
		}
		s := testkit.Load(t, f)
		ctx := s.Context()
		if ctx.Compaction == nil || ctx.Messages[0].Role != "compactionSummary" || ctx.Messages[len(ctx.Messages)-1].Role != "custom" {
			t.Fatalf("%s: our entries are not in force: %+v", src, ctx.Compaction)
		}
		if kept != nil && (ctx.KeptStart < 0 || ctx.Path[ctx.KeptStart].Line != kept.Line) {
			t.Fatalf("%s: kept region does not start at line %d", src, kept.Line)
		}
		s.Close()
		pi := oracle.CheckOne(t, f)
		if !pi.Loads || pi.LastCompaction == nil || pi.LastCompaction.Summary != summary || pi.FirstRole != "compactionSummary" || pi.LastRole != "custom" {
			t.Fatalf("%s: pi sees %+v", src, pi)
		}
		written = append(written, f)
	}
	oracle.CompareWithPi(t, written)
	assertCanonical(t, written)
}

// assertCanonical checks with node that each line ctxtool appended is what
// JSON.stringify would write: JSON.stringify(JSON.parse(line)) === line.
func assertCanonical(t *testing.T, files []string) {
	t.Helper()
	script := `
const fs = require("fs");
let bad = 0;
for (const f of process.argv.slice(1)) {
  const lines = fs.readFileSync(f, "utf8").split("\n").slice(-3, -1);
  for (const l of lines) { try { if (JSON.stringify(JSON.parse(l)) !== l) { bad++; console.error(f, l.slice(0, 200)); } } catch (e) { bad++; console.error(f, e.message); } }
}
process.exit(bad ? 1 : 0);`
	cmd := exec.Command("node", append([]string{"-e", script}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("appended lines are not JSON.stringify-canonical: %v\n%s", err, out)
	}
}

func TestAppendAddsMissingNewline(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.jsonl")
	content := strings.TrimSuffix(testkit.EdgeCases["noncanonical.jsonl"], "\n")
	os.WriteFile(f, []byte(content), 0o644)
	err := sessionwrite.Update(context.Background(), f, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
		a, err := sessionwrite.NewWriter(s).CustomMessage("t", "x", false, nil)
		return [][]byte{a.Line}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.Load(t, f)
	if len(s.Malformed) != 0 || s.Leaf().Type() != "custom_message" || s.Leaf().ParentID() != "00000004" {
		t.Fatalf("malformed %v, leaf %+v", s.Malformed, s.Leaf())
	}
}

// When another writer (pi takes no lock) appends between ctxtool's read and
// its write, ctxtool re-plans so its entry hangs off the true last line.
func TestUpdateReplansWhenFileGrows(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	calls := 0
	err := sessionwrite.Update(context.Background(), f, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
		calls++
		if calls == 1 {
			fh, _ := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
			fh.WriteString(`{"type":"message","id":"bbbb0001","parentId":"a1f00012","timestamp":"2026-03-02T10:36:00.000Z","message":{"role":"user","content":"concurrent","timestamp":1}}` + "\n")
			fh.Close()
		}
		a, err := sessionwrite.NewWriter(s).CustomMessage("t", "x", false, nil)
		return [][]byte{a.Line}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("plan ran %d times, want 2", calls)
	}
	s, _ := transcript.Load(f)
	if s.Leaf().ParentID() != "bbbb0001" {
		t.Fatalf("our entry's parent is %q, want the concurrent line", s.Leaf().ParentID())
	}
}

// Update refuses a locked session and leaves the file alone.
func TestUpdateRefusesALockedSession(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	ctx := context.Background()
	var le *filelock.LockedError
	l3, _ := filelock.Acquire(ctx, f, 0)
	before, _ := os.ReadFile(f)
	err := sessionwrite.Update(ctx, f, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
		t.Fatal("plan must not run without the lock")
		return nil, nil
	})
	if !errors.As(err, &le) {
		t.Fatalf("Update on a locked session: %v", err)
	}
	after, _ := os.ReadFile(f)
	if string(before) != string(after) {
		t.Fatal("file changed")
	}
	l3.Release()
}

func TestRewrite(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	orig, _ := os.ReadFile(f)
	os.Chmod(f, 0o640)
	s := testkit.Load(t, f)
	defer s.Close()
	// Without the lock: refused.
	if _, err := sessionwrite.Rewrite(s, []byte("x\n"), sessionwrite.RewriteOptions{}); err == nil {
		t.Fatal("Rewrite without the lock succeeded")
	}
	l, err := filelock.Acquire(context.Background(), f, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	rr, err := sessionwrite.Rewrite(s, []byte("new content\n"), sessionwrite.RewriteOptions{Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(f)
	bak, _ := os.ReadFile(rr.Backup)
	if string(got) != "new content\n" || string(bak) != string(orig) || !strings.Contains(rr.Backup, ".bak.") || rr.CarriedBytes != 0 {
		t.Fatalf("rewrite: %q, backup %s, carried %d", got, rr.Backup, rr.CarriedBytes)
	}
	if st, _ := os.Stat(f); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(f))
	for _, e := range entries {
		if strings.Contains(e.Name(), "ctxtool-tmp") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
}

func TestRewriteRefusesReplacedOrBusyFile(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	s := testkit.Load(t, f)
	defer s.Close()
	l, _ := filelock.Acquire(context.Background(), f, 0)
	defer l.Release()
	// Written just now: --idle refuses, exit code 4 (busy).
	_, err := sessionwrite.Rewrite(s, []byte("x\n"), sessionwrite.RewriteOptions{Idle: time.Minute})
	var be *sessionwrite.BusyError
	if !errors.As(err, &be) || !be.Locked() || !strings.Contains(err.Error(), "--idle") {
		t.Fatalf("busy session: %v", err)
	}
	// Replaced by another file: the session is stale.
	data, _ := os.ReadFile(f)
	os.Remove(f)
	os.WriteFile(f, data, 0o644)
	if _, err := sessionwrite.Rewrite(s, []byte("x\n"), sessionwrite.RewriteOptions{}); !errors.Is(err, sessionwrite.ErrFileChanged) {
		t.Fatalf("replaced file: %v", err)
	}
	if got, _ := os.ReadFile(f); string(got) != string(data) {
		t.Fatal("file changed")
	}
}

// An entry's text holding invalid UTF-8 (a tool's output cut inside a
// character) is written as pi writes the string Node read: one raw
// U+FFFD per ill-formed subpart, so the truncated 3-byte sequence E4 B8
// is one U+FFFD (encoding/json wrote the escape \ufffd twice).
func TestWriterInvalidUTF8IsNodes(t *testing.T) {
	s := testkit.Load(t, "../transcript/testdata/spec-v3.jsonl")
	a, err := sessionwrite.NewWriter(s).CustomMessage("t", "cut \xe4\xb8 here \xed\xa0\x80", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"content\":\"cut \ufffd here \ufffd\ufffd\ufffd\""; !strings.Contains(string(a.Line), want) {
		t.Errorf("line %s\nlacks %s", a.Line, want)
	}
}

// The system message a compaction keeps is written as JSON.stringify
// writes it: '<', '>' and '&' raw (json.Marshal wrote \u003c, \u003e and
// \u0026, which pi never writes).
func TestCompactionSystemMessageIsStringified(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"a0","parentId":null,"timestamp":"2026-11-30T10:00:00.001Z","message":{"role":"system","content":"use <b> & <i>","sections":{"a<b>":"x"},"timestamp":1}}`,
		`{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-11-30T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":2}}`,
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := transcript.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: "sum", FirstKept: s.Entries[len(s.Entries)-1], TokensBefore: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"systemMessage":{"role":"system","content":"use <b> & <i>","sections":{"a<b>":"x"}`; !strings.Contains(string(a.Line), want) {
		t.Errorf("line %s\nlacks %s", a.Line, want)
	}
}
