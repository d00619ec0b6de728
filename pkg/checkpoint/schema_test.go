package checkpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// hostile strings: YAML syntax, document markers, control bytes, invalid
// UTF-8, leading/trailing blanks, key-looking lines.
var hostile = []string{
	"key: value\n- item\n#comment\n---\n...\n",
	"  leading spaces\nand: more",
	"x\x00y\x1b[31m red\r\n",
	"\xff\xfe broken utf8",
	"|\n  nested: block",
	"! tag & anchor *alias",
	"meta:\n  checkpoint_id: \"cp_999\"\nschema: evil",
	"\"quoted\" 'single' \\backslash",
	"trailing spaces   ",
	"\u2028line separator\u2029",
	"日本語のテキスト: コロン",
	"",
}

func sampleCheckpoint() *Checkpoint {
	return &Checkpoint{
		Schema: Schema, SchemaVersion: SchemaVersion,
		Meta: Meta{
			CheckpointID: "cp_003", SessionKey: "telegram:user123", SessionFile: "sessions/telegram-user123.jsonl",
			CreatedAt: "2026-02-24T15:30:00Z", Trigger: TriggerAuto80, CompactionCount: 2,
			TokenUsage:         TokenUsage{InputTokens: 162431, ContextWindow: 200000, Utilization: 0.8122},
			PreviousCheckpoint: "cp_002", Channel: "telegram", AgentID: "default",
		},
		Working: Working{Topic: "Helping user plan a trip to Japan", Status: StatusInProgress,
			NextAction: "User asked about visa requirements -- need to answer"},
		Decisions: []Decision{{ID: "d1", What: "User prefers budget options over luxury", When: "2026-02-24T14:15:00Z"}},
		Resources: Resources{FilesRead: []string{}, FilesModified: []string{"notes/japan.md"}, ToolsUsed: []string{"web_search", "memory_search"}},
		Thread: Thread{Summary: "Planning Japan trip. Settled on March dates, budget focus.",
			KeyExchanges: []Exchange{{Role: "user", Gist: "I want to go to Japan in March"}, {Role: "agent", Gist: "Proposed 2-week itinerary"}}},
		OpenItems: []string{"Visa requirements for Serbian passport"},
		Learnings: []string{"User is price-sensitive, always ask about budget first"},
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	cp := sampleCheckpoint()
	data, err := Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(cp, back) {
		t.Fatalf("round trip differs:\n%+v\n%+v", cp, back)
	}
	for _, want := range []string{
		"schema: \"openclaw/checkpoint\"\n", "schema_version: 1\n", "  topic: |\n    Helping user",
		"    - \"web_search\"\n", "  previous_checkpoint: \"cp_002\"\n", "    utilization: 0.8122\n",
		"  last_tool_call: null\n", "  files_read: []\n",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("YAML lacks %q:\n%s", want, data)
		}
	}
}

// TestHostileContentCannotInjectKeys puts hostile text into every free-text
// and list field and checks that the document still has exactly the schema's
// keys and that each value reads back as the cleaned text.
func TestHostileContentCannotInjectKeys(t *testing.T) {
	for _, h := range hostile {
		cp := sampleCheckpoint()
		cp.Meta.SessionKey = h
		cp.Working.Topic, cp.Working.NextAction = h, h
		cp.Working.LastToolCall = &ToolCallRef{Name: h, ParamsSummary: h}
		cp.Decisions = []Decision{{ID: "d1", What: h, When: h}}
		cp.Resources.ToolsUsed = []string{h}
		cp.Resources.FilesRead = []string{h}
		cp.Thread.Summary = h
		cp.Thread.KeyExchanges = []Exchange{{Role: "user", Gist: h}}
		cp.OpenItems, cp.Learnings = []string{h}, []string{h}
		data, err := Marshal(cp)
		if err != nil {
			t.Fatalf("%q: %v", h, err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%q: output is not YAML: %v\n%s", h, err, data)
		}
		if len(doc) != 9 {
			t.Fatalf("%q: top-level keys %v", h, keys(doc))
		}
		meta := doc["meta"].(map[string]any)
		if meta["checkpoint_id"] != "cp_003" || len(meta) != 10 {
			t.Fatalf("%q: meta = %v", h, meta)
		}
		back, err := Unmarshal(data)
		if err != nil {
			t.Fatalf("%q: %v\n%s", h, err, data)
		}
		clean := Clean(h)
		if back.Resources.ToolsUsed[0] != clean || back.OpenItems[0] != clean || back.Meta.SessionKey != clean {
			t.Errorf("%q: list/quoted value came back as %q", h, back.Resources.ToolsUsed[0])
		}
		wantBlock := strings.TrimRight(clean, " \t\n")
		if back.Working.Topic != wantBlock || back.Thread.KeyExchanges[0].Gist != wantBlock || back.Decisions[0].What != wantBlock {
			t.Errorf("%q: block value came back as %q, want %q", h, back.Working.Topic, wantBlock)
		}
		// Stable: marshalling the parsed document gives the same bytes.
		again, _ := Marshal(back)
		if string(again) != string(data) {
			t.Errorf("%q: not stable:\n%s\n---\n%s", h, data, again)
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestUnmarshalRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"not yaml":    "schema: [unclosed\n",
		"wrong":       "schema: \"other\"\nschema_version: 1\n",
		"version":     "schema: \"openclaw/checkpoint\"\nschema_version: 2\n",
		"bad id":      "schema: \"openclaw/checkpoint\"\nschema_version: 1\nmeta:\n  checkpoint_id: \"../x\"\n",
		"truncated":   "schema: \"openclaw/checkpoint\"\nschema_version: 1\nmeta:\n  checkpoint_id: \"cp_0",
		"binary junk": "\x00\x01\x02",
	} {
		if _, err := Unmarshal([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSanitizeKey(t *testing.T) {
	cases := map[string]string{
		"telegram:user123":       "telegram_user123",
		"agent:main:main":        "agent_main_main",
		"../../etc/passwd":       ".._.._etc_passwd",
		"..":                     "__",
		".":                      "_",
		"...":                    "___",
		"":                       "_",
		"/abs/path":              "_abs_path",
		`C:\Windows\System`:      "C__Windows_System",
		"a\x00b":                 "a_b",
		"CON":                    "_CON",
		"nul.txt":                "_nul.txt",
		"com1":                   "_com1",
		"trailing.":              "trailing_",
		"ok-name_1.2":            "ok-name_1.2",
		"spaces and\ttabs":       "spaces_and_tabs",
		"emoji🙂":                 "emoji_",
		"a/../../b":              "a_.._.._b",
		"\\\\server\\share":      "__server_share",
		"name<>|?*\"":            "name______",
		strings.Repeat("x", 300): "",
	}
	for in, want := range cases {
		got := SanitizeKey(in)
		if want != "" && got != want {
			t.Errorf("SanitizeKey(%q) = %q, want %q", in, got, want)
		}
		if len(got) > maxDirName || got == "." || got == ".." || strings.ContainsAny(got, "/\\:\x00*?\"<>| ") || strings.HasSuffix(got, ".") {
			t.Errorf("SanitizeKey(%q) = %q is not a safe directory name", in, got)
		}
	}
	if SanitizeKey(strings.Repeat("x", 300)) == SanitizeKey(strings.Repeat("x", 301)) {
		t.Error("long keys with a common prefix collide")
	}
}

// TestHostileKeysStayInside writes a checkpoint under hostile session keys
// and checks that every file created lives under the state directory.
func TestHostileKeysStayInside(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	s := &Store{StateDir: state}
	for _, key := range []string{"../escape", "../../escape2", "/tmp/abs", "..", ".", "a\x00b", "CON", "x/../../../y", `..\..\win`} {
		cp := sampleCheckpoint()
		cp.Meta.SessionKey = key
		res, err := s.Write(key, cp)
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		rel, err := filepath.Rel(filepath.Join(state, "context", "checkpoints"), res.Path)
		if err != nil || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || strings.Count(rel, string(filepath.Separator)) != 1 {
			t.Fatalf("%q: wrote %s, outside its session directory", key, res.Path)
		}
		if err := s.UpdateState(key, func(st *State) error { st.OpenItems = append(st.OpenItems, "x"); return nil }); err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Latest(key)
		if err != nil || got.Meta.SessionKey != Clean(key) {
			t.Fatalf("%q: latest %v %v", key, got, err)
		}
	}
	// Nothing outside state/.
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Fatalf("files escaped the state dir: %v", entries)
	}
}
