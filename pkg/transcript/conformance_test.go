package transcript_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// compareWithPi loads files with ctxtool and with pi's own loader and demands
// the same context, message by message: count, roles, lines, per-message
// heuristic tokens, the usage-anchored total, malformed lines, model and
// thinking level.
func compareWithPi(t *testing.T, files []string) {
	t.Helper()
	results := oracle.Check(t, true, false, files...)
	for i, f := range files {
		pi := results[i]
		name := filepath.Base(f)
		if !pi.Loads {
			t.Errorf("%s: pi does not load it: %s", name, pi.Error)
			continue
		}
		s, err := transcript.Load(f)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ctx := s.Context()
		if len(ctx.Messages) != pi.ContextMessages {
			t.Errorf("%s: %d context messages, pi %d", name, len(ctx.Messages), pi.ContextMessages)
		}
		if got := ctx.HeuristicTokens(); got != pi.HeuristicTokens {
			t.Errorf("%s: heuristic %d, pi %d", name, got, pi.HeuristicTokens)
		}
		if got := ctx.EstimateContextTokens().Tokens; got != pi.UsageTokens {
			t.Errorf("%s: usage estimate %d, pi %d", name, got, pi.UsageTokens)
		}
		var mal []int
		for _, m := range s.Malformed {
			mal = append(mal, m.Line)
		}
		if fmt.Sprint(mal) != fmt.Sprint(pi.MalformedLines) && !(len(mal) == 0 && len(pi.MalformedLines) == 0) {
			t.Errorf("%s: malformed %v, pi %v", name, mal, pi.MalformedLines)
		}
		if len(s.Entries) != pi.Entries {
			t.Errorf("%s: %d entries, pi %d", name, len(s.Entries), pi.Entries)
		}
		if ctx.ThinkingLevel != pi.ThinkingLevel {
			t.Errorf("%s: thinking level %q, pi %q", name, ctx.ThinkingLevel, pi.ThinkingLevel)
		}
		if (ctx.Model == nil) != (pi.Model == nil) || (ctx.Model != nil && (ctx.Model.ModelID != pi.Model.ModelID || ctx.Model.Provider != pi.Model.Provider)) {
			t.Errorf("%s: model %+v, pi %+v", name, ctx.Model, pi.Model)
		}
		if len(pi.Messages) == len(ctx.Messages) {
			for j, m := range ctx.Messages {
				pm := pi.Messages[j]
				if m.Role != pm.Role || m.Tokens() != pm.Tokens || (pm.Line != 0 && m.Entry.Line != pm.Line) {
					t.Errorf("%s: message %d: ctxtool line %d %s %d tokens, pi line %d %s %d", name, j,
						m.Entry.Line, m.Role, m.Tokens(), pm.Line, pm.Role, pm.Tokens)
					break
				}
			}
		}
		s.Close()
	}
}

func TestFixturesMatchPi(t *testing.T) {
	compareWithPi(t, oracle.Fixtures(t))
}

func TestSpecExamplesMatchPi(t *testing.T) {
	compareWithPi(t, []string{"testdata/spec-v3.jsonl", "testdata/spec-v1.jsonl"})
	s := testkit.Load(t, "testdata/spec-v3.jsonl")
	ctx := s.Context()
	if len(ctx.Messages) != 6 || ctx.HeuristicTokens() != 78 || s.Leaf().ID() != "a1f00012" {
		t.Fatalf("spec example: %d messages, %d tokens, leaf %s; want 6, 78, a1f00012", len(ctx.Messages), ctx.HeuristicTokens(), s.Leaf().ID())
	}
}

// edgeCases are hand-written sessions exercising what the fixtures lack.
var edgeCases = map[string]string{
	// Truncated last line (a crash mid-write), blank lines, CRLF line ends.
	"truncated.jsonl": `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello there","timestamp":1}}

{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"x","provider":"p","model":"m","usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12},"stopReason":"stop","timestamp":2}}` + "\r" + `
{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":[{"type":"text","text":"more"`,
	// Non-canonical JSON: spaces, escapes, numbers JS prints differently,
	// emoji, lone surrogates, nested arguments — pi counts the
	// JSON.stringify form of tool-call arguments.
	"noncanonical.jsonl": `{"type":"session","version":3,"id":"s2","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{ "type" : "message", "id":"00000001","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"\u00e9t\u00e9 😀 \ud83d\ude00 \ud800 tab\there \/ slash"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":1}}
{"message":{"content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},{"arguments":{ "path" : "a\/b.go", "n": 1.50, "big": 1e21, "small": 0.0000001, "neg": -0, "e": 1E3, "list": [ 1 , 2.0 , "x\u0001" , null, true ], "o": {}, "q": "\"q\"\\", "lone": "\udc00", "u": "\u2028" }, "id":"call_1","name":"edit","type":"toolCall"}],"role":"assistant","api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"toolUse","timestamp":2},"type":"message","id":"00000002","parentId":"00000001","timestamp":"t"}
{"type":"message","id":"00000003","parentId":"00000002","timestamp":"t","message":{"role":"toolResult","toolCallId":"call_1","toolName":"edit","content":[{"type":"text","text":"ok"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":false,"timestamp":3}}
{"type":"message","id":"00000004","parentId":"00000003","timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"legacy hook message","display":true,"timestamp":4}}
`,
	// v1 with blank and malformed lines before the compaction target: the
	// index counts parsed records only.
	"v1-shifted.jsonl": `{"type":"session","id":"s3","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"one"}],"timestamp":1}}

not json at all
{"type":"message","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"api":"a","provider":"p","model":"m","usage":{"input":5,"output":5,"cacheRead":0,"cacheWrite":0},"stopReason":"stop","timestamp":2}}
{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"three three"}],"timestamp":3}}
{"type":"compaction","timestamp":"t","summary":"sum","firstKeptEntryIndex":3,"tokensBefore":100}
{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"four"}],"timestamp":4}}
`,
	// Orphan parent, duplicate id, unknown entry type, later compaction
	// pointing at an id after it, a branch whose leaf is not the longest.
	"tree-oddities.jsonl": `{"type":"session","version":3,"id":"s4","timestamp":"t","cwd":"/x"}
{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"root msg","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"first b","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"second b wins","timestamp":1}}
{"type":"mystery","id":"c","parentId":"b","timestamp":"t","payload":{"x":1}}
{"type":"message","id":"d","parentId":"missing","timestamp":"t","message":{"role":"user","content":"orphan","timestamp":1}}
{"type":"compaction","id":"e","parentId":"c","timestamp":"t","summary":"keeps nothing","firstKeptEntryId":"z","tokensBefore":5}
{"type":"message","id":"z","parentId":"e","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"a b","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1,"excludeFromContext":true}}
{"type":"branch_summary","id":"f","parentId":"a","timestamp":"t","fromId":"a","summary":""}
{"type":"custom_message","customType":"k","content":[{"type":"text","text":"injected"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"display":false,"id":"g","parentId":"z","timestamp":"t"}
`,
	// The header is not the first line: a malformed line precedes it.
	"late-header.jsonl": `{"broken
{"type":"session","version":2,"id":"s5","timestamp":"t","cwd":"/x"}
{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}
`,
}

func writeEdgeCases(t *testing.T) []string {
	dir := t.TempDir()
	var files []string
	for name, content := range edgeCases {
		p := filepath.Join(dir, name)
		testkit.WriteFile(t, p, []byte(content), 0o644)
		files = append(files, p)
	}
	return files
}

func TestEdgeCasesMatchPi(t *testing.T) {
	compareWithPi(t, writeEdgeCases(t))
}

func TestTruncatedLastLineReported(t *testing.T) {
	s, err := transcript.LoadBytes("x.jsonl", []byte(edgeCases["truncated.jsonl"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Malformed) != 1 || s.Malformed[0].Line != 5 || !s.Malformed[0].Truncated {
		t.Fatalf("malformed = %+v, want line 5 truncated", s.Malformed)
	}
	if s.EndsWithNewline {
		t.Fatal("EndsWithNewline should be false")
	}
	if len(s.Blank) != 1 || s.Blank[0] != 3 {
		t.Fatalf("blank = %v, want [3]", s.Blank)
	}
}

func TestGluedLinesAreDescribed(t *testing.T) {
	files := oracle.Fixtures(t)
	for _, f := range files {
		if !strings.Contains(f, "705ba5d") {
			continue
		}
		s := testkit.Load(t, f)
		if len(s.Malformed) != 1 {
			t.Fatalf("malformed: %+v", s.Malformed)
		}
		m := s.Malformed[0]
		if m.Line != 1013 || m.Bytes != 7741 || !m.HidesCompaction() || strings.Join(m.Objects, ",") != "message/assistant,compaction" {
			t.Fatalf("glued line: %+v", m)
		}
	}
}

func TestInvalidHeader(t *testing.T) {
	_, err := transcript.LoadBytes("bad.jsonl", []byte(`{"type":"message","id":"a"}`+"\n"))
	var he *transcript.InvalidHeaderError
	if err == nil || !asHeaderErr(err, &he) || he.Line != 1 {
		t.Fatalf("err = %v, want InvalidHeaderError at line 1", err)
	}
	if !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Fatalf("error must name file and line: %v", err)
	}
	_, err = transcript.LoadBytes("empty.jsonl", nil)
	if err == nil {
		t.Fatal("empty file must be an error")
	}
}

func asHeaderErr(err error, target **transcript.InvalidHeaderError) bool {
	he, ok := err.(*transcript.InvalidHeaderError)
	if ok {
		*target = he
	}
	return ok
}

// Byte-exact preservation: loading never changes a file, and Raw returns each
// line's original bytes.
func TestRawReturnsOriginalBytes(t *testing.T) {
	for _, f := range oracle.Fixtures(t) {
		data, _ := os.ReadFile(f)
		s := testkit.Load(t, f)
		lines := strings.Split(string(data), "\n")
		for _, e := range s.Entries {
			raw, err := s.Raw(e)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != lines[e.Line-1] {
				t.Fatalf("%s:%d: Raw differs from the file", f, e.Line)
			}
		}
		s.Close()
		after, _ := os.ReadFile(f)
		if string(after) != string(data) {
			t.Fatalf("%s changed by loading", f)
		}
	}
}
