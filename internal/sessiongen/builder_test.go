package sessiongen

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBuilderReproducesFormatExample131 rebuilds the format reference's v3
// example (every entry type, one abandoned branch; vendored as
// testdata/format-13-1.jsonl) byte for byte with the Builder.
func TestBuilderReproducesFormatExample131(t *testing.T) {
	want := testkit.ReadFile(t, "testdata/format-13-1.jsonl")
	var buf bytes.Buffer
	b := NewBuilder(&buf, Config{
		SessionID: "0b6f3c1e-5a47-4d0e-9c1a-2f8e7d6c5b4a",
		Start:     ts(t, "2026-03-02T09:00:00.000Z"),
		Cwd:       "/home/dev/shop",
	})
	at := func(id, s string) Meta { return Meta{ID: id, Time: ts(t, s)} }
	b.ModelChange(ModelChange{Meta: at("a1f00001", "2026-03-02T09:00:01.000Z"), Provider: "anthropic", ModelID: "claude-sonnet-4-5"})
	b.ThinkingLevelChange(ThinkingLevelChange{Meta: at("a1f00002", "2026-03-02T09:00:01.010Z"), ThinkingLevel: "low"})
	b.User(User{Meta: at("a1f00003", "2026-03-02T09:00:05.120Z"), Timestamp: 1772442005110, Blocks: []Block{
		Text("Add a --dry-run flag to the importer. Screenshot of the bug:"),
		{Type: "image", Data: "iVBORw0KGgo=", MimeType: "image/png"},
	}})
	b.Assistant(Assistant{Meta: at("a1f00004", "2026-03-02T09:00:09.400Z"), Timestamp: 1772442005130,
		Content: []Block{Thinking("Look at the flag parsing first.", "sig-opaque-1"), ToolCall("toolu_01", "read", Obj{{"path", "cmd/import.go"}})},
		Usage: &Usage{Input: 3, Output: 61, CacheWrite: 4210, TotalTokens: 4274,
			Cost: &Cost{Input: 0.000009, Output: 0.000915, CacheWrite: 0.0157875, Total: 0.0167115}},
	})
	b.ToolResult(ToolResult{Meta: at("a1f00005", "2026-03-02T09:00:09.450Z"), Timestamp: 1772442009445,
		ToolCallID: "toolu_01", ToolName: "read", Content: []Block{Text("package main\n\nfunc main() { run(os.Args[1:]) }\n")}})
	b.Assistant(Assistant{Meta: at("a1f00006", "2026-03-02T09:00:14.000Z"), Timestamp: 1772442009460,
		Content: []Block{ToolCall("toolu_02", "edit", Obj{{"path", "cmd/import.go"}, {"oldText", "run(os.Args[1:])"}, {"newText", "run(os.Args[1:], dryRun)"}})},
		Usage: &Usage{Input: 1, Output: 48, CacheRead: 4210, CacheWrite: 120, TotalTokens: 4379,
			Cost: &Cost{Input: 0.000003, Output: 0.00072, CacheRead: 0.001263, CacheWrite: 0.00045, Total: 0.002436}},
	})
	b.ToolResult(ToolResult{Meta: at("a1f00007", "2026-03-02T09:00:14.030Z"), Timestamp: 1772442014025,
		ToolCallID: "toolu_02", ToolName: "edit", Content: []Block{Text("Edited cmd/import.go")},
		Details: Obj{{"diff", "-run(os.Args[1:])\n+run(os.Args[1:], dryRun)"}}})
	b.BashExecution(BashExecution{Meta: at("a1f00008", "2026-03-02T09:01:02.000Z"), Timestamp: 1772442061500,
		Command: "go test ./...", Output: "ok  \tshop/cmd\t0.41s", ExitCode: Int(0)})
	b.CustomMessage(CustomMessage{Meta: at("a1f00009", "2026-03-02T09:01:03.000Z"), CustomBody: CustomBody{CustomType: "lint-bot",
		Text: "gofmt: 1 file needs formatting (cmd/import.go)", Display: true}})
	b.Custom(Custom{Meta: at("a1f0000a", "2026-03-02T09:01:03.010Z"), CustomType: "model-snapshot",
		Data: Obj{{"provider", "anthropic"}, {"modelId", "claude-sonnet-4-5"}}})
	b.CustomRole(CustomRole{Meta: at("a1f0000b", "2026-03-02T09:01:20.000Z"), Timestamp: 1772442080000,
		CustomBody: CustomBody{CustomType: "reminder", Text: "Remember to update CHANGELOG.md"}})
	comp := b.Compaction(Compaction{Meta: at("a1f0000c", "2026-03-02T10:30:00.000Z"),
		Summary:          "## Goal\nAdd --dry-run to the importer.\n\n<read-files>\ncmd/import.go\n</read-files>",
		FirstKeptEntryID: "a1f00008", TokensBefore: 171950,
		Details: Obj{{"readFiles", []string{}}, {"modifiedFiles", []string{"cmd/import.go"}}}})
	b.User(User{Meta: at("a1f0000d", "2026-03-02T10:31:00.000Z"), Timestamp: 1772447460000, Blocks: []Block{Text("Also log skipped rows")}})
	b.Assistant(Assistant{Meta: at("a1f0000e", "2026-03-02T10:31:04.000Z"), Timestamp: 1772447460010,
		Content: []Block{Text("Logging would need a new interface.")},
		Usage: &Usage{Input: 2, Output: 12, CacheWrite: 1900, TotalTokens: 1914,
			Cost: &Cost{Input: 0.000006, Output: 0.00018, CacheWrite: 0.007125, Total: 0.007311}}})
	b.Branch(comp)
	b.BranchSummary(BranchSummary{Meta: at("a1f0000f", "2026-03-02T10:35:00.000Z"),
		Summary: "Explored logging skipped rows; it needs a new Logger interface. Not started.",
		Details: Obj{{"readFiles", []string{}}, {"modifiedFiles", []string{}}}})
	b.User(User{Meta: at("a1f00010", "2026-03-02T10:35:10.000Z"), Timestamp: 1772447710000, Text: "Skip the logging. Write the CHANGELOG entry."})
	b.Label(Label{Meta: at("a1f00011", "2026-03-02T10:35:11.000Z"), TargetID: "a1f00003", Label: "original-request"})
	b.SessionInfo(SessionInfo{Meta: at("a1f00012", "2026-03-02T10:35:12.000Z"), Name: "importer --dry-run"})
	res, err := b.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("got %d lines, want %d", len(gl), len(wl))
	}
	// What the document says a correct reader reports.
	c := res.Context
	if res.LineCount != 19 || res.Entries != 18 || len(res.MalformedLines) != 0 || res.LeafID != "a1f00012" ||
		c.Messages != 6 || c.HeuristicTokens != 78 || c.UsageTokens != 78 || c.ThinkingLevel != "low" ||
		c.Model != "claude-sonnet-4-5" || c.PathEntries != 16 || c.FirstRole != "compactionSummary" || c.LastRole != "user" {
		t.Fatalf("result %+v\ncontext %+v", res, c)
	}
	wantIDs := []string{"a1f0000c", "a1f00008", "a1f00009", "a1f0000b", "a1f0000f", "a1f00010"}
	if strings.Join(c.Entries, ",") != strings.Join(wantIDs, ",") {
		t.Fatalf("context entries %v, want %v", c.Entries, wantIDs)
	}
}

// TestBuilderReproducesFormatExample132 rebuilds the format reference's v1
// example (testdata/format-13-2.jsonl).
func TestBuilderReproducesFormatExample132(t *testing.T) {
	want := testkit.ReadFile(t, "testdata/format-13-2.jsonl")
	var buf bytes.Buffer
	b := NewBuilder(&buf, Config{Version: 1,
		SessionID: "5d1c9a2e-77b0-4c4e-a0d3-3e1f2a9b8c70", Start: ts(t, "2025-12-01T08:00:00.000Z"),
		Cwd: "/home/dev/shop", Provider: "anthropic", Model: "claude-opus-4-5", ThinkingLevel: "off"})
	b.User(User{Meta: Meta{Time: ts(t, "2025-12-01T08:00:03.000Z")}, Timestamp: 1764576002990, Blocks: []Block{Text("Rename Importer to Loader")}})
	b.Assistant(Assistant{Meta: Meta{Time: ts(t, "2025-12-01T08:00:07.000Z")}, Timestamp: 1764576003000,
		Content: []Block{Text("Renamed in 4 files.")},
		Usage: &Usage{Input: 10, Output: 9, CacheWrite: 5200, TotalTokens: 5219,
			Cost: &Cost{Input: 0.00005, Output: 0.000225, CacheWrite: 0.0325, Total: 0.032775}}})
	b.ThinkingLevelChange(ThinkingLevelChange{Meta: Meta{Time: ts(t, "2025-12-01T08:05:00.000Z")}, ThinkingLevel: "high"})
	kept := b.User(User{Meta: Meta{Time: ts(t, "2025-12-01T08:05:02.000Z")}, Timestamp: 1764576301990, Blocks: []Block{Text("Now update the docs")}})
	b.Compaction(Compaction{Meta: Meta{Time: ts(t, "2025-12-01T09:00:00.000Z")},
		Summary: "# Context Checkpoint\nRenamed Importer to Loader.", FirstKeptEntryID: kept, TokensBefore: 168000})
	res, err := b.Close()
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	if c := res.Context; c.Messages != 2 || c.HeuristicTokens != 17 || c.ThinkingLevel != "high" {
		t.Fatalf("context %+v", c)
	}
}

// TestBuilderEdgeCasesMatchPi handcrafts malformed and odd files with the
// Builder and checks pi's loader agrees with Result.
func TestBuilderEdgeCasesMatchPi(t *testing.T) {
	dir := t.TempDir()
	type tc struct {
		name   string
		cfg    Config
		build  func(b *Builder)
		broken int
	}
	cases := []tc{
		{"broken-parent", Config{Seed: 1}, func(b *Builder) {
			b.UserText("first")
			b.AssistantText("one")
			b.User(User{Meta: Meta{ParentID: "deadbeef"}, Text: "orphan root"})
			b.AssistantText("two")
		}, 1},
		{"torn-middle-and-hidden-compaction", Config{Seed: 2}, func(b *Builder) {
			u := b.UserText("start")
			call := b.ToolCallID()
			b.Assistant(Assistant{Content: []Block{ToolCall(call, "read", Obj{{"path", "a.go"}})}})
			b.Torn(&ToolResult{ToolCallID: call, ToolName: "read", Content: []Block{Text("package a")}}, 40, true)
			b.ToolResultText(call, "read", "package a\n")
			b.Glued(&Compaction{Summary: "hidden", FirstKeptEntryID: u}, &User{Text: "lost"})
			b.Garbage("not json at all")
			b.AssistantText("done")
		}, 0},
		{"v1-index-after-malformed", Config{Seed: 3, Version: 1}, func(b *Builder) {
			b.UserText("a")
			b.AssistantText("b")
			b.Garbage("{\"type\":\"message\"")
			kept := b.UserText("c")
			b.AssistantText("d")
			b.Compaction(Compaction{Summary: "sum", FirstKeptEntryID: kept})
			b.UserText("e")
		}, 0},
		{"v1-index-zero", Config{Seed: 4, Version: 1}, func(b *Builder) {
			b.UserText("a")
			b.AssistantText("b")
			b.Compaction(Compaction{Summary: "points at the header"})
		}, 0},
		{"reset-leaf-new-root", Config{Seed: 5}, func(b *Builder) {
			b.UserText("a")
			b.AssistantText("b")
			b.Branch("")
			b.UserText("new root")
			b.Custom(Custom{CustomType: "x"})
			b.Label(Label{TargetID: b.Leaf()})
		}, 0},
	}
	var files []string
	results := map[string]*Result{}
	for _, c := range cases {
		f := dir + "/" + c.name + ".jsonl"
		fh, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		b := NewBuilder(fh, c.cfg)
		c.build(b)
		res, err := b.Close()
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		files = append(files, f)
		results[f] = res
	}
	pi := piCheck(t, files...)
	for i, f := range files {
		p, r := pi[f], results[f]
		if !p.Loads || p.ContextMessages != r.Context.Messages || p.HeuristicTokens != r.Context.HeuristicTokens ||
			p.UsageTokens != r.Context.UsageTokens || p.Entries != r.Entries || p.PathEntries != r.Context.PathEntries ||
			!sameInts(p.MalformedLines, r.MalformedLines) || p.BrokenParents != cases[i].broken {
			t.Errorf("%s: pi %+v\nResult %+v", cases[i].name, p, r.Context)
		}
	}
}

func TestBuilderRejectsBadInput(t *testing.T) {
	for name, build := range map[string]func(b *Builder){
		"duplicate id":     func(b *Builder) { b.User(User{Meta: Meta{ID: "a"}}); b.User(User{Meta: Meta{ID: "a"}}) },
		"unknown branch":   func(b *Builder) { b.Branch("nope") },
		"v1 branch":        func(b *Builder) { b.cfg.Version = 1; b.version = 1; b.Branch("x") },
		"garbage is json":  func(b *Builder) { b.Garbage(`{"a":1}`) },
		"append after end": func(b *Builder) { b.Torn(&User{Text: "x"}, 5, false); b.UserText("more") },
		"image in assistant": func(b *Builder) {
			b.Assistant(Assistant{Content: []Block{ImageBlock(MakePNG(2, 2, 0))}})
		},
		"bad value": func(b *Builder) { b.Custom(Custom{CustomType: "x", Data: struct{}{}}) },
	} {
		var buf bytes.Buffer
		b := NewBuilder(&buf, Config{})
		build(b)
		if _, err := b.Close(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
