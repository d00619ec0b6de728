package transcript_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A loaded session's memory is its entries: a 1 GB session has 739k of
// them, and every command's peak sits on top of them. Fields only a few
// entry types carry live behind one pointer (rareFields); a field added to
// Entry itself costs every entry.
func TestEntrySize(t *testing.T) {
	const limit = 264
	if n := unsafe.Sizeof(transcript.Entry{}); n > limit {
		t.Errorf("Entry is %d bytes, over %d: put a field few entry types have in rareFields", n, limit)
	}
}

// The heap a loaded session keeps per entry, on a generated session of the
// benchmark's shape (assistant turns with tool calls, tool results,
// compactions): the Entry, its strings, its usage and the id index. It
// was 551 bytes with a map index and entries, usages and parent ids
// allocated one by one; 380-386 since.
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
	var before, after runtime.MemStats
	// Two collections: the first moves the pooled read buffers to the
	// victim cache, the second frees them.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := transcript.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int64(after.HeapAlloc-before.HeapAlloc) / int64(len(s.Entries))
	runtime.KeepAlive(s)
	s.Close()
	const limit = 420
	t.Logf("%d entries, %d heap bytes each", len(s.Entries), per)
	if per > limit {
		t.Errorf("a loaded entry keeps %d heap bytes, over %d", per, limit)
	}
}
