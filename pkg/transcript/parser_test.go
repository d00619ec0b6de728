package transcript

import (
	"testing"
	"unsafe"
)

// A parse worker's lines share the strings they repeat from the lines
// before (a parentId the previous id, a toolCallId an earlier tool call's
// id) and still read back exactly what they hold: a value with escapes is
// decoded, never taken for an earlier value with the same raw bytes.
func TestParserSharesRepeatedStrings(t *testing.T) {
	var p parser
	lines := []string{
		`{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"x","arguments":{}}]}}`,
		`{"type":"message","id":"t1","parentId":"a1","message":{"role":"toolResult","toolCallId":"call_1","content":"ok"}}`,
		`{"type":"message","id":"a\\\\b","parentId":"t1","message":{"role":"user","content":"x"}}`,
		`{"type":"message","id":"c","parentId":"a\\\\b","message":{"role":"user","content":"x"}}`,
		`{"type":"message","id":"d","parentId":"c","message":{"role":"toolResult","toolCallId":"call_\u0031","content":"ok"}}`,
	}
	var es []*Entry
	for _, l := range lines {
		pl := parseLineIn([]byte(l), &p)
		if pl.kind != kindEntry {
			t.Fatalf("%s: %s", l, pl.err)
		}
		es = append(es, pl.entry)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	if es[1].ParentID() != "a1" || !same(es[1].ParentID(), es[0].ID()) {
		t.Errorf("parentId %q does not share the previous id", es[1].ParentID())
	}
	if es[1].ToolCallID != "call_1" || !same(es[1].ToolCallID, es[0].ToolCallIDs[0]) {
		t.Errorf("toolCallId %q does not share the tool call's id", es[1].ToolCallID)
	}
	if es[2].ID() != `a\\b` || es[3].ParentID() != `a\\b` {
		t.Errorf("id %q, parentId %q: want a\\\\b both", es[2].ID(), es[3].ParentID())
	}
	if es[4].ToolCallID != "call_1" {
		t.Errorf("escaped toolCallId read as %q", es[4].ToolCallID)
	}
	// Raw bytes equal to an earlier decoded value, but with an escape.
	pl := parseLineIn([]byte(`{"type":"message","id":"e","parentId":"x\\y"}`), &parser{prevID: []string{`x\\y`}})
	if pl.entry.ParentID() != `x\y` {
		t.Errorf("parentId x\\\\y (escaped) read as %q", pl.entry.ParentID())
	}
}
