package transcript

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"unsafe"
)

func TestZZMeasure(t *testing.T) {
	f := os.Getenv("ZZFILE")
	if f == "" {
		t.Skip()
	}
	runtime.MemProfileRate = 4096
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&b)
	t.Logf("entries %d live %d MB, %d B/entry", len(s.Entries), (b.HeapAlloc-a.HeapAlloc)>>20, (b.HeapAlloc-a.HeapAlloc)/uint64(len(s.Entries)))
	if p := os.Getenv("ZZPROF"); p != "" {
		w, _ := os.Create(p)
		pprof.Lookup("heap").WriteTo(w, 0)
		w.Close()
	}
	runtime.KeepAlive(s)
}

func TestZZSize(t *testing.T) { t.Log(unsafe.Sizeof(Entry{})) }
