package sessionwrite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// writerLine is an entry as pi appends it: a user message hanging off the
// writer's previous entry.
func writerLine(id, parent string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-03-02T10:40:00.000Z","message":{"role":"user","content":"from the writer ` + id + `","timestamp":1772448000000}}` + "\n"
}

func appendByPath(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// rewriteSame rewrites a session with its own bytes under the lock, so the
// only change is what other writers add meanwhile.
func rewriteSame(t *testing.T, f string, before func(), hook func()) (*sessionwrite.RewriteResult, []byte) {
	t.Helper()
	rr, content, err := rewriteSameErr(t, f, before, hook)
	if err != nil {
		t.Fatal(err)
	}
	return rr, content
}

// rewriteSameErr is rewriteSame for a rewrite that may fail.
func rewriteSameErr(t *testing.T, f string, before func(), hook func()) (*sessionwrite.RewriteResult, []byte, error) {
	t.Helper()
	s := testkit.Load(t, f)
	defer s.Close()
	content, _ := os.ReadFile(f)
	content = content[:s.Size]
	l, err := filelock.Acquire(context.Background(), f, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if before != nil {
		before()
	}
	sessionwrite.SetAfterRename(hook)
	defer sessionwrite.SetAfterRename(nil)
	rr, err := sessionwrite.Rewrite(s, content, sessionwrite.RewriteOptions{Settle: 30 * time.Millisecond})
	return rr, content, err
}

// Bytes a lock-ignoring writer puts into the old file — after the load,
// or through a file it opened just before the rename — end up in the live
// file after the new content, in the order they were written, and the
// backup holds the original with them.
func TestRewriteCarriesLateAppends(t *testing.T) {
	const leaf = "a1f00012" // last entry of spec-v3.jsonl
	cases := []struct {
		name string
		// before runs before Rewrite; hook right after its rename, with
		// old open on the replaced file.
		before func(t *testing.T, f string)
		hook   func(t *testing.T, f string, old *os.File)
		want   []string // writer ids in the order they must appear
	}{
		{"appended after the load", func(t *testing.T, f string) {
			appendByPath(t, f, writerLine("w0000001", leaf))
		}, nil, []string{"w0000001"}},
		{"written to the old file after the rename", nil, func(t *testing.T, f string, old *os.File) {
			old.WriteString(writerLine("w0000001", leaf))
			go func() {
				time.Sleep(5 * time.Millisecond)
				appendByPath(t, f, writerLine("w0000002", "w0000001"))
			}()
		}, []string{"w0000001", "w0000002"}},
		{"the next append reaches the new file first", nil, func(t *testing.T, f string, old *os.File) {
			// The writer's late write to the old file and its next one to
			// the new file both land before ctxtool looks: the carried
			// line must still come first.
			old.WriteString(writerLine("w0000001", leaf))
			appendByPath(t, f, writerLine("w0000002", "w0000001"))
			go func() {
				time.Sleep(3 * time.Millisecond)
				appendByPath(t, f, writerLine("w0000003", "w0000002"))
			}()
		}, []string{"w0000001", "w0000002", "w0000003"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
			orig, _ := os.ReadFile(f)
			var old *os.File
			before := func() {
				var err error
				if old, err = os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0); err != nil {
					t.Fatal(err)
				}
				if c.before != nil {
					c.before(t, f)
				}
			}
			var hook func()
			if c.hook != nil {
				hook = func() { c.hook(t, f, old) }
			}
			rr, content := rewriteSame(t, f, before, hook)
			old.Close()
			time.Sleep(20 * time.Millisecond) // let a delayed append land
			got, _ := os.ReadFile(f)
			var wantTail string
			parent := leaf
			for _, id := range c.want {
				wantTail += writerLine(id, parent)
				parent = id
			}
			if string(got) != string(content)+wantTail {
				t.Fatalf("live file:\n%s\nwant the content followed by\n%s", got[len(content):], wantTail)
			}
			if rr.CarriedLines < 1 {
				t.Fatalf("carried %d lines", rr.CarriedLines)
			}
			bak, _ := os.ReadFile(rr.Backup)
			if !bytes.HasPrefix(bak, orig) {
				t.Fatal("backup lost the original")
			}
			if oracle.Available() {
				r := oracle.CheckOne(t, f)
				if !r.Loads || r.BrokenParents != 0 || r.LeafID != c.want[len(c.want)-1] {
					t.Fatalf("pi: loads %v, broken parents %d, leaf %s", r.Loads, r.BrokenParents, r.LeafID)
				}
			}
		})
	}
}

// holdingWriter starts a process that opens f for appending and holds it
// until write is called, then writes line and exits: a writer descheduled
// between its open and its write.
func holdingWriter(t *testing.T, f, line string) (pid int, write func()) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `exec 3>>"$1" && echo opened && read go && printf '%s' "$2" >&3`, "sh", f, line)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	if opened, _ := bufio.NewReader(out).ReadString('\n'); opened != "opened\n" {
		t.Fatalf("writer did not open %s: %q", f, opened)
	}
	var once sync.Once
	write = func() {
		once.Do(func() {
			in.Write([]byte("go\n"))
			if err := cmd.Wait(); err != nil {
				t.Errorf("writer: %v", err)
			}
		})
	}
	t.Cleanup(write)
	return cmd.Process.Pid, write
}

// A writer that opened the session before the rename and writes to it long
// after the settle time (descheduled on a loaded machine) loses nothing:
// Rewrite carries until no other process has the old file open. Where /proc
// cannot tell, only the settle time protects it.
func TestRewriteWaitsForAWriterHoldingTheOldFile(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc here: Rewrite falls back to the settle time")
	}
	const leaf = "a1f00012" // last entry of spec-v3.jsonl
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	line := writerLine("w0000001", leaf)
	_, write := holdingWriter(t, f, line)
	returned := make(chan struct{})
	go func() {
		// Write once Rewrite has returned (it stopped watching) or, if it
		// waits for the writer, well after its settle time.
		select {
		case <-returned:
		case <-time.After(300 * time.Millisecond):
		}
		write()
	}()
	rr, content := rewriteSame(t, f, nil, nil)
	close(returned)
	write()
	got, _ := os.ReadFile(f)
	if string(got) != string(content)+line {
		t.Fatalf("live file after the new content:\n%s\nwant the writer's late line:\n%s", got[len(content):], line)
	}
	if rr.CarriedLines != 1 {
		t.Fatalf("carried %d lines, want 1", rr.CarriedLines)
	}
}

// A writer that keeps the old file open longer than the hold wait is named
// in the result; what it writes afterwards is in the backup only.
func TestRewriteGivesUpOnAWriterHoldingTheOldFile(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc here: Rewrite falls back to the settle time")
	}
	defer sessionwrite.SetHoldWait(50 * time.Millisecond)()
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	line := writerLine("w0000001", "a1f00012")
	pid, write := holdingWriter(t, f, line)
	start := time.Now()
	rr, content := rewriteSame(t, f, nil, nil)
	took := time.Since(start)
	write()
	if len(rr.HeldBy) != 1 || rr.HeldBy[0] != pid || took < 50*time.Millisecond {
		t.Fatalf("held by %v (writer %d) after %v", rr.HeldBy, pid, took)
	}
	got, _ := os.ReadFile(f)
	bak, _ := os.ReadFile(rr.Backup)
	if string(got) != string(content) || !strings.HasSuffix(string(bak), line) {
		t.Fatalf("live file gained %q; backup ends %q", got[len(content):], bak[max(0, len(bak)-len(line)):])
	}
}

// A process that has the old file open only for reading (tail -f, a pager)
// cannot write late lines: Rewrite neither waits for it nor names it.
func TestRewriteIgnoresAReaderHoldingTheOldFile(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc here: Rewrite falls back to the settle time")
	}
	defer sessionwrite.SetHoldWait(50 * time.Millisecond)()
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	cmd := exec.Command("sh", "-c", `exec 3<"$1" && echo opened && read go`, "sh", f)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { in.Write([]byte("go\n")); cmd.Wait() }()
	if opened, _ := bufio.NewReader(out).ReadString('\n'); opened != "opened\n" {
		t.Fatalf("reader did not open %s: %q", f, opened)
	}
	rr, content := rewriteSame(t, f, nil, nil)
	if len(rr.HeldBy) != 0 {
		t.Fatalf("held by %v: the reader (pid %d) cannot write to it", rr.HeldBy, cmd.Process.Pid)
	}
	if got, _ := os.ReadFile(f); string(got) != string(content) {
		t.Fatalf("live file is not the new content")
	}
}

// The lock of a symlinked session is the real file's lock; appends and
// rewrites go to the real file and the link stays a link.
func TestSymlinkedSession(t *testing.T) {
	real := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	dir := t.TempDir()
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if got := filelock.Path(link); got != real+".lock" {
		t.Fatalf("LockPath(link) = %s, want %s", got, real+".lock")
	}
	held, err := filelock.Acquire(context.Background(), real, 0)
	if err != nil {
		t.Fatal(err)
	}
	appendOne := func() error {
		return sessionwrite.Update(context.Background(), link, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
			a, err := sessionwrite.NewWriter(s).CustomMessage("t", "via the link", false, nil)
			return [][]byte{a.Line}, err
		})
	}
	var le *filelock.LockedError
	if err := appendOne(); !errors.As(err, &le) || le.LockPath != real+".lock" {
		t.Fatalf("append through the link while the real file is locked: %v", err)
	}
	held.Release()
	if err := appendOne(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link is no longer a symlink")
	}
	if data, _ := os.ReadFile(real); !strings.Contains(string(data), "via the link") {
		t.Fatal("the real file did not get the entry")
	}
	if _, err := os.Stat(link + ".lock"); !os.IsNotExist(err) {
		t.Fatal("a lock next to the link")
	}
	// Rewrite through the link replaces the real file, keeps the link.
	s, _ := transcript.Load(link)
	l, _ := filelock.Acquire(context.Background(), link, 0)
	rr, err := sessionwrite.Rewrite(s, []byte("{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n"), sessionwrite.RewriteOptions{Settle: time.Millisecond})
	l.Release()
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("Rewrite replaced the link by a file")
	}
	if filepath.Dir(rr.Backup) != filepath.Dir(real) {
		t.Fatalf("backup %s not next to the real file", rr.Backup)
	}
	if data, _ := os.ReadFile(real); !strings.Contains(string(data), `"id":"x"`) {
		t.Fatal("the real file was not rewritten")
	}
}

// FIFOs, devices and directories are refused at once, by readers and
// writers; nothing blocks on a FIFO without a writer.
func TestNonRegularFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		start := time.Now()
		_, err := transcript.Load(p)
		var nr *transcript.NotRegularError
		if !errors.As(err, &nr) || time.Since(start) > time.Second {
			t.Fatalf("Load(%s): %v after %v", p, err, time.Since(start))
		}
		err = sessionwrite.Update(context.Background(), p, sessionwrite.UpdateOptions{}, func(*transcript.Session) ([][]byte, error) {
			t.Fatal("planned on a non-regular file")
			return nil, nil
		})
		if !errors.As(err, &nr) {
			t.Fatalf("Update(%s): %v", p, err)
		}
	}
	if _, err := os.Stat(fifo + ".lock"); !os.IsNotExist(err) {
		t.Fatal("a lock was taken for a FIFO")
	}
}

// A read-only session is never written, even by root.
func TestReadOnlySessionRefused(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	os.Chmod(f, 0o444)
	before, _ := os.ReadFile(f)
	err := sessionwrite.Update(context.Background(), f, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
		a, err := sessionwrite.NewWriter(s).CustomMessage("t", "x", false, nil)
		return [][]byte{a.Line}, err
	})
	var ro *transcript.ReadOnlyError
	if !errors.As(err, &ro) || !strings.Contains(err.Error(), "0444") {
		t.Fatalf("Update on 0444: %v", err)
	}
	s, _ := transcript.Load(f)
	defer s.Close()
	if _, err := sessionwrite.Rewrite(s, []byte("x\n"), sessionwrite.RewriteOptions{}); !errors.As(err, &ro) {
		t.Fatalf("Rewrite on 0444: %v", err)
	}
	after, _ := os.ReadFile(f)
	st, _ := os.Stat(f)
	if string(before) != string(after) || st.Mode().Perm() != 0o444 {
		t.Fatal("the read-only file changed")
	}
}

// A parentId cycle (here made by a duplicated id, as a faulty sync leaves
// it) hangs pi's walk from the leaf: writers refuse with the lines.
// Duplicate ids without a cycle load in pi: appends go on, a rewrite
// (whose re-parenting could close a cycle) refuses.
func TestWritesRefuseTreesPiCannotLoad(t *testing.T) {
	head := `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"one","timestamp":1}}` + "\n" +
		`{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"two","timestamp":1}}` + "\n" +
		`{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"user","content":"three","timestamp":1}}` + "\n"
	cyclic := head + `{"type":"message","id":"b","parentId":"c","timestamp":"t","message":{"role":"user","content":"two again","timestamp":1}}` + "\n"
	dupOnly := head + `{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"two again","timestamp":1}}` + "\n"
	appendOne := func(f string) error {
		return sessionwrite.Update(context.Background(), f, sessionwrite.UpdateOptions{}, func(s *transcript.Session) ([][]byte, error) {
			a, err := sessionwrite.NewWriter(s).CustomMessage("t", "x", false, nil)
			return [][]byte{a.Line}, err
		})
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "cyclic.jsonl")
	os.WriteFile(f, []byte(cyclic), 0o644)
	err := appendOne(f)
	var te *transcript.TreeError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "lines 4, 5") || !strings.Contains(err.Error(), "ctxtool lint") {
		t.Fatalf("append to a cyclic tree: %v", err)
	}
	if got, _ := os.ReadFile(f); string(got) != cyclic {
		t.Fatal("the cyclic session changed")
	}

	g := filepath.Join(dir, "dup.jsonl")
	os.WriteFile(g, []byte(dupOnly), 0o644)
	s, _ := transcript.Load(g)
	probs := s.TreeProblems()
	if len(probs) != 1 || probs[0].Kind != "duplicate id" || fmt.Sprint(probs[0].Lines) != "[3 5]" {
		t.Fatalf("problems %+v", probs)
	}
	l, _ := filelock.Acquire(context.Background(), g, 0)
	if _, err := sessionwrite.Rewrite(s, []byte("x\n"), sessionwrite.RewriteOptions{}); !errors.As(err, &te) {
		t.Fatalf("Rewrite of a duplicate-id session: %v", err)
	}
	l.Release()
	s.Close()
	if err := appendOne(g); err != nil {
		t.Fatalf("append to a duplicate-id session without a cycle: %v", err)
	}
	if oracle.Available() {
		if r := oracle.CheckOne(t, g); !r.Loads || r.LeafType != "custom_message" {
			t.Fatalf("pi: %+v", r)
		}
	}
}

// lateWriter is a lock-ignoring writer for the carry-round tests: its lines
// hang off each other from spec-v3.jsonl's last entry, and written keeps
// them in the order they were made.
type lateWriter struct {
	t       *testing.T
	f       string
	old     *os.File // opened before the last rename
	parent  string
	written []string
}

func newLateWriter(t *testing.T, f string) *lateWriter {
	return &lateWriter{t: t, f: f, parent: "a1f00012"}
}

func (w *lateWriter) next() string {
	id := fmt.Sprintf("w%07d", len(w.written)+1)
	l := writerLine(id, w.parent)
	w.parent = id
	w.written = append(w.written, l)
	return l
}

// open opens the live file for appending (closed when the test ends).
func (w *lateWriter) open() *os.File {
	f, err := os.OpenFile(w.f, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { f.Close() })
	return f
}

// step runs after a rename: a late line to the file just replaced, the
// next one to the new file (which forces a carry round), and an open of it
// for the next late line.
func (w *lateWriter) step() {
	w.old.WriteString(w.next())
	appendByPath(w.t, w.f, w.next())
	w.old = w.open()
}

// checkWholeLines fails unless the live file holds, after content, exactly
// the writer's lines, each whole, in any order.
func (w *lateWriter) checkWholeLines(content []byte) {
	w.t.Helper()
	got, _ := os.ReadFile(w.f)
	lines := strings.SplitAfter(string(got[len(content):]), "\n")
	sort.Strings(lines)
	want := append([]string{""}, w.written...)
	sort.Strings(want)
	if strings.Join(lines, "") != strings.Join(want, "") || len(lines) != len(want) {
		w.t.Fatalf("live file after the new content:\n%s\nwant these whole lines in any order:\n%s", got[len(content):], strings.Join(w.written, ""))
	}
}

// A writer's append that is half visible when a carry round copies the live
// file (Linux makes a write that crosses a page boundary visible page by
// page), whose rest then lands in the file that round replaced while its
// next append already reaches the new one, keeps its line whole and in
// order: the bytes of the new live file that are ctxtool's are the ones it
// wrote before the rename, not whatever the file holds after it.
func TestRewriteCarryRoundKeepsAHalfWrittenLineWhole(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	w := newLateWriter(t, f)
	lines := []string{w.next(), w.next(), w.next(), w.next()}
	half := len(lines[2]) / 2
	var old, live *os.File
	before := func() { old = w.open() }
	// Right after Rewrite's rename: a late line to the old file, then the
	// next one to the new file and half of the one after, which forces a
	// carry round that copies the half line.
	hook := func() {
		old.WriteString(lines[0])
		appendByPath(t, f, lines[1])
		live = w.open()
		live.WriteString(lines[2][:half])
	}
	var once sync.Once
	sessionwrite.SetAfterRebuild(func() {
		once.Do(func() {
			live.WriteString(lines[2][half:])
			appendByPath(t, f, lines[3])
		})
	})
	defer sessionwrite.SetAfterRebuild(nil)
	_, content := rewriteSame(t, f, before, hook)
	got, _ := os.ReadFile(f)
	if want := string(content) + strings.Join(lines, ""); string(got) != want {
		t.Fatalf("live file after the new content:\n%s\nwant:\n%s", got[len(content):], want[len(content):])
	}
}

// A writer whose appends keep arriving out of order through every carry
// round (each round's rename lets it write to the file just replaced) loses
// nothing: once the rounds run out, its lines are carried after what
// reached the live file first.
func TestRewriteCarriesOutOfOrderWhenRoundsRunOut(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	w := newLateWriter(t, f)
	sessionwrite.SetAfterRebuild(w.step)
	defer sessionwrite.SetAfterRebuild(nil)
	_, content := rewriteSame(t, f, func() { w.old = w.open() }, w.step)
	w.checkWholeLines(content)
}

// The last carry round allowed copies half of a writer's line (Linux makes
// a write that crosses a page boundary visible page by page); the rest
// lands in the file that round replaced, and the writer's next line reaches
// the new one first. Once the rounds have run out late lines are carried
// out of order, but every line stays whole: a round copies only the whole
// lines of the live file and leaves an unfinished one to be carried whole.
func TestRewriteLastCarryRoundKeepsAHalfWrittenLineWhole(t *testing.T) {
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	w := newLateWriter(t, f)
	var live *os.File
	var half string
	rounds := 0
	sessionwrite.SetAfterRebuild(func() {
		rounds++
		switch {
		case rounds < sessionwrite.MaxCarryRounds-1:
			w.step()
		case rounds == sessionwrite.MaxCarryRounds-1:
			// Half of the writer's next line is visible in the live file
			// when the last round copies it.
			w.step()
			half = w.next()
			live = w.open()
			live.WriteString(half[:len(half)/2])
		default:
			live.WriteString(half[len(half)/2:])
			appendByPath(t, f, w.next())
		}
	})
	defer sessionwrite.SetAfterRebuild(nil)
	_, content := rewriteSame(t, f, func() { w.old = w.open() }, w.step)
	if rounds != sessionwrite.MaxCarryRounds {
		t.Fatalf("%d carry rounds, want %d", rounds, sessionwrite.MaxCarryRounds)
	}
	w.checkWholeLines(content)
}

// The hold wait starts again with each carry round: a writer holding the
// file a round replaced gets the whole wait, however long Rewrite already
// waited for a writer holding the file before it.
func TestRewriteHoldWaitRestartsWithEachCarryRound(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc here: Rewrite falls back to the settle time")
	}
	const wait = time.Second
	defer sessionwrite.SetHoldWait(wait)()
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	lines := []string{writerLine("w0000001", "a1f00012"), writerLine("w0000002", "w0000001"), writerLine("w0000003", "w0000002")}
	var write1 func()
	before := func() { _, write1 = holdingWriter(t, f, lines[0]) }
	done := make(chan struct{})
	// Right after the rename a second writer opens the new file. Rewrite
	// waits for the first; once it has waited most of its hold wait, the
	// first writes, out of order with an append to the new file, which
	// forces a carry round: the file the second writer holds is replaced.
	// It writes well within a hold wait of that round.
	hook := func() {
		_, write3 := holdingWriter(t, f, lines[2])
		go func() {
			defer close(done)
			time.Sleep(wait * 6 / 10)
			if w, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				w.WriteString(lines[1])
				w.Close()
			}
			write1()
			time.Sleep(wait * 7 / 10)
			write3()
		}()
	}
	rr, content := rewriteSame(t, f, before, hook)
	<-done
	got, _ := os.ReadFile(f)
	if want := string(content) + strings.Join(lines, ""); string(got) != want || len(rr.HeldBy) != 0 {
		t.Fatalf("held by %v; live file after the new content:\n%s\nwant:\n%s", rr.HeldBy, got[len(content):], want[len(content):])
	}
}

// A writer still writing a line to the file the last carry round replaced
// (its first half visible, as Linux shows a write page by page) past the
// settle time keeps its line whole: the carrier takes a partial line only
// once no process has the file open, so its rest cannot land after the
// writer's next line, which once the rounds have run out is carried after.
func TestRewriteWaitsForTheRestOfALineBeingWritten(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc here: Rewrite falls back to the settle time")
	}
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	w := newLateWriter(t, f)
	var slow *exec.Cmd
	var tell io.Writer
	var said *bufio.Reader
	var finish sync.Once
	// The slow writer writes the rest of its line and exits; the writer's
	// next line reaches the live file before the carrier looks again.
	rest := func() {
		if slow == nil {
			return
		}
		finish.Do(func() {
			tell.Write([]byte("rest\n"))
			slow.Wait()
			if l, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				l.WriteString(w.next())
				l.Close()
			}
		})
	}
	rounds := 0
	sessionwrite.SetAfterRebuild(func() {
		rounds++
		if rounds < sessionwrite.MaxCarryRounds {
			w.step()
		}
		switch rounds {
		case sessionwrite.MaxCarryRounds - 1:
			// A slow writer opens the live file, which the last round
			// replaces.
			line := w.next()
			slow = exec.Command("sh", "-c", `exec 3>>"$1" && echo opened && read a && printf '%s' "$2" >&3 && echo half && read b && printf '%s' "$3" >&3`,
				"sh", f, line[:len(line)/2], line[len(line)/2:])
			tell, _ = slow.StdinPipe()
			out, _ := slow.StdoutPipe()
			if err := slow.Start(); err != nil {
				t.Skip("no sh:", err)
			}
			said = bufio.NewReader(out)
			said.ReadString('\n')
		case sessionwrite.MaxCarryRounds:
			// It writes half its line to the file just replaced, and the
			// rest only later.
			tell.Write([]byte("half\n"))
			said.ReadString('\n')
			go func() { time.Sleep(300 * time.Millisecond); rest() }()
		}
	})
	defer sessionwrite.SetAfterRebuild(nil)
	sessionwrite.SetAfterCarry(func() {
		if rounds == sessionwrite.MaxCarryRounds {
			rest()
		}
	})
	defer sessionwrite.SetAfterCarry(nil)
	_, content := rewriteSame(t, f, func() { w.old = w.open() }, w.step)
	rest()
	w.checkWholeLines(content)
}

// A writer that keeps the replaced file open and keeps writing to it never
// lets it go quiet: Rewrite stops carrying after its time limit (the
// session lock is held meanwhile) with an error that says where the rest
// goes, every line carried so far whole and everything in the backup.
func TestRewriteStopsCarryingAfterItsTimeLimit(t *testing.T) {
	defer sessionwrite.SetCarryLimit(300 * time.Millisecond)()
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	line := writerLine("w0000001", "a1f00012")
	w := exec.Command("sh", "-c", `exec 3>>"$1" && echo opened && while :; do printf '%s' "$2" >&3; sleep 0.005; done`, "sh", f, line)
	out, _ := w.StdoutPipe()
	if err := w.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	var once sync.Once
	stopWriter := func() { once.Do(func() { w.Process.Kill(); w.Wait() }) }
	defer stopWriter()
	bufio.NewReader(out).ReadString('\n')
	// Without a limit Rewrite carries until the writer stops.
	watchdog := time.AfterFunc(5*time.Second, stopWriter)
	start := time.Now()
	_, content, err := rewriteSameErr(t, f, nil, nil)
	if !watchdog.Stop() {
		t.Fatalf("Rewrite still carrying %v after the start, with a 300 ms limit", time.Since(start))
	}
	stopWriter()
	baks, _ := filepath.Glob(f + ".bak.*")
	if err == nil || len(baks) != 1 || !strings.Contains(err.Error(), "only in "+baks[0]) {
		t.Fatalf("error %v, backups %v", err, baks)
	}
	got, _ := os.ReadFile(f)
	bak, _ := os.ReadFile(baks[0])
	tail := string(got[len(content):])
	if !bytes.HasPrefix(got, content) || tail == "" || strings.ReplaceAll(tail, line, "") != "" || !strings.HasPrefix(string(bak[len(content):]), tail) {
		t.Fatalf("live file after the new content (%d bytes) is not whole writer lines also in the backup:\n%.400s", len(tail), tail)
	}
}

// A writer that still holds a file a carry round replaced when the hold
// wait runs out would write where no file keeps it (the backup is the
// original only): Rewrite fails saying so, after carrying every line so far.
func TestRewriteFailsWhenAWriterHoldsAFileARoundReplaced(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc here: Rewrite falls back to the settle time")
	}
	defer sessionwrite.SetHoldWait(100 * time.Millisecond)()
	f := testkit.CopyToTemp(t, "../transcript/testdata/spec-v3.jsonl")
	w := newLateWriter(t, f)
	// Right after the rename a writer opens the new file and holds it; a
	// late line out of order forces a carry round that replaces it.
	hook := func() {
		holdingWriter(t, f, "")
		w.step()
	}
	_, content, err := rewriteSameErr(t, f, func() { w.old = w.open() }, hook)
	baks, _ := filepath.Glob(f + ".bak.*")
	if err == nil || len(baks) != 1 || !strings.Contains(err.Error(), "in no file") || !strings.Contains(err.Error(), baks[0]) {
		t.Fatalf("error %v, backups %v", err, baks)
	}
	w.checkWholeLines(content)
}
