package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/filelock"
)

// splitLines cuts a file into its lines, newlines kept.
func splitLines(t *testing.T, path string) [][]byte {
	t.Helper()
	return bytes.SplitAfter(testkit.ReadFile(t, path), []byte("\n"))
}

func writeFile(t *testing.T, path string, parts ...[]byte) {
	t.Helper()
	testkit.WriteFile(t, path, bytes.Join(parts, nil), 0o600)
}

func appendFile(t *testing.T, path string, parts ...[]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Join(parts, nil)); err != nil {
		t.Fatal(err)
	}
}

func capture(t *testing.T, st *Store, file, key string) *CaptureResult {
	t.Helper()
	r, err := Capture(CaptureOptions{File: file, SessionKey: key, Store: st, Now: func() time.Time { return goldenNow }})
	if err != nil {
		t.Fatalf("capture %s: %v", file, err)
	}
	return r
}

func readState(t *testing.T, st *Store, key string) *State {
	t.Helper()
	s, warns := st.ReadState(key)
	if len(warns) > 0 {
		t.Fatalf("state warnings: %v", warns)
	}
	return s
}

func noDuplicates(t *testing.T, what string, items []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it] {
			t.Errorf("%s: %q twice", what, it)
		}
		seen[it] = true
	}
}

// genFile writes a sessiongen session and returns its path and lines.
func genFile(t *testing.T, dir, name string, o sessiongen.Options) (string, [][]byte) {
	t.Helper()
	f := filepath.Join(dir, name)
	sessiongen.Write(t, f, o)
	return f, splitLines(t, f)
}

// TestCaptureGrowingFixtures: each real session is captured in four steps
// while it "grows"; every step reads only the lines appended since the
// last one, and the state in the end is exactly the state of one capture of
// the whole file: nothing counted twice, nothing missed. What was recorded
// is what the builder finds in the same messages (shared heuristics).
func TestCaptureGrowingFixtures(t *testing.T) {
	for _, fx := range oracle.Fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(fx), ".jsonl")
		t.Run(name, func(t *testing.T) {
			lines := splitLines(t, fx)
			n := len(lines)
			if len(lines[n-1]) == 0 {
				n--
			}
			dir := t.TempDir()
			file := filepath.Join(dir, name+".jsonl")
			st := &Store{StateDir: filepath.Join(dir, "state")}
			cuts := []int{n / 4, n / 2, n / 2, 3 * n / 4, n}
			writeFile(t, file)
			prev, results, errs := 0, 0, 0
			for _, c := range cuts {
				appendFile(t, file, lines[prev:c]...)
				r := capture(t, st, file, "k")
				if r.NewLines != c-prev {
					t.Fatalf("cut %d: read %d new lines, want %d (%+v)", c, r.NewLines, c-prev, r)
				}
				if c == prev {
					if r.Captured || !strings.Contains(r.Reason, "no new complete lines") {
						t.Errorf("nothing appended, yet %+v", r)
					}
				} else if r.FromLine != prev+1 || r.ToLine != c || !r.Captured || r.Restarted != (prev == 0) {
					t.Errorf("cut %d: %+v", c, r)
				}
				prev = c
				results += r.ToolResults
				errs += r.ToolErrors
			}
			got := readState(t, st, "k")
			whole := &Store{StateDir: filepath.Join(dir, "whole")}
			wr := capture(t, whole, fx, "k")
			want := readState(t, whole, "k")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("four captures differ from one:\n%+v\n%+v", got, want)
			}
			if results != wr.ToolResults || errs != wr.ToolErrors || wr.NewLines != n {
				t.Errorf("tool results %d/%d, errors %d/%d, lines %d/%d", results, wr.ToolResults, errs, wr.ToolErrors, wr.NewLines, n)
			}
			noDuplicates(t, "tools", got.Resources.ToolsUsed)
			noDuplicates(t, "files read", got.Resources.FilesRead)
			noDuplicates(t, "files modified", got.Resources.FilesModified)
			var whats []string
			for _, d := range got.Decisions {
				whats = append(whats, d.What)
			}
			noDuplicates(t, "decisions", whats)
			if len(got.Resources.ToolsUsed) == 0 || len(got.Resources.FilesRead) == 0 || got.Thread.Topic == "" {
				t.Errorf("empty capture: %+v", got)
			}

			// The builder on the same file finds the same things.
			s := testkit.Load(t, fx)
			defer s.Close()
			in, err := FromSession(s)
			if err != nil {
				t.Fatal(err)
			}
			in.Now = goldenNow
			cp := Build(in)
			built := map[string]bool{}
			for _, d := range cp.Decisions {
				built[d.What] = true
			}
			for _, w := range whats {
				if !built[w] {
					t.Errorf("captured decision %q is not one the builder finds", w)
				}
			}
			if len(cp.Decisions) != len(whats) && len(whats) < MaxDecisions {
				t.Errorf("builder found %d decisions, capture %d", len(cp.Decisions), len(whats))
			}
			if !reflect.DeepEqual(cp.Resources.ToolsUsed, sortedCopy(got.Resources.ToolsUsed)) {
				t.Errorf("tools: built %v, captured %v", cp.Resources.ToolsUsed, got.Resources.ToolsUsed)
			}
			if cp.Working.Topic != got.Thread.Topic {
				t.Errorf("topic: built %q, captured %q", cp.Working.Topic, got.Thread.Topic)
			}
			// Bundling the captured state changes nothing: it is what the
			// transcript says (this is why the goldens stay as they were).
			in.State = got
			if again := Build(in); !reflect.DeepEqual(again, cp) {
				t.Errorf("bundling the state of the same file changed the checkpoint")
			}
			t.Logf("%d lines: %d tool results (%d failed), %d decisions, %d tools, %d files read, %d modified, %d malformed",
				n, wr.ToolResults, wr.ToolErrors, len(whats), len(got.Resources.ToolsUsed), len(got.Resources.FilesRead), len(got.Resources.FilesModified), wr.Malformed)
		})
	}
}

// retime changes a line without changing its length (the year of its
// timestamp), the way a rewrite that keeps the size would.
func retime(t *testing.T, line []byte) []byte {
	t.Helper()
	alt := bytes.Replace(line, []byte(`"timestamp":"2026`), []byte(`"timestamp":"2027`), 1)
	if bytes.Equal(alt, line) {
		t.Fatalf("no timestamp to alter in %.80s", line)
	}
	return alt
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestCaptureTornLine: a last line without its newline (pi still writing
// it) is not captured, whether or not it parses yet; once completed it is,
// and only it.
func TestCaptureTornLine(t *testing.T) {
	dir := t.TempDir()
	src, lines := genFile(t, dir, "src.jsonl", sessiongen.Options{Seed: 3, Turns: 6, ToolErrors: 2})
	_ = src
	file := filepath.Join(dir, "s.jsonl")
	st := &Store{StateDir: filepath.Join(dir, "state")}
	n := len(lines) - 1 // the last element is the empty rest after the final newline
	k := n - 3
	last := lines[k]
	half := last[:len(last)/2]
	writeFile(t, file, append(lines[:k:k], half)...)
	r := capture(t, st, file, "k")
	if r.ToLine != k || r.NewLines != k {
		t.Fatalf("torn: %+v", r)
	}
	r = capture(t, st, file, "k")
	if r.Captured || r.NewLines != 0 || !strings.Contains(r.Reason, "write in progress") {
		t.Fatalf("torn again: %+v", r)
	}
	// Complete JSON but still no newline: not yet.
	appendFile(t, file, last[len(last)/2:len(last)-1])
	if r = capture(t, st, file, "k"); r.Captured || r.Malformed != 0 {
		t.Fatalf("unterminated: %+v", r)
	}
	appendFile(t, file, []byte("\n"))
	r = capture(t, st, file, "k")
	if !r.Captured || r.NewLines != 1 || r.FromLine != k+1 || r.Restarted || r.Malformed != 0 {
		t.Fatalf("completed: %+v", r)
	}
	appendFile(t, file, lines[k+1:]...)
	if r = capture(t, st, file, "k"); r.NewLines != n-k-1 || r.FromLine != k+2 {
		t.Fatalf("rest: %+v", r)
	}
	whole := &Store{StateDir: filepath.Join(dir, "whole")}
	capture(t, whole, src, "k")
	if got, want := readState(t, st, "k"), readState(t, whole, "k"); !reflect.DeepEqual(got, want) {
		t.Errorf("state after the torn line differs:\n%+v\n%+v", got, want)
	}
}

// TestCaptureMalformedLines: garbage and glued lines are skipped and
// counted, never a failure.
func TestCaptureMalformedLines(t *testing.T) {
	dir := t.TempDir()
	file, _ := genFile(t, dir, "s.jsonl", sessiongen.Options{Seed: 5, Turns: 12, GarbageLines: 3, GluedLines: 2, ToolErrors: 2})
	st := &Store{StateDir: filepath.Join(dir, "state")}
	r := capture(t, st, file, "k")
	if r.Malformed != 5 || !r.Captured || r.ToolErrors != 2 {
		t.Fatalf("%+v", r)
	}
	if len(r.MalformedLines) != 5 || r.MalformedLines[0].Line == 0 || r.MalformedLines[0].Bytes == 0 {
		t.Errorf("malformedLines %+v", r.MalformedLines)
	}
	if s := readState(t, st, "k"); len(s.Thread.Errors) != 2 {
		t.Errorf("errors %+v", s.Thread.Errors)
	}
}

// TestCaptureRewrittenFile: a file that changed other than by appending
// (truncated, or the last captured line rewritten) is read again from the
// start, or, once a checkpoint exists, from after it; nothing is doubled.
func TestCaptureRewrittenFile(t *testing.T) {
	dir := t.TempDir()
	src, lines := genFile(t, dir, "src.jsonl", sessiongen.Options{Seed: 7, Turns: 10, ToolErrors: 2})
	file := filepath.Join(dir, "s.jsonl")
	st := &Store{StateDir: filepath.Join(dir, "state")}
	n := len(lines) - 1 // last element is the empty rest after the final newline
	writeFile(t, file, lines[:n/2]...)
	capture(t, st, file, "k")

	// Truncated to fewer lines than were captured, then it grows again.
	writeFile(t, file, lines[:n/4]...)
	r := capture(t, st, file, "k")
	if !r.Restarted || r.FromLine != 1 || r.NewLines != n/4 || !strings.Contains(r.Reason, "shorter than what was captured") || len(r.Warnings) == 0 {
		t.Fatalf("truncated: %+v", r)
	}
	// Same length, but the last captured line is different.
	writeFile(t, file, append(append([][]byte{}, lines[:n/4-1]...), retime(t, lines[n/4-1]))...)
	r = capture(t, st, file, "k")
	if !r.Restarted || r.FromLine != 1 || !strings.Contains(r.Reason, "last captured line changed") {
		t.Fatalf("rewritten: %+v", r)
	}
	writeFile(t, file, lines[:n]...)
	r = capture(t, st, file, "k")
	if !r.Restarted || r.NewLines != n {
		t.Fatalf("restored: %+v", r)
	}
	whole := &Store{StateDir: filepath.Join(dir, "whole")}
	capture(t, whole, src, "k")
	if got, want := readState(t, st, "k"), readState(t, whole, "k"); !reflect.DeepEqual(got, want) {
		t.Errorf("restarts doubled or lost state:\n%+v\n%+v", got, want)
	}

	// With a checkpoint: a rewrite restarts after the last entry the
	// checkpoint could have seen (by time), not at the top.
	s := testkit.Load(t, file)
	// created_at has whole seconds: the entries of the checkpoint's last
	// second are read again (the state dedupes them).
	at := s.Entries[len(s.Entries)/2].Time().Truncate(time.Second)
	seen := 0
	for _, e := range s.Entries {
		if !e.Time().After(at) {
			seen = e.Line
		}
	}
	s.Close()
	res, err := Take(TakeOptions{File: file, SessionKey: "k", Store: st, Force: true, Now: func() time.Time { return at }})
	if err != nil || !res.Written {
		t.Fatalf("take: %v %+v", err, res)
	}
	writeFile(t, file, append(append([][]byte{}, lines[:n-1]...), retime(t, lines[n-1]))...)
	r = capture(t, st, file, "k")
	if !r.Restarted || r.FromLine != seen+1 || r.ToLine != n || !strings.Contains(r.Reason, "after checkpoint cp_001") || seen < n/3 {
		t.Fatalf("after checkpoint: %+v (checkpoint after line %d)", r, seen)
	}
}

// TestCheckpointBundlesCapturedState: OpenClaw resets a session (a new
// file, the same key). What was captured from the old file reaches the
// first checkpoint of the new one, and the state files are reset after it.
func TestCheckpointBundlesCapturedState(t *testing.T) {
	fx := oracle.Fixtures(t)
	dir := t.TempDir()
	st := &Store{StateDir: filepath.Join(dir, "state")}
	var old string
	for _, f := range fx {
		if strings.Contains(f, "large-session") {
			old = f
		}
	}
	if old == "" {
		t.Skip("large-session fixture missing")
	}
	r := capture(t, st, old, "agent:main:main")
	if !r.Captured || r.ToolResults == 0 {
		t.Fatalf("%+v", r)
	}
	before := readState(t, st, "agent:main:main")

	// The new session: a generated one with its own tools and paths.
	file, lines := genFile(t, dir, "new.jsonl", sessiongen.Options{Seed: 9, Turns: 6})
	n := len(lines) - 1
	writeFile(t, file, lines[:n/2]...)
	if r = capture(t, st, file, "agent:main:main"); !r.Restarted || r.FromLine != 1 || !strings.Contains(r.Reason, "first capture of this file") {
		t.Fatalf("new file: %+v", r)
	}
	appendFile(t, file, lines[n/2:n]...)
	cp, _, _ := takeLatest(t, TakeOptions{File: file, SessionKey: "agent:main:main", Store: st, Force: true})
	tools := strings.Join(cp.Resources.ToolsUsed, ",")
	for _, tool := range before.Resources.ToolsUsed {
		if !strings.Contains(tools, tool) {
			t.Errorf("captured tool %q of the old session missing from %v", tool, cp.Resources.ToolsUsed)
		}
	}
	read := strings.Join(cp.Resources.FilesRead, "\n")
	if p := before.Resources.FilesRead[len(before.Resources.FilesRead)-1]; !strings.Contains(read, p) {
		t.Errorf("captured file %q of the old session missing", p)
	}
	// The new file's own files are there too.
	own := &Store{StateDir: filepath.Join(dir, "own")}
	capture(t, own, file, "k")
	for _, p := range readState(t, own, "k").Resources.FilesRead {
		if !strings.Contains(read, p) {
			t.Errorf("file %q of the new session missing", p)
		}
	}
	after := readState(t, st, "agent:main:main")
	empty := &State{}
	for _, f := range stateFiles {
		f.zero(empty)
	}
	if !reflect.DeepEqual(after, empty) {
		t.Errorf("state not reset: %+v", after)
	}
	// The mark is at the end of the new file: nothing new to capture.
	if r = capture(t, st, file, "agent:main:main"); r.Captured || r.Restarted {
		t.Errorf("after the checkpoint: %+v", r)
	}
	data, _ := os.ReadFile(filepath.Join(st.StateFilesDir("agent:main:main"), captureFile))
	var m captureMark
	if json.Unmarshal(data, &m) != nil || m.Line != n || m.Offset != int64(len(bytes.Join(lines[:n], nil))) {
		t.Errorf("capture.json %s", data)
	}
}

// TestCaptureStaleStateDiscarded: state files older than the latest
// checkpoint (bundled, but the reset never happened) are dropped, with a
// warning, by the next capture and checkpoint.
func TestCaptureStaleStateDiscarded(t *testing.T) {
	dir := t.TempDir()
	st := &Store{StateDir: filepath.Join(dir, "state")}
	oldFile, _ := genFile(t, dir, "old.jsonl", sessiongen.Options{Seed: 21, Turns: 4})
	newFile, _ := genFile(t, dir, "new.jsonl", sessiongen.Options{Seed: 22, Turns: 4})
	capture(t, st, oldFile, "k")
	own := &Store{StateDir: filepath.Join(dir, "own")}
	capture(t, own, newFile, "k")
	newFiles := strings.Join(readState(t, own, "k").Resources.FilesRead, "\n")
	var oldOnly []string
	for _, p := range readState(t, st, "k").Resources.FilesRead {
		if !strings.Contains(newFiles, p) {
			oldOnly = append(oldOnly, p)
		}
	}
	if len(oldOnly) == 0 {
		t.Fatal("the two sessions read the same files: pick other seeds")
	}
	past := time.Now().Add(-time.Hour)
	for _, f := range stateFiles {
		if err := os.Chtimes(filepath.Join(st.StateFilesDir("k"), f.name), past, past); err != nil {
			t.Fatal(err)
		}
	}
	// Another process checkpointed (and crashed before the reset).
	if _, err := st.Write("k", Build(Input{SessionKey: "k", Now: goldenNow})); err != nil {
		t.Fatal(err)
	}
	res, err := Take(TakeOptions{File: newFile, SessionKey: "k", Store: st, Force: true, Now: func() time.Time { return goldenNow }})
	if err != nil || !res.Written {
		t.Fatalf("take: %v %+v", err, res)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "discarding stale state file") {
		t.Errorf("no stale warning: %v", res.Warnings)
	}
	cp, _, _ := st.Latest("k")
	for _, p := range oldOnly {
		for _, q := range cp.Resources.FilesRead {
			if p == q {
				t.Errorf("stale state bundled: %q", p)
			}
		}
	}
	if len(cp.Resources.FilesRead) == 0 {
		t.Errorf("new session's files missing")
	}
}

func TestCaptureStdinRefused(t *testing.T) {
	_, err := Capture(CaptureOptions{File: "-", SessionKey: "k", Store: &Store{StateDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "session file") {
		t.Errorf("%v", err)
	}
}

// TestCaptureWaitsForTheStateLock: a capture does not interleave with a
// checkpoint of the same key; past its wait it fails with a lock error
// (exit 4) and records nothing.
func TestCaptureWaitsForTheStateLock(t *testing.T) {
	dir := t.TempDir()
	file, _ := genFile(t, dir, "s.jsonl", sessiongen.Options{Seed: 2, Turns: 3})
	st := &Store{StateDir: filepath.Join(dir, "state")}
	lock, err := st.lockState("k", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Capture(CaptureOptions{File: file, SessionKey: "k", Store: st, Wait: 100 * time.Millisecond})
	var le *filelock.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("want a lock error, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.StateFilesDir("k"), captureFile)); !os.IsNotExist(err) {
		t.Errorf("capture.json written under a foreign lock: %v", err)
	}
	lock.Release()
	if r := capture(t, st, file, "k"); !r.Captured {
		t.Errorf("after release: %+v", r)
	}
}

// TestCaptureGrowingGenerated: the same over a v3 session with branches,
// compactions, aborted and failed replies, tool errors, CJK turns, garbage
// lines and a torn tail, captured in seven steps.
func TestCaptureGrowingGenerated(t *testing.T) {
	dir := t.TempDir()
	src, lines := genFile(t, dir, "src.jsonl", sessiongen.Options{Seed: 31, Turns: 40, Branches: 3, Compactions: 2,
		AbortedAssistants: 2, ErrorAssistants: 2, ToolErrors: 5, CJKShare: 0.2, GarbageLines: 2, CustomMessages: 2, TruncatedTail: true})
	file := filepath.Join(dir, "s.jsonl")
	st := &Store{StateDir: filepath.Join(dir, "state")}
	writeFile(t, file)
	n := len(lines) // the last element is the torn tail
	prev, total, malformed := 0, 0, 0
	for i := 1; i <= 7; i++ {
		c := n * i / 7
		appendFile(t, file, lines[prev:c]...)
		r := capture(t, st, file, "k")
		total += r.NewLines
		malformed += r.Malformed
		prev = c
	}
	whole := &Store{StateDir: filepath.Join(dir, "whole")}
	wr := capture(t, whole, src, "k")
	if total != n-1 || wr.NewLines != n-1 || malformed != wr.Malformed || wr.Malformed != 2 {
		t.Errorf("lines %d/%d/%d, malformed %d/%d", total, wr.NewLines, n-1, malformed, wr.Malformed)
	}
	got, want := readState(t, st, "k"), readState(t, whole, "k")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("seven captures differ from one:\n%+v\n%+v", got, want)
	}
	if len(got.Thread.Errors) != 5 || len(got.Resources.ToolsUsed) == 0 {
		t.Errorf("state %+v", got)
	}
}

// captureBack is capture with tailBytes set to back.
func captureBack(t *testing.T, st *Store, file string, back int64) *CaptureResult {
	t.Helper()
	defer func(was int64) { tailBytes = was }(tailBytes)
	tailBytes = back
	return capture(t, st, file, "k")
}

// stateFilesOf is every file of a store's state directory, by name.
func stateFilesOf(t *testing.T, st *Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(st.StateFilesDir("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out[e.Name()] = testkit.ReadFile(t, filepath.Join(st.StateFilesDir("k"), e.Name()))
		}
	}
	return out
}

// tailSessions are the sessions the tail capture is compared on: generated
// ones of several shapes, the repository's samples and the fixtures, and
// one with what a tail cannot resolve (duplicate ids, an orphaned result,
// a reply whose answer is far back).
func tailSessions(t *testing.T, dir string) []string {
	var files []string
	for i, o := range []sessiongen.Options{
		{Seed: 31, Turns: 40, Branches: 3, Compactions: 2, AbortedAssistants: 2, ErrorAssistants: 2, ToolErrors: 5,
			CJKShare: 0.2, GarbageLines: 2, CustomMessages: 2, TruncatedTail: true},
		{Seed: 7, Turns: 60, ToolCallsPerTurn: 12, ParallelToolCalls: 4, ToolErrors: 9, Thinking: true, BashExecutions: 3, ModelChanges: 2},
		{Seed: 11, Version: 2, Turns: 30, Branches: 2, Compactions: 3, GluedLines: 2, TrailingToolCall: true, UserImages: 1},
		{Seed: 5, Version: 1, Turns: 20, Compactions: 1},
	} {
		f, _ := genFile(t, dir, fmt.Sprintf("gen%d.jsonl", i), o)
		files = append(files, f)
	}
	samples, _ := filepath.Glob(filepath.Join(oracle.ModuleRoot(), "testdata", "*.jsonl"))
	files = append(files, samples...)
	files = append(files, oracle.Fixtures(t)...)
	return append(files, oddSession(t, dir))
}

// oddSession has duplicate ids (a parent found by its later copy), a tool
// result whose call is not on its chain, a root in the middle and a reply
// whose answer is hundreds of lines back.
func oddSession(t *testing.T, dir string) string {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"odd","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/w"}` + "\n")
	line := func(id, parent, msg string) {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-03-02T09:00:01.000Z","message":%s}`+"\n", id, p, msg)
	}
	user := func(text string) string { return `{"role":"user","content":[{"type":"text","text":"` + text + `"}]}` }
	answer := func(text string) string {
		return `{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"stopReason":"stop"}`
	}
	call := `{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/w/a.go"}}],"stopReason":"toolUse"}`
	result := func(id string, isErr bool) string {
		return fmt.Sprintf(`{"role":"toolResult","toolCallId":"%s","toolName":"","content":[{"type":"text","text":"boom"}],"isError":%v}`, id, isErr)
	}
	line("a0000001", "", user("start"))
	line("a0000002", "a0000001", answer(strings.Repeat("a long answer ", 80)))
	line("a0000003", "a0000002", call)
	line("a0000004", "a0000003", result("c1", false))
	line("a0000002", "a0000004", answer("the same id again"))
	line("a0000005", "a0000002", user("ok"))
	line("a0000006", "a0000005", result("nowhere", true))
	line("b0000001", "", user("a second root"))
	prev := "b0000001"
	for i := 0; i < 400; i++ {
		id := fmt.Sprintf("c%07d", i)
		line(id, prev, result("c1", i%50 == 0))
		prev = id
	}
	line("d0000001", prev, user("yes"))
	line("d0000002", "a0000003", result("c1", false))
	line("d0000003", "zzzzzzzz", user("dangling"))
	f := filepath.Join(dir, "odd.jsonl")
	testkit.WriteFile(t, f, []byte(b.String()), 0o600)
	return f
}

// A capture that reads the tail of the session (the lines after the mark,
// and before them only what they refer to) writes exactly what one that
// loads the whole session writes: every state file and capture.json, and
// the same result, at every step of a session growing in random steps,
// whatever the window it starts with (a 1-byte one must read further back
// again and again).
func TestCaptureTailSameAsWhole(t *testing.T) {
	dir := t.TempDir()
	windows := []int64{1, 4 << 10}
	for i, src := range tailSessions(t, dir) {
		name := filepath.Base(src)
		lines := splitLines(t, src)
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		sub := filepath.Join(dir, fmt.Sprint(i))
		file := filepath.Join(sub, name)
		if err := os.MkdirAll(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, file)
		whole := &Store{StateDir: filepath.Join(sub, "whole")}
		var tails []*Store
		for _, w := range windows {
			tails = append(tails, &Store{StateDir: filepath.Join(sub, fmt.Sprint(w))})
		}
		rng := rand.New(rand.NewPCG(uint64(i), 17))
		for prev, step := 0, 0; prev < len(lines); step++ {
			next := min(len(lines), prev+1+rng.IntN(len(lines)/4+2))
			if step == 3 {
				next = prev // nothing new
			}
			appendFile(t, file, lines[prev:next]...)
			prev = next
			want := captureBack(t, whole, file, 1<<62)
			wj, _ := json.Marshal(want)
			ws := stateFilesOf(t, whole)
			for k, st := range tails {
				gj, _ := json.Marshal(captureBack(t, st, file, windows[k]))
				if !bytes.Equal(wj, gj) {
					t.Fatalf("%s, window %d, step %d: tail capture\n%s\nwhole\n%s", name, windows[k], step, gj, wj)
				}
				gs := stateFilesOf(t, st)
				if len(ws) != 6 || len(gs) != len(ws) {
					t.Fatalf("%s step %d: state files %d and %d", name, step, len(gs), len(ws))
				}
				for f, w := range ws {
					if !bytes.Equal(gs[f], w) {
						t.Fatalf("%s, window %d, step %d: %s differs:\n%s\nwhole:\n%s", name, windows[k], step, f, gs[f], w)
					}
				}
			}
		}
	}
}

// readBytes is what this process has read so far (/proc/self/io's rchar:
// every read and pread), -1 where the kernel does not say.
func readBytes(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		var n int64
		if _, err := fmt.Sscanf(l, "rchar: %d", &n); err == nil {
			return n
		}
	}
	return -1
}

// A capture after a few appended lines reads those lines and a window
// before them, not the session: on a 32 MB session it reads what was
// appended and at most a few MB more, where loading the session reads all
// of it (a hook capturing after every turn of a 1 GB session reloaded it
// each time: 1.6 s).
func TestCaptureTailReadsNewBytes(t *testing.T) {
	if readBytes(t) < 0 {
		t.Skip("no /proc/self/io: the bytes read cannot be counted")
	}
	dir := t.TempDir()
	_, lines := genFile(t, dir, "src.jsonl", sessiongen.Options{Seed: 3, TargetBytes: 32 << 20, ToolErrors: 40})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	cut := len(lines) - 20
	var size, added int64
	for i, l := range lines {
		if size += int64(len(l)); i >= cut {
			added += int64(len(l))
		}
	}
	file := filepath.Join(dir, "s.jsonl")
	writeFile(t, file, lines[:cut]...)
	st := &Store{StateDir: filepath.Join(dir, "state")}
	capture(t, st, file, "k")
	appendFile(t, file, lines[cut:]...)
	before := readBytes(t)
	r := capture(t, st, file, "k")
	read := readBytes(t) - before
	whole := &Store{StateDir: filepath.Join(dir, "whole")}
	before = readBytes(t)
	capture(t, whole, file, "k")
	all := readBytes(t) - before
	t.Logf("%d MB session, %d bytes appended: the capture read %d bytes (%d new lines, %d tool results); loading it whole %d",
		size>>20, added, read, r.NewLines, r.ToolResults, all)
	if r.NewLines != 20 || r.Restarted {
		t.Fatalf("capture %+v", r)
	}
	if all < size {
		t.Fatalf("a whole capture read %d bytes of a %d-byte session: rchar does not count its reads", all, size)
	}
	if limit := added + 4*tailBytes; read > limit {
		t.Errorf("the capture of %d appended bytes read %d bytes of a %d-byte session (limit %d)", added, read, size, limit)
	}
}
