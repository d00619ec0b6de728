package formats_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// A lazy view (OpenLazy) measures its lines instead of writing them: the
// offset and length it hands with every line are those of the line Open
// writes, and the parts it does write (a summary, the blocks it did not
// size) are that line's bytes. On every line of generated sessions of each
// format (odd options too) and of the wild transcripts; a measured length
// one byte off fails here, not as a wrong citation far away.
func TestMeasuredLinesAreTheWrittenOnes(t *testing.T) {
	files := sessiongen.AgentCorpus(t, t.TempDir(), func(seed uint64) sessiongen.AgentOptions {
		return sessiongen.AgentOptions{Seed: seed, TargetBytes: 512 << 10, Thinking: seed != 2, Compactions: int(seed - 1),
			ParallelToolCalls: int(seed), Fact: "the port is 8443"}
	})
	for _, f := range files {
		checkMeasured(t, f)
	}
	t.Run("wild", func(t *testing.T) {
		for _, f := range oracle.WildAgentTranscripts(t) {
			checkMeasured(t, f)
		}
	})
}

// kept is what a line's reader reads of it: the summary and the blocks
// not sized, as bytes.
func kept(p *formats.Produced) []string {
	var out []string
	if p.Summary[1] > 0 {
		out = append(out, string(p.Line[p.Summary[0]:p.Summary[1]]))
	}
	for _, b := range p.Blocks {
		if !b.Sized {
			out = append(out, string(p.Line[b.Span[0]:b.Span[1]]))
		}
	}
	return out
}

func checkMeasured(t *testing.T, f string) {
	t.Helper()
	name := filepath.Base(f)
	type line struct {
		off    int64
		length int
		kept   []string
		header []byte
	}
	var measured, written []line
	lazy, err := formats.OpenLazy(f, func(p *formats.Produced) {
		if !p.Measured {
			t.Errorf("%s: row %d: a lazy view's line is not Measured", name, p.Row)
		}
		l := line{off: p.Offset, length: p.Length, kept: kept(p)}
		if p.Header {
			l.header = append([]byte(nil), p.Line...)
		}
		measured = append(measured, l)
	})
	if err != nil || lazy == nil {
		t.Fatalf("%s: lazy: %v (view %v)", name, err, lazy)
	}
	defer lazy.Close()
	eager, err := formats.Open(f, func(p *formats.Produced) {
		if p.Measured || p.Length != len(p.Line) {
			t.Errorf("%s: row %d: a written line is Measured %v, length %d of %d", name, p.Row, p.Measured, p.Length, len(p.Line))
		}
		written = append(written, line{off: p.Offset, length: len(p.Line), kept: kept(p)})
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer eager.Close()
	var view bytes.Buffer
	if _, err := eager.WriteTo(&view); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(view.Bytes(), []byte{'\n'})
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if len(measured) != len(lines) || len(written) != len(lines) {
		t.Fatalf("%s: %d lines measured, %d handed by Open, the view has %d", name, len(measured), len(written), len(lines))
	}
	if lazy.Size() != int64(view.Len()) {
		t.Errorf("%s: lazy view measured %d bytes, the view is %d", name, lazy.Size(), view.Len())
	}
	var off int64
	for i, l := range lines {
		text := l[:len(l)-1]
		m := measured[i]
		if m.off != off || m.length != len(text) {
			t.Fatalf("%s: line %d: measured at %d, %d bytes; written at %d, %d bytes: %s", name, i+1, m.off, m.length, off, len(text), text)
		}
		if m.header != nil && !bytes.Equal(m.header, text) {
			t.Fatalf("%s: header measured as %s, written %s", name, m.header, text)
		}
		if got, want := strings.Join(m.kept, "\x00"), strings.Join(written[i].kept, "\x00"); got != want {
			t.Fatalf("%s: line %d: the lazy view kept %q, the line holds %q", name, i+1, got, want)
		}
		for _, k := range m.kept {
			if !bytes.Contains(text, []byte(k)) {
				t.Fatalf("%s: line %d: kept %s is not in the line %s", name, i+1, k, text)
			}
		}
		off += int64(len(l))
	}
	// The view written on the first read is the one Open writes.
	var got bytes.Buffer
	if _, err := lazy.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), view.Bytes()) {
		t.Fatalf("%s: the lazy view, read, differs from Open's", name)
	}
}
