package checkpoint

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// FromSession reads a loaded session into a builder Input holding every
// message of the branch (root → leaf, including those before a
// compaction: the checkpoint is what survives it) decoded in full, the
// compactions' file lists, the split turn and the compaction count: the
// reference the one-pass fold of Take is checked against.
func FromSession(s *transcript.Session) (Input, error) {
	ctx := s.Context()
	in, _, err := newBranch(s, ctx)
	if err != nil {
		return in, err
	}
	for _, e := range ctx.Path {
		switch e.Type() {
		case "compaction":
			in.Compactions = append(in.Compactions, compactionFiles(s, e))
		case "message", "custom_message":
			m, err := decodeMessage(s, e)
			if err != nil {
				return in, err
			}
			if m != nil {
				in.Messages = append(in.Messages, *m)
			}
		}
	}
	return in, nil
}

// foldSession is Take's pass: the branch folded in while a capture reads
// the whole file into st.
func foldSession(t testing.TB, s *transcript.Session, st *Store, now time.Time) *Checkpoint {
	t.Helper()
	in, b, err := newBranch(s, s.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st != nil {
		if _, err := captureSession(st, s, "k", now, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.rest(); err != nil {
		t.Fatal(err)
	}
	in.Now = now
	return b.fold.checkpoint(in)
}

// The checkpoint folded in one pass over the branch (messages decoded
// once, shared with the capture, none held to the end) is exactly the one
// built from every message decoded in full, and the capture read along
// the branch records what a capture alone records.
func TestFoldedBranchBuildsTheSameCheckpoint(t *testing.T) {
	dir := t.TempDir()
	files := []string{}
	for i, o := range []sessiongen.Options{
		{Seed: 11, Turns: 40, ToolErrors: 6, Compactions: 2},
		{Seed: 12, Turns: 25, ToolErrors: 3, Branches: 3, CustomMessages: 2, BashExecutions: 2},
		{Seed: 13, Turns: 30, ToolErrors: 4, Version: 1},
	} {
		f := filepath.Join(dir, "gen"+string(rune('a'+i))+".jsonl")
		sessiongen.Write(t, f, o)
		files = append(files, f)
	}
	files = append(files, oracle.Fixtures(t)...)
	g, _ := filepath.Glob("../../testdata/*.jsonl")
	files = append(files, g...)
	now := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for i, f := range files {
		s := testkit.Load(t, f)
		full, err := FromSession(s)
		if err != nil {
			t.Fatal(err)
		}
		full.Now = now
		want := Build(full)
		along := &Store{StateDir: filepath.Join(dir, "along", string(rune('a'+i)))}
		got := foldSession(t, s, along, now)
		alone := &Store{StateDir: filepath.Join(dir, "alone", string(rune('a'+i)))}
		if _, err := captureSession(alone, s, "k", now, &branch{s: s}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if !reflect.DeepEqual(got, want) {
			ja, _ := json.MarshalIndent(got, "", " ")
			jb, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("%s: the folded checkpoint differs:\nfolded %s\nfull %s", f, ja, jb)
		}
		if a, b := readState(t, along, "k"), readState(t, alone, "k"); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the capture along the branch differs from one alone:\n%+v\n%+v", f, a, b)
		}
	}
}

// foldHeap is the heap the folder of a session's branch holds once the
// whole branch is folded in.
func foldHeap(t *testing.T, file string) (heap uint64, messages int) {
	t.Helper()
	s := loaded(t, file)
	ctx := s.Context()
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // and what sync.Pools held through the first
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	_, b, err := newBranch(s, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.rest(); err != nil {
		t.Fatal(err)
	}
	f := b.fold
	b = nil
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(f)
	runtime.KeepAlive(ctx) // the session's own memory is not the folder's
	return ms.HeapAlloc - min(before, ms.HeapAlloc), f.n
}

// The builder keeps what the checkpoint shows, not the messages: folding
// a branch four times as long holds about the same heap. Every message
// held to the end (as Build's input once was) made a 1 GB session's
// checkpoint peak at 1.7 GB; here it would hold four times the heap.
func TestBuilderMemoryDoesNotGrowWithMessages(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, turns int) string {
		f := filepath.Join(dir, name)
		o := sessiongen.Options{Seed: 21, Turns: turns, ToolErrors: 4, Compactions: 3, Thinking: true}
		sessiongen.Write(t, f, o)
		return f
	}
	small, smallMsgs := foldHeap(t, gen("small.jsonl", 150))
	large, largeMsgs := foldHeap(t, gen("large.jsonl", 600))
	t.Logf("folder heap: %d messages %d bytes, %d messages %d bytes", smallMsgs, small, largeMsgs, large)
	if largeMsgs < 3*smallMsgs {
		t.Fatalf("the large session has %d messages, the small %d: not the sizes compared", largeMsgs, smallMsgs)
	}
	if large > small+small/2+64<<10 {
		t.Errorf("the folder holds %d bytes after %d messages, %d after %d: it grows with the messages", large, largeMsgs, small, smallMsgs)
	}
}

func BenchmarkCheckpointFold(b *testing.B) {
	s := loaded(b, benchSession(b, 8<<20))
	b.SetBytes(s.Size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		foldSession(b, s, nil, goldenNow)
	}
}

// benchSession writes a session of the benchmark shape (bench/gen's
// "bench" preset: tool outputs, thinking, compactions) of about size bytes.
func benchSession(tb testing.TB, size int64) string {
	tb.Helper()
	o, err := sessiongen.PresetOptions("bench")
	if err != nil {
		tb.Fatal(err)
	}
	o.TargetBytes = size
	f := filepath.Join(tb.TempDir(), "bench.jsonl")
	sessiongen.Write(tb, f, o)
	return f
}

// loaded is the session in file, closed when the test ends.
func loaded(tb testing.TB, file string) *transcript.Session {
	tb.Helper()
	s := testkit.Load(tb, file)
	tb.Cleanup(func() { s.Close() })
	return s
}

// passAlloc is the bytes Take's pass over a generated session of size
// bytes allocates (the branch folded along a capture of the whole file).
func passAlloc(t *testing.T, size int64) uint64 {
	t.Helper()
	s := loaded(t, benchSession(t, size))
	st := &Store{StateDir: t.TempDir()}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, b, err := newBranch(s, s.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := captureSession(st, s, "k", time.Now(), b); err != nil {
		t.Fatal(err)
	}
	if err := b.rest(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc - before
}

// The pass reads each line through one window and decodes into one
// message what the checkpoint reads of it, copying its text but not its
// tool calls' arguments, and the fold keeps its copies in place: each
// further byte of session allocates about a fifth of a byte. A buffer per
// line and messages decoded in full were 1.2 bytes per byte (1.2 GB of
// garbage at 1 GB, each collection marking the loaded session again); a
// Message on the heap per message, per kept turn and answer, and the
// arguments copied, 0.59 (a 1 GB checkpoint's peak RSS was then twice its
// session's live heap).
func TestTakePassAllocatesLittle(t *testing.T) {
	const small, large, bound = 4 << 20, 16 << 20, 0.35
	a, b := passAlloc(t, small), passAlloc(t, large)
	perByte := float64(b-a) / float64(large-small)
	if perByte > bound {
		t.Errorf("each further session byte allocated %.2f bytes, over %.2f", perByte, bound)
	}
	t.Logf("%.2f bytes allocated per further session byte", perByte)
}
