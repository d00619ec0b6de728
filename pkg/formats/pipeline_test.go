package formats_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// The batched converter uses a batch's chunk and records again once the
// converter holds nothing of them; with small batches (many reuses, lines
// longer than a batch) its view equals the one built line by line.
func TestBatchReuseKeepsTheView(t *testing.T) {
	for _, tc := range []struct {
		f   formats.Format
		gen func(*bytes.Buffer, sessiongen.AgentOptions) error
	}{
		{formats.ClaudeCode, func(b *bytes.Buffer, o sessiongen.AgentOptions) error {
			_, err := sessiongen.GenerateClaudeCode(b, o)
			return err
		}},
		{formats.Codex, func(b *bytes.Buffer, o sessiongen.AgentOptions) error {
			_, err := sessiongen.GenerateCodex(b, o)
			return err
		}},
	} {
		t.Run(string(tc.f), func(t *testing.T) {
			var src bytes.Buffer
			o := sessiongen.AgentOptions{Seed: 7, TargetBytes: 2 << 20, Thinking: true, Compactions: 2, ParallelToolCalls: 3}
			if err := tc.gen(&src, o); err != nil {
				t.Fatal(err)
			}
			want, err := formats.ConvertLineByLine(tc.f, src.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			for _, chunk := range []int{4 << 10, 64 << 10} {
				restore := formats.SetConvChunk(chunk)
				got := export(t, src.Bytes())
				restore()
				if !bytes.Equal(got, want) {
					t.Fatalf("batches of %d bytes: view differs from the line-by-line one (%d vs %d bytes)", chunk, len(got), len(want))
				}
			}
		})
	}
}

// A source of exactly one batch ending in a newline was read forever (the
// empty read at its end looked like the start of a long line).
func TestSourceOfWholeBatchesEnds(t *testing.T) {
	var src bytes.Buffer
	if _, err := sessiongen.GenerateCodex(&src, sessiongen.AgentOptions{Seed: 3, TargetBytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	b := src.Bytes()
	cut := bytes.LastIndexByte(b[:32<<10], '\n') + 1
	exact := append(append([]byte(nil), b[:cut]...), bytes.Repeat([]byte{'\n'}, 32<<10-cut)...)
	defer formats.SetConvChunk(32 << 10)()
	done := make(chan error)
	go func() {
		v, err := formats.OpenReader("src", bytes.NewReader(exact), nil)
		if err == nil {
			v.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("reading a source of exactly one batch did not end")
	}
}

func export(t *testing.T, src []byte) []byte {
	t.Helper()
	v, err := formats.OpenReader("src", bytes.NewReader(src), nil)
	if err != nil || v == nil {
		t.Fatalf("open: %v (view %v)", err, v)
	}
	defer v.Close()
	var out bytes.Buffer
	if _, err := v.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// OpenLazy writes no view while converting, and its first read writes the
// view Open writes.
func TestLazyViewIsWrittenOnFirstRead(t *testing.T) {
	var src bytes.Buffer
	if _, err := sessiongen.GenerateCodex(&src, sessiongen.AgentOptions{Seed: 5, TargetBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(p, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := 0
	lazy, err := formats.OpenLazy(p, func(*formats.Produced) { lines++ })
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	if formats.Written(lazy) || lines != lazy.Lines() {
		t.Fatalf("lazy view: written %v, %d of %d lines handed over", formats.Written(lazy), lines, lazy.Lines())
	}
	eager, err := formats.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	var got, want bytes.Buffer
	lazy.WriteTo(&got)
	eager.WriteTo(&want)
	if !formats.Written(lazy) || !bytes.Equal(got.Bytes(), want.Bytes()) || lazy.Size() != int64(want.Len()) {
		t.Fatalf("lazy view after a read: written %v, %d bytes, want the %d of Open", formats.Written(lazy), got.Len(), want.Len())
	}
}

// Open (a path) and OpenReader (a stream) answer alike for the formats
// they give no view of: pi JSONL is (nil, nil), left to pkg/transcript, and
// a file of no known format is an *UnknownFormatError naming the line.
func TestOpenAndOpenReaderLeavePiAndRefuseUnknown(t *testing.T) {
	pi := `{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}` + "\n"
	unknown := "[1,2,3]\n"
	dir := t.TempDir()
	for _, tc := range []struct {
		name, data string
		unknown    bool
	}{{"pi", pi, false}, {"unknown", unknown, true}} {
		path := filepath.Join(dir, tc.name+".jsonl")
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		v1, err1 := formats.Open(path, nil)
		v2, err2 := formats.OpenReader(path, bytes.NewReader([]byte(tc.data)), nil)
		for i, got := range []struct {
			v   *formats.View
			err error
		}{{v1, err1}, {v2, err2}} {
			var ue *formats.UnknownFormatError
			if got.v != nil || errors.As(got.err, &ue) != tc.unknown || (!tc.unknown && got.err != nil) {
				t.Errorf("%s, reader %d: view %v, error %v", tc.name, i, got.v, got.err)
			}
			if tc.unknown && (ue == nil || ue.Line != 1 || ue.File != path) {
				t.Errorf("%s, reader %d: %+v", tc.name, i, ue)
			}
		}
	}
}
