package checkpoint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// classifyByMap is classify as it was written first: the arguments
// decoded whole into a map (every value copied) for the paths, and again
// for the command.
func classifyByMap(tc ToolCall) callArgs {
	var c callArgs
	name := strings.ToLower(tc.Name)
	var args map[string]json.RawMessage
	valid := json.Unmarshal(tc.Args, &args) == nil
	for _, w := range modifyTools {
		c.modify = c.modify || strings.Contains(name, w)
	}
	if raw, ok := args["command"]; ok && strings.Contains(name, "edit") {
		var cmd string
		if json.Unmarshal(raw, &cmd) == nil && (cmd == "view" || cmd == "read") {
			c.modify = false
		}
	}
	if !valid {
		return callArgs{modify: c.modify}
	}
	for _, k := range append(append([]string{}, pathKeys...), "paths") {
		raw, ok := args[k]
		if !ok {
			continue
		}
		var s string
		var ss []string
		if k != "paths" && json.Unmarshal(raw, &s) == nil {
			ss = []string{s}
		} else if k == "paths" && json.Unmarshal(raw, &ss) != nil {
			ss = nil
		}
		for _, p := range ss {
			if p = strings.TrimSpace(Clean(p)); p != "" && len(p) <= 500 && !strings.ContainsAny(p, "\n\t") {
				c.paths = append(c.paths, p)
			}
		}
	}
	return c
}

// classify reads only the keys it needs, skipping the rest without a
// copy; it finds what decoding the arguments whole finds, also for
// arguments read from a line (checked only for their depth).
func TestClassifySkipsValuesLikeJSONUnmarshal(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	args := []string{
		`{"path":"a.go","content":"x"}`,
		` { "content" : "} \" { [ \\\\" , "path" : "b.go" } `,
		`{"path":"a.go","path":"c.go"}`,
		`{"pa\u0074h":"esc.go","file_path":"\u0064.go"}`,
		`{"content":{"nested":["path",{"path":"no.go"}],"s":"\\\""},"filePath":"e.go"}`,
		`{"paths":["f.go","g.go"],"target_file":"h.go"}`,
		`{"paths":["f.go",1]}`,
		`{"path":null,"file":7,"filename":true,"notebook_path":"nb.ipynb"}`,
		`{"command":"view","path":"v.go"}`,
		`{"command":"create","path":"w.go"}`,
		`{"command":["view"],"path":"x.go"}`,
		`{"path":"  spaced.go  ","file":"multi\nline","filename":""}`,
		`{"path":"y.go","x":1e10,"y":-0.5,"z":false,"n":null}`,
		`{"path":"y.go",}`,
		`{"path":"z.go"`,
		`["path","a.go"]`,
		`"a.go"`,
		`null`,
		``,
		`{}`,
		`{"path":"deep.go","d":` + deep + `}`,
		`{"path":"ok.go","d":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"path":"edge.go","d":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"path":"bad\xffutf8.go"}`,
	}
	scanned := 0
	for _, a := range args {
		for _, name := range []string{"read", "str_replace_editor", "write_file", "Edit"} {
			calls := []ToolCall{{Name: name, Args: json.RawMessage(a)}}
			// The same arguments in a line the transcript reads (json.Valid
			// is then not asked again), when it accepts them.
			line := `{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"` + name + `","arguments":` + a + `}]}}`
			if e, m, ok := transcript.ParseEntry([]byte(line)); ok && e != nil {
				calls = append(calls, fromTranscript(e, m).ToolCalls...)
				scanned++
			}
			for _, tc := range calls {
				got, want := classify(tc), classifyByMap(tc)
				if len(got.paths) == 0 && len(want.paths) == 0 {
					got.paths, want.paths = nil, nil
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %.80q (scanned %v): got %+v, decoding whole %+v", name, a, tc.scanned, got, want)
				}
			}
		}
	}
	if scanned < 60 {
		t.Errorf("only %d calls read from a line", scanned)
	}
}

// The same on every tool call of generated sessions.
func TestClassifyOnGeneratedCalls(t *testing.T) {
	s := loaded(t, benchSession(t, 4<<20))
	calls := 0
	for _, e := range s.Entries {
		if len(e.ToolCallIDs) == 0 {
			continue
		}
		m, err := decodeMessage(s, e)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range m.ToolCalls {
			calls++
			got, want := classify(tc), classifyByMap(tc)
			if len(got.paths) == 0 && len(want.paths) == 0 {
				got.paths, want.paths = nil, nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: got %+v, decoding whole %+v", tc.Args, got, want)
			}
		}
	}
	if calls == 0 {
		t.Fatal("no tool calls")
	}
}
