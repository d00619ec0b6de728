package claudecode_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// The Claude Code converter keeps a canonical uuid as its 16 bytes in a
// hash table (found among the last few first), and any other spelling as
// text: a file whose uuids are spelled otherwise — upper case, escaped,
// not UUIDs at all, the nil UUID (whose key is all zeros) — converts to
// the same pi lines, those ids spelled as the file spells them. The
// files: generated ones, with parents far back (probes past the recent
// uuids), with every uuid written twice (a line read again: the table
// finds it), and each wild Claude Code transcript.
func TestClaudeCodeIDsAsSpelled(t *testing.T) {
	var srcs [][]byte
	for seed := uint64(1); seed <= 2; seed++ {
		var b bytes.Buffer
		o := sessiongen.AgentOptions{Seed: seed, Turns: 40, Thinking: true, Compactions: int(seed), ParallelToolCalls: 4, ToolCallsPerTurn: 8}
		if _, err := sessiongen.GenerateClaudeCode(&b, o); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, b.Bytes())
	}
	srcs = append(srcs, farParents(srcs[0]), append(bytes.Clone(srcs[1]), srcs[1][:len(srcs[1])/2]...))
	sameUnderRespelling(t, srcs)
	t.Run("wild", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(oracle.WildDir(t), "claude-code", "*.jsonl"))
		if len(files) == 0 {
			t.Fatal("no wild Claude Code transcripts")
		}
		var srcs [][]byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, b)
		}
		sameUnderRespelling(t, srcs)
	})
}

func sameUnderRespelling(t *testing.T, srcs [][]byte) {
	t.Helper()
	dir := t.TempDir()
	for i, src := range srcs {
		respelled, written := respellUUIDs(src)
		if len(written) < 4 {
			t.Fatalf("file %d: %d uuids respelled", i, len(written))
		}
		want := convertCC(t, filepath.Join(dir, "a.jsonl"), src)
		for u, w := range written {
			want = strings.ReplaceAll(want, u, w)
		}
		if got := convertCC(t, filepath.Join(dir, "b.jsonl"), respelled); got != want {
			gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
			for j := range min(len(gl), len(wl)) {
				if gl[j] != wl[j] {
					t.Fatalf("file %d, pi line %d:\n%s\nwant\n%s", i, j+1, gl[j], wl[j])
				}
			}
			t.Fatalf("file %d: %d pi lines, want %d", i, len(gl), len(wl))
		}
	}
}

var uuidField = regexp.MustCompile(`"(uuid|parentUuid)":"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"`)

// respellUUIDs spells some of the uuids of src otherwise, the same way
// wherever they appear; written maps each respelled uuid to the text a
// reader of the line decodes.
func respellUUIDs(src []byte) (out []byte, written map[string]string) {
	spelled, written := map[string]string{}, map[string]string{}
	n := 0
	out = uuidField.ReplaceAllFunc(src, func(m []byte) []byte {
		sub := uuidField.FindSubmatch(m)
		u := string(sub[2])
		s, ok := spelled[u]
		if !ok {
			switch {
			case n == 3:
				s, written[u] = "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000"
			case n%5 == 1:
				s, written[u] = strings.ToUpper(u), strings.ToUpper(u)
			case n%5 == 2:
				s = strings.Replace(u, "-", `\u002d`, 1) // the same uuid, escaped
			case n%5 == 3:
				s, written[u] = "x-"+u, "x-"+u
			case n%5 == 4:
				s, written[u] = u[:35], u[:35] // not a UUID
			default:
				s = u
			}
			spelled[u] = s
			n++
		}
		return []byte(`"` + string(sub[1]) + `":"` + s + `"`)
	})
	return out, written
}

// farParents points every fifth line's parent at a uuid well before it.
func farParents(src []byte) []byte {
	var uuids []string
	lines := bytes.Split(src, []byte("\n"))
	for i, l := range lines {
		for _, m := range uuidField.FindAllSubmatch(l, -1) {
			if string(m[1]) == "parentUuid" && i%5 == 2 && len(uuids) > 40 {
				lines[i] = bytes.Replace(l, m[2], []byte(uuids[(i*7919)%(len(uuids)-20)]), 1)
			}
		}
		for _, m := range uuidField.FindAllSubmatch(l, -1) {
			if string(m[1]) == "uuid" {
				uuids = append(uuids, string(m[2]))
			}
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

func convertCC(t *testing.T, path string, src []byte) string {
	t.Helper()
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := formats.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.Format != formats.ClaudeCode {
		t.Fatalf("read as %s", v.Format)
	}
	var b strings.Builder
	if _, err := v.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var tsField = regexp.MustCompile(`"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z"`)

// A line's timestamp is taken as written when it is in pi's form already
// (the string made only for lines whose entries use it) and normalised
// otherwise: the same instants spelled otherwise — escaped, with a +00:00
// offset, with microseconds — convert to the same pi lines.
func TestClaudeCodeTimestampsAsSpelled(t *testing.T) {
	var b bytes.Buffer
	o := sessiongen.AgentOptions{Seed: 3, Turns: 30, Thinking: true, Compactions: 1, ParallelToolCalls: 3}
	if _, err := sessiongen.GenerateClaudeCode(&b, o); err != nil {
		t.Fatal(err)
	}
	n := 0
	respelled := tsField.ReplaceAllFunc(b.Bytes(), func(m []byte) []byte {
		ts := string(tsField.FindSubmatch(m)[1])
		n++
		switch n % 4 {
		case 1:
			ts = `\u0032` + ts[1:] + "Z"
		case 2:
			ts += "+00:00"
		case 3:
			ts += "000Z"
		default:
			ts += "Z"
		}
		return []byte(`"timestamp":"` + ts + `"`)
	})
	if n < 100 {
		t.Fatalf("%d timestamps respelled", n)
	}
	dir := t.TempDir()
	want := convertCC(t, filepath.Join(dir, "a.jsonl"), b.Bytes())
	if got := convertCC(t, filepath.Join(dir, "b.jsonl"), respelled); got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for j := range min(len(gl), len(wl)) {
			if gl[j] != wl[j] {
				t.Fatalf("pi line %d:\n%s\nwant\n%s", j+1, gl[j], wl[j])
			}
		}
		t.Fatalf("%d pi lines, want %d", len(gl), len(wl))
	}
}
