package sessiongen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

type variant struct {
	name string
	o    Options
}

func variants() []variant {
	vs := []variant{
		{"default", Options{}},
		{"v1-everything", Options{Seed: 2, Version: 1, Turns: 30, Thinking: true, Compactions: 2, BashExecutions: 2,
			ThinkingLevelChanges: 2, ModelChanges: 1, AbortedAssistants: 1, ErrorAssistants: 1, GarbageLines: 2, GluedLines: 1,
			Facts: 7, CustomMessages: 1, UserImages: 1, ToolImages: 1, TruncatedTail: true}},
		{"v2-branch-compaction", Options{Seed: 3, Version: 2, Turns: 16, Compactions: 1, Branches: 1, CustomEntries: 1}},
		{"v3-kitchen-sink", Options{Seed: 7, Turns: 40, Thinking: true, CJKShare: 0.2, UserImages: 2, ToolImages: 2,
			BashExecutions: 3, CustomMessages: 2, CustomEntries: 2, ModelChanges: 3, ThinkingLevelChanges: 2, Branches: 2,
			Compactions: 3, AbortedAssistants: 2, ErrorAssistants: 1, ToolErrors: 2, TrailingToolCall: true, GarbageLines: 2,
			GluedLines: 1, TruncatedTail: true, Facts: 7, HugeToolResults: 1, HugeToolResultBytes: 300 << 10, SessionName: "kitchen sink"}},
		{"openai-start", Options{Seed: 5, Turns: 12, Provider: "openai", Model: "gpt-5.1-codex", Compactions: 1, KeepTurns: 3}},
		{"tool-dense", Options{Seed: 6, Turns: 6, MinToolCallsPerTurn: 20, ToolCallsPerTurn: 30, ParallelToolCalls: 5}},
		{"huge-results", Options{Seed: 8, Turns: 5, HugeToolResults: 2, HugeToolResultBytes: 2 << 20}},
		{"compaction-after-branch", Options{Seed: 9, Turns: 24, Branches: 3, Compactions: 2, KeepTurns: 1}},
	}
	for _, p := range Presets() {
		if p.File != "" {
			vs = append(vs, variant{"preset-" + p.Name, p.Options})
		}
	}
	return vs
}

// TestGeneratedSessionsMatchPi writes every variant and checks, with node,
// that each line is canonical JSON.stringify output and that pi's own
// loader sees exactly what Result predicts.
func TestGeneratedSessionsMatchPi(t *testing.T) {
	dir := t.TempDir()
	vs := variants()
	results := map[string]*Result{}
	var files []string
	for _, v := range vs {
		f := filepath.Join(dir, v.name+".jsonl")
		res, err := GenerateFile(f, v.o)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		results[f] = res
		files = append(files, f)
	}
	canon := canonCheck(t, files...)
	pi := piCheck(t, files...)
	for i, f := range files {
		v, res := vs[i], results[f]
		t.Run(v.name, func(t *testing.T) {
			c := canon[f]
			if len(c.Bad) > 0 {
				t.Errorf("lines not canonical JSON.stringify output: %v", c.Bad)
			}
			if !sameInts(c.Malformed, res.MalformedLines) {
				t.Errorf("node cannot parse lines %v, planted %v", c.Malformed, res.MalformedLines)
			}
			if c.EndsNL == v.o.TruncatedTail || c.Lines != res.LineCount {
				t.Errorf("endsNL %v lines %d; Result lines %d", c.EndsNL, c.Lines, res.LineCount)
			}
			p := pi[f]
			if !p.Loads {
				t.Fatalf("pi does not load it: %s", p.Error)
			}
			rc := res.Context
			type pair struct {
				what      string
				pi, ours  any
				mustEqual bool
			}
			checks := []pair{
				{"lines", p.Lines, res.LineCount, true},
				{"entries", p.Entries, res.Entries, true},
				{"brokenParents", p.BrokenParents, 0, true},
				{"pathEntries", p.PathEntries, rc.PathEntries, true},
				{"contextMessages", p.ContextMessages, rc.Messages, true},
				{"heuristicTokens", p.HeuristicTokens, rc.HeuristicTokens, true},
				{"usageTokens", p.UsageTokens, rc.UsageTokens, true},
				{"firstRole", p.FirstRole, rc.FirstRole, true},
				{"lastRole", p.LastRole, rc.LastRole, true},
				{"orphanToolResults", p.OrphanToolResults, 0, true},
				{"orphanToolCalls", p.OrphanToolCalls, rc.OrphanToolCalls, true},
				{"thinkingLevel", p.ThinkingLevel, rc.ThinkingLevel, true},
				{"compactionsInFile", p.CompactionsInFile, res.Compactions, true},
				{"version", p.Version, max(v.o.Version, 1) + boolInt(v.o.Version == 0)*2, true},
			}
			if res.Version > 1 {
				checks = append(checks, pair{"leafId", p.LeafID, res.LeafID, true})
				if p.LastCompaction != nil {
					checks = append(checks, pair{"lastCompaction", p.LastCompaction.ID, rc.CompactionID, true})
				}
			}
			for _, ch := range checks {
				if fmt.Sprint(ch.pi) != fmt.Sprint(ch.ours) {
					t.Errorf("%s: pi %v, sessiongen %v", ch.what, ch.pi, ch.ours)
				}
			}
			if !sameInts(p.MalformedLines, res.MalformedLines) {
				t.Errorf("malformedLines: pi %v, planted %v", p.MalformedLines, res.MalformedLines)
			}
			if !reflect.DeepEqual(p.Roles, rc.Roles) {
				t.Errorf("roles: pi %v, sessiongen %v", p.Roles, rc.Roles)
			}
			if p.Model == nil || p.Model.ModelID != rc.Model || p.Model.Provider != rc.Provider {
				t.Errorf("model: pi %+v, sessiongen %s/%s", p.Model, rc.Provider, rc.Model)
			}
			if len(p.Messages) != len(rc.Lines) {
				t.Fatalf("per-message: pi %d, sessiongen %d", len(p.Messages), len(rc.Lines))
			}
			for k, m := range p.Messages {
				if m.Line != rc.Lines[k] || (res.Version > 1 && m.EntryID != rc.Entries[k]) {
					t.Fatalf("context message %d: pi %+v, sessiongen line %d id %s", k, m, rc.Lines[k], rc.Entries[k])
				}
			}
			// The usage written on the last assistant is the ground truth of
			// the context pi rebuilds (after compactions and branches too).
			if rc.LastRole == "assistant" && lastTrusted(t, f, rc.Lines[len(rc.Lines)-1]) && p.UsageTokens != rc.TrueTokens {
				t.Errorf("usage of the last assistant %d != ground truth %d", p.UsageTokens, rc.TrueTokens)
			}
			checkLines(t, f, res)
			checkFacts(t, f, res, v.o)
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func readLines(t *testing.T, f string) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(string(testkit.ReadFile(t, f)), "\n"), "\n")
}

func lastTrusted(t *testing.T, f string, line int) bool {
	l := readLines(t, f)[line-1]
	return !strings.Contains(l, `"stopReason":"aborted"`) && !strings.Contains(l, `"stopReason":"error"`)
}

// checkLines verifies Result.Lines against the file bytes.
func checkLines(t *testing.T, f string, res *Result) {
	t.Helper()
	data := testkit.ReadFile(t, f)
	if int64(len(data)) != res.Bytes || len(res.Lines) != res.LineCount {
		t.Fatalf("bytes %d lines %d, Result %d / %d", len(data), len(res.Lines), res.Bytes, res.LineCount)
	}
	idx := 0
	for _, l := range res.Lines {
		raw := data[l.Offset : l.Offset+int64(l.Len)]
		if end := l.Offset + int64(l.Len); l.NoNewline != (end == int64(len(data))) || (!l.NoNewline && data[end] != '\n') {
			t.Fatalf("line %d: bad newline bookkeeping", l.N)
		}
		if l.Malformed {
			if json.Valid(raw) || l.Index != -1 {
				t.Fatalf("line %d marked malformed but parses", l.N)
			}
			continue
		}
		if l.Index != idx {
			t.Fatalf("line %d: loader index %d, want %d", l.N, l.Index, idx)
		}
		idx++
		var head struct{ Type, ID string }
		if err := json.Unmarshal(raw, &head); err != nil || head.Type != l.Type {
			t.Fatalf("line %d: type %q, Result %q (%v)", l.N, head.Type, l.Type, err)
		}
		if res.Version > 1 && l.Type != "session" && head.ID != l.ID {
			t.Fatalf("line %d: id %q, Result %q", l.N, head.ID, l.ID)
		}
	}
}

// checkFacts verifies each planted fact is on the line Result names.
func checkFacts(t *testing.T, f string, res *Result, o Options) {
	t.Helper()
	if len(res.Facts) != o.Facts {
		t.Errorf("planted %d facts, asked for %d", len(res.Facts), o.Facts)
	}
	lines := readLines(t, f)
	seen := map[string]bool{}
	for _, fact := range res.Facts {
		l := lines[fact.Line-1]
		if !strings.Contains(l, fact.Value) || !strings.Contains(fact.Text, fact.Value) {
			t.Errorf("fact %+v not on its line", fact)
		}
		if res.Version > 1 && !strings.Contains(l, `"id":"`+fact.EntryID+`"`) {
			t.Errorf("fact %s: line %d is not entry %s", fact.Kind, fact.Line, fact.EntryID)
		}
		if seen[fact.Value] {
			t.Errorf("fact value %q planted twice", fact.Value)
		}
		seen[fact.Value] = true
		n := 0
		for _, l := range lines {
			n += strings.Count(l, fact.Value)
		}
		if n != 1 {
			t.Errorf("fact %q occurs %d times in the file, want 1", fact.Value, n)
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	o := Options{Seed: 99, Turns: 15, Thinking: true, Compactions: 1, Branches: 1, Facts: 7, UserImages: 1, CJKShare: 0.3}
	var a, b, c bytes.Buffer
	if _, err := Generate(&a, o); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(&b, o); err != nil {
		t.Fatal(err)
	}
	o.Seed = 100
	if _, err := Generate(&c, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same options gave different bytes")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds gave the same bytes")
	}
}

func TestGenerateRequestedCounts(t *testing.T) {
	o := Options{Seed: 4, Turns: 40, BashExecutions: 3, CustomMessages: 2, CustomEntries: 2, ModelChanges: 2,
		ThinkingLevelChanges: 3, Branches: 2, Compactions: 2, AbortedAssistants: 2, ErrorAssistants: 1, GarbageLines: 2,
		GluedLines: 1, UserImages: 2, ToolImages: 3, ToolErrors: 2}
	res, err := Generate(io.Discard, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"custom_message": 2, "custom": 2, "model_change": 3, "thinking_level_change": 4,
		"branch_summary": 2, "compaction": 2}
	for typ, n := range want {
		if res.Types[typ] != n {
			t.Errorf("%s: %d entries, want %d", typ, res.Types[typ], n)
		}
	}
	if res.Roles["bashExecution"] != 3 || res.Images != 5 || len(res.MalformedLines) != 3 {
		t.Errorf("bash %d images %d malformed %v", res.Roles["bashExecution"], res.Images, res.MalformedLines)
	}
	if res.Roles["user"] != 40+2 { // 40 turns + one abandoned turn per branch
		t.Errorf("user messages %d", res.Roles["user"])
	}
}

// TestTargetBytesStreams checks the size mode used for benchmarks.
func TestTargetBytesStreams(t *testing.T) {
	var n countWriter
	res, err := Generate(&n, Options{Seed: 1, TargetBytes: 8 << 20, NoLineIndex: true, Compactions: 2, Facts: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes < 8<<20 || res.Bytes > 9<<20 || int64(n) != res.Bytes || res.Lines != nil || res.Compactions != 2 || len(res.Facts) != 7 {
		t.Fatalf("bytes %d written %d compactions %d facts %d", res.Bytes, n, res.Compactions, len(res.Facts))
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
