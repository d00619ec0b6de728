package checkpoint

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// fullInput is fromContext without the slimming: every message as decoded.
func fullInput(t *testing.T, s *transcript.Session) Input {
	t.Helper()
	in, err := FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	in.Messages = nil
	for _, e := range s.Context().Path {
		if e.Type != "message" && e.Type != "custom_message" {
			continue
		}
		m, err := decodeMessage(s, e)
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			in.Messages = append(in.Messages, *m)
		}
	}
	return in
}

// The builder input drops tool outputs and old calls' file contents (a 1 GB
// session's checkpoint held them all: 2.7 GB RSS); the checkpoint built
// from it must be exactly the one built from every message in full.
func TestSlimInputBuildsTheSameCheckpoint(t *testing.T) {
	dir := t.TempDir()
	files := []string{}
	for i, o := range []sessiongen.Options{
		{Seed: 11, Turns: 40, ToolErrors: 6, Compactions: 2},
		{Seed: 12, Turns: 25, ToolErrors: 3},
	} {
		f := filepath.Join(dir, "gen"+string(rune('a'+i))+".jsonl")
		if _, err := sessiongen.GenerateFile(f, o); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	files = append(files, oracle.Fixtures(t)...)
	g, _ := filepath.Glob("../../testdata/*.jsonl")
	files = append(files, g...)
	now := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	slimmed := 0
	for _, f := range files {
		s, err := transcript.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		slim, err := FromSession(s)
		if err != nil {
			t.Fatal(err)
		}
		full := fullInput(t, s)
		s.Close()
		if len(slim.Messages) != len(full.Messages) {
			t.Fatalf("%s: %d messages slim, %d full", f, len(slim.Messages), len(full.Messages))
		}
		for i := range slim.Messages {
			a, b := slim.Messages[i], full.Messages[i]
			if a.EntryID != b.EntryID || a.Role != b.Role || a.ToolCallID != b.ToolCallID || a.ToolName != b.ToolName ||
				a.IsError != b.IsError || !a.Time.Equal(b.Time) || a.StopReason != b.StopReason || a.CustomType != b.CustomType {
				t.Fatalf("%s: message %d differs beyond its text:\nslim %+v\nfull %+v", f, i, a, b)
			}
			if len(slim.Messages[i].Text) < len(full.Messages[i].Text) {
				slimmed++
			}
			for j, tc := range slim.Messages[i].ToolCalls {
				if len(tc.Args) < len(full.Messages[i].ToolCalls[j].Args) {
					slimmed++
				}
			}
		}
		slim.Now, full.Now = now, now
		a, b := Build(slim), Build(full)
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.MarshalIndent(a, "", " ")
			jb, _ := json.MarshalIndent(b, "", " ")
			t.Errorf("%s: the checkpoint differs when built from the slim input:\nslim %s\nfull %s", f, ja, jb)
		}
	}
	if slimmed == 0 {
		t.Fatal("no message was slimmed: the test proves nothing")
	}
}

func TestSlimArgsKeepsPathKeys(t *testing.T) {
	m := Message{ToolCalls: []ToolCall{
		{Name: "write", Args: json.RawMessage(`{"path":"a.go","content":"` + strings.Repeat("x", 5000) + `"}`)},
		{Name: "str_replace_editor", Args: json.RawMessage(`{"command":"view","file_path":"b.go","old":"y"}`)},
		{Name: "bash", Args: json.RawMessage(`["not","an","object"]`)},
	}}
	slimArgs(&m)
	if got := string(m.ToolCalls[0].Args); got != `{"path":"a.go"}` {
		t.Errorf("write args: %s", got)
	}
	if got := string(m.ToolCalls[1].Args); got != `{"command":"view","file_path":"b.go"}` {
		t.Errorf("edit args: %s", got)
	}
	if got := string(m.ToolCalls[2].Args); got != `["not","an","object"]` {
		t.Errorf("non-object args changed: %s", got)
	}
	if !isModifyCall(m.ToolCalls[0]) || isModifyCall(m.ToolCalls[1]) {
		t.Error("modify classification changed by slimming")
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
	if _, err := sessiongen.GenerateFile(f, o); err != nil {
		tb.Fatal(err)
	}
	return f
}

// What the builder holds grows with what it reads (user and assistant
// text, the last call's arguments), not with the tool outputs and written
// files that make up most of a session: held in full they made a 1 GB
// checkpoint peak at 2.7 GB.
func TestBuilderInputHoldsLittleOfTheFile(t *testing.T) {
	f := benchSession(t, 8<<20)
	s, err := transcript.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := func(in Input) (n int) {
		for _, m := range in.Messages {
			n += len(m.Text)
			for _, tc := range m.ToolCalls {
				n += len(tc.Args)
			}
		}
		return n
	}
	slim, err := FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	h, full := held(slim), held(fullInput(t, s))
	t.Logf("file %d bytes; the builder holds %d bytes of text and arguments (%d unslimmed)", s.Size, h, full)
	if h*5 > int(s.Size) {
		t.Errorf("the builder input holds %d of the file's %d bytes (over 20%%)", h, s.Size)
	}
}

func BenchmarkCheckpointInput(b *testing.B) {
	f := benchSession(b, 8<<20)
	s, err := transcript.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.SetBytes(s.Size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := FromSession(s); err != nil {
			b.Fatal(err)
		}
	}
}

// FromSession reads a loaded session into a builder Input: the messages of
// the branch (root → leaf, including those before a compaction: the
// checkpoint is what survives it), the compactions' file lists, the split
// turn and the compaction count. Token fields are left to the caller.
func FromSession(s *transcript.Session) (Input, error) {
	return fromContext(s, s.Context())
}
