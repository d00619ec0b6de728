package transcript_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The session built from the values a Claude Code or Codex converter hands
// over with each line equals, field for field, the session the pi parser
// reads from the translated lines: on generated sessions of each format,
// on odd hand-written lines (escapes, invalid UTF-8, CJK, images, counts
// beyond 2^53) and on every real transcript in ../shared/fixtures/wild.
func TestProducedEqualsParsed(t *testing.T) {
	files := sessiongen.AgentCorpus(t, t.TempDir(), func(seed uint64) sessiongen.AgentOptions {
		o := sessiongen.AgentOptions{Seed: seed, Turns: 30, Thinking: seed != 2, Compactions: int(seed - 1), Fact: "the port is 8443"}
		if seed == 3 {
			o.TargetBytes = 3 << 20 // the view goes to the spool in several blocks
		}
		return o
	})
	if os.Getenv("CI") == "true" || dirExists(filepath.Join(oracle.ModuleRoot(), "..", "shared")) {
		files = append(files, oracle.WildAgentTranscripts(t)...)
	}
	for _, f := range files {
		direct := testkit.Load(t, f)
		parsed, err := transcript.LoadTranslated(f)
		if err != nil || parsed == nil {
			t.Fatalf("%s: translated: %v", f, err)
		}
		sameSession(t, filepath.Base(f), direct, parsed)
		lazy, err := transcript.LoadLazy(f)
		if err != nil {
			t.Fatalf("%s: lazy: %v", f, err)
		}
		sameSession(t, filepath.Base(f)+" (lazy)", lazy, parsed)
		sameBytes(t, filepath.Base(f)+" (lazy)", lazy, direct)
		direct.Close()
		parsed.Close()
		lazy.Close()
	}
}

// sameBytes checks that every entry of got reads the line want reads.
func sameBytes(t *testing.T, name string, got, want *transcript.Session) {
	t.Helper()
	for i, e := range got.Entries {
		g, err := got.Raw(e)
		if err != nil {
			t.Fatalf("%s: entry %d: %v", name, i, err)
		}
		w, err := want.Raw(want.Entries[i])
		if err != nil {
			t.Fatalf("%s: entry %d: %v", name, i, err)
		}
		if string(g) != string(w) {
			t.Fatalf("%s: entry %d reads\n%s\nwant\n%s", name, i, g, w)
		}
	}
}

// A lazily loaded transcript translates again the bytes it read: lines
// appended meanwhile do not move its entries, and a file rewritten
// meanwhile is an error, not other bytes.
func TestLazyViewReadsWhatWasLoaded(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, seed uint64) string {
		p := filepath.Join(dir, name)
		w, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := sessiongen.GenerateClaudeCode(w, sessiongen.AgentOptions{Seed: seed, Turns: 20}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, other := gen("cc.jsonl", 1), gen("other.jsonl", 2)
	want := testkit.Load(t, p)
	defer want.Close()
	lazy, err := transcript.LoadLazy(p)
	if err != nil {
		t.Fatal(err)
	}
	more := testkit.ReadFile(t, other)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(more)
	f.Close()
	sameBytes(t, "appended", lazy, want)
	lazy.Close()

	lazy, err = transcript.LoadLazy(p)
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	testkit.WriteFile(t, p, more, 0o644)
	if _, err := lazy.Raw(lazy.Entries[0]); err == nil || !strings.Contains(err.Error(), "changed while ctxtool read it") {
		t.Fatalf("rewritten file: %v, want an error saying it changed", err)
	}
}

func sameSession(t *testing.T, name string, got, want *transcript.Session) {
	t.Helper()
	if len(got.Entries) == 0 {
		t.Errorf("%s: no entries", name)
	}
	if len(got.Entries) != len(want.Entries) {
		t.Fatalf("%s: %d entries, parsed %d", name, len(got.Entries), len(want.Entries))
	}
	for i := range got.Entries {
		if !reflect.DeepEqual(*got.Entries[i], *want.Entries[i]) {
			t.Fatalf("%s: entry %d\n got %+v\nwant %+v", name, i, *got.Entries[i], *want.Entries[i])
		}
	}
	type whole struct {
		Size                    int64
		Header                  *transcript.Header
		Version, Lines          int
		EndsWithNewline         bool
		Malformed               []transcript.Malformed
		Warnings                []transcript.Warning
		NonObjects, Blank, Xtra []int
		Notes                   []string
	}
	of := func(s *transcript.Session) whole {
		return whole{s.Size, s.Header, s.Version, s.Lines, s.EndsWithNewline, s.Malformed, s.Warnings,
			s.NonObjects, s.Blank, s.ExtraHeaders, s.Notes()}
	}
	if g, w := of(got), of(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: session\n got %+v\nwant %+v", name, g, w)
	}
	if g, w := got.Context().HeuristicTokens(), want.Context().HeuristicTokens(); g != w {
		t.Errorf("%s: context %d tokens, parsed %d", name, g, w)
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
