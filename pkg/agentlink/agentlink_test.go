package agentlink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/compaction"
)

func load(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "agent", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func decode(t *testing.T, data []byte) *Request {
	t.Helper()
	req, err := Decode(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// The requests pi 1.6.0's extension really sent (recorded by
// internal/agentkit's TestRecordPiPayload, paths sanitised) are answered
// with pi's cut and tokensBefore echoed and a summary that keeps the
// summarised messages' identifiers — and, for the second compaction, the
// previous summary's and the split turn's.
func TestRecordedPiRequests(t *testing.T) {
	cases := []struct {
		file  string
		want  []string
		split bool
	}{
		{"pi-1.6.0-request-first.json", []string{"postgres://billing@db-7.internal:5432/ledger", "2027-03-14"}, false},
		{"pi-1.6.0-request-tools.json", []string{
			"RB-2207",                               // in the read tool's result
			"<read-files>\nnotes.md\n</read-files>", // pi's fileOps Set, as the shim sent it
		}, false},
		{"pi-1.6.0-request-split-previous.json", []string{
			"postgres://billing@db-7.internal:5432/ledger", // only in the previous summary
			"/etc/billing/secrets.yaml",                    // in the summarised history
			"invoices_v2",                                  // in the split turn's prefix
		}, true},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			req := decode(t, load(t, c.file))
			res, err := Compact(context.Background(), req, Options{Summarizer: compaction.Extractive{}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decline != "" || res.Version != Version {
				t.Fatalf("answer %+v", res)
			}
			if res.FirstKeptEntryID != req.Preparation.FirstKeptEntryID || res.FirstKeptEntryID == "" {
				t.Errorf("firstKeptEntryId %q, pi's is %q", res.FirstKeptEntryID, req.Preparation.FirstKeptEntryID)
			}
			if res.TokensBefore != req.Preparation.TokensBefore {
				t.Errorf("tokensBefore %d, pi's is %d", res.TokensBefore, req.Preparation.TokensBefore)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Summary, w) {
					t.Errorf("summary lacks %q:\n%s", w, res.Summary)
				}
			}
			if got := strings.Contains(res.Summary, "Turn Context (split turn)"); got != c.split {
				t.Errorf("split-turn section present = %v, want %v", got, c.split)
			}
			d := res.Details
			if d == nil || d.Ctxtool.Summarizer != "extractive" || d.Ctxtool.Strategy != "default" || d.Ctxtool.Contract != Version {
				t.Fatalf("details %+v", d)
			}
			if d.Ctxtool.Audit == nil || d.Ctxtool.Audit.Facts == 0 {
				t.Errorf("audit %+v: the summarised messages have facts", d.Ctxtool.Audit)
			}
			// the answer is what the shim parses: round-trip it
			data, _ := json.Marshal(res)
			var back map[string]any
			if err := json.Unmarshal(data, &back); err != nil || back["summary"] != res.Summary {
				t.Fatalf("answer does not round-trip: %s", data)
			}
		})
	}
}

// Unusable requests are refused with an *InputError that names what is
// wrong, never a panic or a silent default.
func TestDecodeRefuses(t *testing.T) {
	good := load(t, "pi-1.6.0-request-first.json")
	var obj map[string]any
	if err := json.Unmarshal(good, &obj); err != nil {
		t.Fatal(err)
	}
	with := func(edit func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(good, &m)
		edit(m)
		b, _ := json.Marshal(m)
		return b
	}
	prep := func(m map[string]any) map[string]any { return m["preparation"].(map[string]any) }
	cases := []struct {
		name string
		in   []byte
		max  int64
		want string
	}{
		{"empty", nil, 0, "no request on stdin"},
		{"blank", []byte("  \n"), 0, "no request on stdin"},
		{"garbage", []byte("compact please"), 0, "not a contract v1 JSON object"},
		{"truncated", good[:len(good)/2], 0, "not a contract v1 JSON object"},
		{"two objects", append(append([]byte{}, good...), good...), 0, "more than one JSON value"},
		{"too large", good, int64(len(good) - 1), "larger than"},
		{"no version", with(func(m map[string]any) { delete(m, "version") }), 0, `no "version"`},
		{"newer version", with(func(m map[string]any) { m["version"] = 2 }), 0, "contract version 2"},
		{"other agent", with(func(m map[string]any) { m["agent"] = "emacs" }), 0, `agent "emacs"`},
		{"wrong type", with(func(m map[string]any) { prep(m)["tokensBefore"] = "many" }), 0, `"preparation.tokensBefore"`},
		{"message without role", with(func(m map[string]any) {
			prep(m)["messagesToSummarize"] = []any{map[string]any{"content": "hi"}}
		}), 0, `messagesToSummarize[0]: the message has no "role"`},
		{"message not an object", with(func(m map[string]any) {
			prep(m)["turnPrefixMessages"] = []any{map[string]any{"role": "user"}, "hello"}
		}), 0, "turnPrefixMessages[1]: not a message object"},
		{"kept not an object", with(func(m map[string]any) { m["keptMessages"] = []any{7} }), 0, "keptMessages[0]"},
		{"negative", with(func(m map[string]any) { prep(m)["tokensBefore"] = -1 }), 0, "must not be negative"},
		{"details not an object", with(func(m map[string]any) { m["previousDetails"] = []any{1} }), 0, "previousDetails must be a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(bytes.NewReader(c.in), c.max)
			var in *InputError
			if !errors.As(err, &in) {
				t.Fatalf("error %v (%T), want an *InputError", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// A preparation with nothing to summarise is declined (pi then compacts by
// itself), as is a threshold compaction the agent's settings disable.
func TestDecline(t *testing.T) {
	req := decode(t, load(t, "pi-1.6.0-request-first.json"))
	req.Preparation.MessagesToSummarize = nil
	res, err := Compact(context.Background(), req, Options{Summarizer: compaction.Extractive{}})
	if err != nil || res.Decline == "" || res.Summary != "" {
		t.Fatalf("no messages: %+v, %v; want a decline", res, err)
	}
	req = decode(t, load(t, "pi-1.6.0-request-first.json"))
	off := false
	req.Preparation.Settings.Enabled, req.Reason = &off, "threshold"
	if res, err = Compact(context.Background(), req, Options{Summarizer: compaction.Extractive{}}); err != nil || res.Decline == "" {
		t.Fatalf("disabled: %+v, %v; want a decline", res, err)
	}
	req.Reason = "manual" // /compact still works with auto-compaction off
	if res, err = Compact(context.Background(), req, Options{Summarizer: compaction.Extractive{}}); err != nil || res.Decline != "" {
		t.Fatalf("manual with compaction disabled: %+v, %v; want a summary", res, err)
	}
}

func userMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1})
	return b
}

func toolCallMsg(name, path string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "timestamp": 2, "stopReason": "toolUse",
		"content": []any{map[string]any{"type": "toolCall", "id": "call-" + name, "name": name, "arguments": map[string]any{"path": path}}}})
	return b
}

// The file lists stay cumulative: the previous ctxtool compaction's lists
// (pi ignores an extension's details), pi's fileOps and the summarised
// tool calls all end up in details.
func TestFileListsCumulative(t *testing.T) {
	req := &Request{Version: 1, Agent: "pi", PreviousDetails: json.RawMessage(`{"readFiles":["/src/old.go"],"modifiedFiles":["/src/gone.go"]}`)}
	p := &req.Preparation
	p.FirstKeptEntryID, p.PreviousSummary = "k1", "## Goal\n- earlier work"
	p.MessagesToSummarize = []json.RawMessage{userMsg("look at the code"), toolCallMsg("read", "/src/new.go"), toolCallMsg("edit", "/src/main.go")}
	p.FileOps.Read = []string{"/src/fromops.go"}
	res, err := Compact(context.Background(), req, Options{Summarizer: compaction.Extractive{}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Details
	wantRead := []string{"/src/fromops.go", "/src/new.go", "/src/old.go"}
	wantMod := []string{"/src/gone.go", "/src/main.go"}
	if strings.Join(got.ReadFiles, ",") != strings.Join(wantRead, ",") || strings.Join(got.ModifiedFiles, ",") != strings.Join(wantMod, ",") {
		t.Errorf("read %v modified %v, want %v and %v", got.ReadFiles, got.ModifiedFiles, wantRead, wantMod)
	}
	if !strings.Contains(res.Summary, "<modified-files>") || !strings.Contains(res.Summary, "/src/main.go") {
		t.Errorf("summary lacks pi's file list block:\n%s", res.Summary)
	}
}

// fixed is a summariser that writes the same text whatever it is asked.
type fixed string

func (f fixed) Name() string { return "fixed" }
func (fixed) Capabilities() compaction.Capabilities {
	return compaction.Capabilities{}
}
func (f fixed) Summarize(context.Context, *compaction.Request) (string, error) {
	return string(f), nil
}

// The audit reads the kept messages: a fact the summary drops but pi keeps
// verbatim is not dropped; one it loses is, at its message's position.
func TestAuditCountsKeptMessages(t *testing.T) {
	req := &Request{Version: 1, Agent: "pi"}
	p := &req.Preparation
	p.FirstKeptEntryID = "k1"
	p.MessagesToSummarize = []json.RawMessage{
		userMsg("Use the bucket s3://kept-bucket-1182/data for the export."),
		userMsg("The ticket is JIRA-99812 and the host is build-host-77.example.net."),
	}
	req.KeptMessages = []json.RawMessage{userMsg("Still exporting to s3://kept-bucket-1182/data.")}
	res, err := Compact(context.Background(), req, Options{Summarizer: fixed("## Goal\n- export data")})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Details.Ctxtool.Audit
	var dropped []string
	for _, f := range a.DroppedFacts {
		dropped = append(dropped, f.Value)
		if strings.Contains(f.Value, "kept-bucket") {
			t.Errorf("%q is in the kept messages, yet counted dropped", f.Value)
		}
		if strings.Contains(f.Value, "JIRA-99812") && f.Line != 2 {
			t.Errorf("JIRA-99812 is in message 2, reported at %d", f.Line)
		}
	}
	if !strings.Contains(strings.Join(dropped, "|"), "JIRA-99812") {
		t.Errorf("dropped %v: want JIRA-99812 (in no summary, no kept message)", dropped)
	}
}

// Custom and branch-summary messages (pi's custom_message and
// branch_summary entries) are summarised, not lost.
func TestCustomAndBranchMessages(t *testing.T) {
	req := &Request{Version: 1, Agent: "pi"}
	p := &req.Preparation
	p.FirstKeptEntryID = "k1"
	custom, _ := json.Marshal(map[string]any{"role": "custom", "customType": "note", "content": "Remember the port 48213 for the tunnel.", "display": true, "timestamp": 1})
	branch, _ := json.Marshal(map[string]any{"role": "branchSummary", "summary": "Tried the branch with /opt/tools/legacy-runner.sh; abandoned.", "fromId": "x", "timestamp": 2})
	p.MessagesToSummarize = []json.RawMessage{userMsg("Set up the tunnel."), custom, branch}
	res, err := Compact(context.Background(), req, Options{Summarizer: compaction.Extractive{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"48213", "/opt/tools/legacy-runner.sh"} {
		if !strings.Contains(res.Summary, w) {
			t.Errorf("summary lacks %q:\n%s", w, res.Summary)
		}
	}
}

// peek is a summariser that looks into a directory while it runs.
type peek struct {
	dir   string
	found []string
}

func (p *peek) Name() string { return "peek" }
func (*peek) Capabilities() compaction.Capabilities {
	return compaction.Capabilities{}
}
func (p *peek) Summarize(context.Context, *compaction.Request) (string, error) {
	es, _ := os.ReadDir(p.dir)
	for _, e := range es {
		p.found = append(p.found, e.Name())
	}
	return "## Goal\n- peeked", nil
}

// The request's messages never sit on disk under a name: while the
// summariser runs, the temp directory is already empty (a kill -9 then
// leaves no copy of the conversation behind).
func TestNoConversationLeftOnDisk(t *testing.T) {
	dir := t.TempDir()
	req := decode(t, load(t, "pi-1.6.0-request-split-previous.json"))
	p := &peek{dir: dir}
	res, err := Compact(context.Background(), req, Options{Summarizer: p, TempDir: dir})
	if err != nil || !strings.Contains(res.Summary, "peeked") {
		t.Fatalf("%+v %v", res, err)
	}
	if len(p.found) != 0 {
		t.Errorf("while summarising, %s held %v", dir, p.found)
	}
	if _, err := Compact(context.Background(), req, Options{Summarizer: p, TempDir: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("an unwritable temp dir: %v, want an error naming TMPDIR", err)
	}
}
