package transcript_test

import (
	"reflect"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// ParseRecord's one pass reads what ParseEntry's two do: the same verdict,
// type, id, timestamp and message, on generated sessions of every format
// recall reads (Claude Code and Codex lines translated to pi lines, as
// recall translates them) and on lines in odd shapes.
func TestParseRecordMatchesParseEntry(t *testing.T) {
	lines := append(oddRecordLines(), recalltest.EveryFormatLines(t)...)
	kinds := map[string]int{}
	for _, l := range lines {
		r, m, ok := transcript.ParseRecord(l)
		e, want, wantOK := transcript.ParseEntry(l)
		if ok != wantOK {
			t.Fatalf("ok %v, ParseEntry's %v: %s", ok, wantOK, l)
		}
		if e == nil {
			if r != (transcript.Record{}) || m != nil {
				t.Fatalf("record %+v, message %v where ParseEntry has none: %s", r, m, l)
			}
			continue
		}
		kinds[r.Type]++
		tm, tok := r.TimestampTime()
		wantTm, wantTok := e.TimestampTime()
		if r.Type != e.Type() || r.ID != e.ID() || tok != wantTok || !tm.Equal(wantTm) {
			t.Fatalf("record %+v (time %v %v), ParseEntry's type %q id %q time %v %v: %s",
				r, tm, tok, e.Type(), e.ID(), wantTm, wantTok, l)
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("message\n%+v\nParseEntry's\n%+v\nline %s", m, want, l)
		}
	}
	for _, k := range []string{"message", "compaction", "branch_summary", "custom_message"} {
		if kinds[k] == 0 {
			t.Errorf("no %s entry among the lines read: %v", k, kinds)
		}
	}
}

// oddRecordLines are lines in shapes generators do not write: fields out
// of the usual order, repeated, of other types, escaped; not objects,
// glued, blank.
func oddRecordLines() [][]byte {
	odd := []string{
		`{"message":{"role":"user","content":"before the type"},"type":"message","id":"a1"}`,
		`{"type":"compaction","summary":"s","type":"message","message":{"role":"user","content":"x"}}`,
		`{"type":"message","message":{"role":"user","content":"a"},"type":"compaction","summary":"b"}`,
		`{"type":"message","message":{"role":"user","content":"one"},"message":{"role":"assistant","content":"two"}}`,
		`{"summary":"early","type":"branch_summary","id":"b1","timestamp":"2026-04-09T15:01:10.855Z"}`,
		`{"content":[{"type":"text","text":"c"}],"type":"custom_message","customType":"note"}`,
		`{"type":"custom_message","customType":"note","content":"plain","display":true}`,
		`{"type":"session","version":3,"id":"s","timestamp":"2026-04-09T15:01:10.855Z","cwd":"/x"}`,
		`{"type":"mess\u0061ge","id":"a\"b\\c","timestamp":"2026-04-09T15:01:10.855Z","message":{"role":"hookMessage","content":[{"type":"text","text":"t"}]}}`,
		`{"type":"message","id":7,"timestamp":"2026-04-09T15:01:10Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a\nb","n":1e3,"ok":true,"x":null,"l":[1,{"k":"v"}]}}]}}`,
		`{"type":"message","timestamp":"1970-01-01T00:00:00.000Z","message":{"role":"user","content":"epoch"}}`,
		`{"type":"message","timestamp":"2026-02-30T25:61:10.855Z","message":{"role":"user","content":"bad time"}}`,
		`{"type":"message","timestamp":1712675000000,"message":{"role":"user","content":"number","timestamp":1712675000}}`,
		`{"type":"message","timestamp":"x","timestamp":"2026-04-09T15:01:10.855Z","message":{"role":"user","content":"two"}}`,
		`{"type":null,"message":{"role":"user","content":"no type"}}`,
		`{"type":"message","message":"not an object"}`,
		`{"type":"compaction","summary":{"not":"a string"},"details":{"readFiles":["a"]}}`,
		"{\"type\":\"mess\xffage\",\"message\":{\"role\":\"user\",\"content\":\"bad utf-8\"}}",
		`{"type":"message","message":{"role":"user","content":"a"}}{"type":"message","message":{"role":"user","content":"b"}}`,
		`{"type":"message","message":{"role":"user","content":"trailing"}} x`,
		`{"type":"message","message":{"role":"user","content":"cut`,
		`[{"type":"message"}]`, `"text"`, `42`, `<html>`, ``, `   `, "\ufeff", " \u00a0{\"type\":\"message\"}",
		` {"type":"label","id":"l1","targetId":"a1","label":"x"} `,
	}
	out := make([][]byte, len(odd))
	for i, s := range odd {
		out[i] = []byte(s)
	}
	return out
}
