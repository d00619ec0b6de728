package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

var t0 = time.Date(2026, 2, 24, 14, 0, 0, 0, time.UTC)

// conv builds a conversation from a compact script; every message is one
// minute after the previous one.
type conv struct {
	msgs []Message
	n    int
}

func (c *conv) at() time.Time { c.n++; return t0.Add(time.Duration(c.n) * time.Minute) }

func (c *conv) user(text string) *conv {
	c.msgs = append(c.msgs, Message{Role: "user", Text: text, Time: c.at()})
	return c
}

func (c *conv) agent(text string) *conv {
	c.msgs = append(c.msgs, Message{Role: "assistant", Text: text, StopReason: "stop", Time: c.at()})
	return c
}

// call adds an assistant tool call and, unless result is nil, its result.
func (c *conv) call(id, name, args string, result *string, isErr bool) *conv {
	c.msgs = append(c.msgs, Message{Role: "assistant", StopReason: "toolUse", Time: c.at(),
		ToolCalls: []ToolCall{{ID: id, Name: name, Args: json.RawMessage(args)}}})
	if result != nil {
		c.msgs = append(c.msgs, Message{Role: "toolResult", ToolCallID: id, ToolName: name, Text: *result, IsError: isErr, Time: c.at()})
	}
	return c
}

func str(s string) *string { return &s }

func build(c *conv, now time.Time) *Checkpoint {
	return Build(Input{SessionKey: "telegram:user123", SessionFile: "s.jsonl", Messages: c.msgs,
		InputTokens: 162431, ContextWindow: 200000, Now: now})
}

func TestBuildDecisionsAreStructuralAndLanguageAgnostic(t *testing.T) {
	long := strings.Repeat("Option A costs less but takes longer. ", 20) + "\n\nShall I book option A?"
	longJa := strings.Repeat("東京から京都まで新幹線で移動します。", 40) + "\n\nこのプランでよろしいですか？"
	c := (&conv{}).user("Plan a trip to Japan in March, budget-friendly").
		agent(long).user("ok, A").                                       // decision
		agent("Short answer.").user("fine").                             // short reply to a short answer: no decision
		agent(long).user(strings.Repeat("a long considered reply ", 5)). // long reply: no decision
		agent(longJa).user("はい、お願いします")                                  // decision in Japanese
	cp := build(c, c.at())
	if len(cp.Decisions) != 2 {
		t.Fatalf("decisions %+v", cp.Decisions)
	}
	if !strings.Contains(cp.Decisions[0].What, `"ok, A"`) || !strings.Contains(cp.Decisions[0].What, "Shall I book option A?") {
		t.Errorf("d1 = %q", cp.Decisions[0].What)
	}
	if !strings.Contains(cp.Decisions[1].What, "はい、お願いします") || cp.Decisions[1].ID != "d2" || cp.Decisions[1].When != "2026-02-24T14:09:00Z" {
		t.Errorf("d2 = %+v", cp.Decisions[1])
	}
	// Key exchanges: first user, pivots (users after a long answer), last two pairs.
	var roles []string
	for _, e := range cp.Thread.KeyExchanges {
		roles = append(roles, e.Role+":"+truncate(e.Gist, 12))
	}
	want := "user:Plan a trip…,user:ok, A,user:a long cons…,agent:東京から京都まで新幹線…,user:はい、お願いします"
	if got := strings.Join(roles, ","); got != want {
		t.Errorf("exchanges\n got %s\nwant %s", got, want)
	}
	if cp.Thread.Summary != "Plan a trip to Japan in March, budget-friendly ... はい、お願いします" {
		t.Errorf("summary %q", cp.Thread.Summary)
	}
	if cp.Working.Topic != "はい、お願いします" || cp.Working.Status != StatusInProgress || cp.Meta.Channel != "telegram" {
		t.Errorf("working %+v meta %+v", cp.Working, cp.Meta)
	}
}

func TestBuildInterruptedByTrailingToolCall(t *testing.T) {
	c := (&conv{}).user("run the tests").call("t1", "bash", `{"command":"go test ./..."}`, nil, false)
	cp := build(c, c.at())
	w := cp.Working
	if !w.Interrupted || w.LastToolCall == nil || w.LastToolCall.Name != "bash" || w.LastToolCall.ParamsSummary != `{"command":"go test ./..."}` || w.Status != StatusInProgress {
		t.Fatalf("working %+v", w)
	}
	// Answered call: not interrupted; the agent is mid-turn.
	c = (&conv{}).user("run the tests").call("t1", "bash", `{"command":"go test"}`, str("ok"), false)
	cp = build(c, c.at())
	if cp.Working.Interrupted || cp.Working.Status != StatusInProgress || !strings.Contains(cp.Working.NextAction, `"bash"`) {
		t.Fatalf("working %+v", cp.Working)
	}
	// Split turn from a compaction.
	cp = Build(Input{Messages: c.msgs, SplitTurn: true, Now: t0})
	if !cp.Working.Interrupted || cp.Working.LastToolCall.Name != "bash" {
		t.Fatalf("split turn %+v", cp.Working)
	}
	// An aborted reply's calls are not pending (pi drops them).
	c = (&conv{}).user("x")
	c.msgs = append(c.msgs, Message{Role: "assistant", StopReason: "aborted", ToolCalls: []ToolCall{{ID: "a", Name: "read", Args: json.RawMessage(`{}`)}}, Time: c.at()})
	if cp = build(c, c.at()); cp.Working.Interrupted {
		t.Fatalf("aborted counted as interrupted: %+v", cp.Working)
	}
}

func TestBuildStatusWaitingAndIdle(t *testing.T) {
	c := (&conv{}).user("hi").agent("Hello! What shall we do?")
	last := c.msgs[len(c.msgs)-1].Time
	if cp := build(c, last.Add(time.Minute)); cp.Working.Status != StatusWaiting || !strings.Contains(cp.Working.NextAction, "What shall we do?") {
		t.Fatalf("waiting: %+v", cp.Working)
	}
	if cp := build(c, last.Add(2*time.Hour)); cp.Working.Status != StatusIdle {
		t.Fatalf("idle: %+v", cp.Working)
	}
	if cp := Build(Input{Now: t0}); cp.Working.Status != StatusIdle || cp.Thread.KeyExchanges != nil {
		t.Fatalf("empty: %+v", cp)
	}
}

func TestBuildResourcesOpenItemsLearnings(t *testing.T) {
	c := (&conv{}).user("fix it").
		call("1", "read", `{"path":"src/a.go"}`, str("package a"), false).
		call("2", "edit", `{"path":"src/a.go","oldText":"x","newText":"y"}`, str("Could not find the exact text"), true).
		call("3", "edit", `{"path":"src/a.go","oldText":"a","newText":"b"}`, str("Edited"), false).
		call("4", "write", `{"file_path":"docs/new.md","content":"x"}`, str("ok"), false).
		call("5", "str_replace_based_edit_tool", `{"command":"view","path":"src/b.go"}`, str("..."), false).
		call("6", "bash", `{"command":"make"}`, str("make: *** [all] Error 2\nmore"), true).
		agent("Plan:\n- [x] read a.go\n- [ ] update the docs\n* [ ] add a test\n\nDone for now.").
		agent("Progress:\n- [x] update the docs")
	cp := build(c, c.at())
	r := cp.Resources
	if strings.Join(r.FilesRead, ",") != "src/b.go,src/a.go" || strings.Join(r.FilesModified, ",") != "docs/new.md,src/a.go" {
		t.Errorf("files read %v modified %v", r.FilesRead, r.FilesModified)
	}
	if strings.Join(r.ToolsUsed, ",") != "bash,edit,read,str_replace_based_edit_tool,write" {
		t.Errorf("tools %v", r.ToolsUsed)
	}
	if len(cp.OpenItems) != 2 || cp.OpenItems[0] != "add a test" || !strings.Contains(cp.OpenItems[1], `Last "bash" call failed: make: *** [all] Error 2`) {
		t.Errorf("open items %q", cp.OpenItems)
	}
	if len(cp.Learnings) != 1 || !strings.Contains(cp.Learnings[0], `"edit" failed, then worked on retry: Could not find`) {
		t.Errorf("learnings %q", cp.Learnings)
	}
}

func TestBuildCaps(t *testing.T) {
	c := &conv{}
	long := strings.Repeat("x", 600)
	for i := 0; i < 70; i++ {
		c.user(fmt.Sprintf("turn %d", i)).agent(long)
	}
	for i := 0; i < 150; i++ {
		c.call(fmt.Sprintf("c%d", i), fmt.Sprintf("tool%03d", i), fmt.Sprintf(`{"path":"f%03d.go"}`, i), str("ok"), false)
		c.call(fmt.Sprintf("w%d", i), "write", fmt.Sprintf(`{"path":"w%03d.go"}`, i), str("ok"), false)
	}
	cp := build(c, c.at())
	if len(cp.Decisions) != MaxDecisions || cp.Decisions[0].ID != "d20" || cp.Decisions[49].ID != "d69" {
		t.Errorf("decisions %d, first %s", len(cp.Decisions), cp.Decisions[0].ID)
	}
	if len(cp.Thread.KeyExchanges) != MaxExchanges || cp.Thread.KeyExchanges[0].Gist != "turn 0" {
		t.Errorf("exchanges %+v", cp.Thread.KeyExchanges)
	}
	if len(cp.Resources.ToolsUsed) != MaxTools || len(cp.Resources.FilesRead) != MaxFiles || len(cp.Resources.FilesModified) != MaxFiles {
		t.Errorf("tools %d read %d modified %d", len(cp.Resources.ToolsUsed), len(cp.Resources.FilesRead), len(cp.Resources.FilesModified))
	}
	if cp.Resources.FilesModified[0] != "w149.go" {
		t.Errorf("most recent file first: %s", cp.Resources.FilesModified[0])
	}
	for _, e := range cp.Thread.KeyExchanges {
		if n := len([]rune(e.Gist)); n > GistChars {
			t.Errorf("gist of %d chars", n)
		}
	}
}

func TestOwnResumeMessageIsIgnored(t *testing.T) {
	c := (&conv{}).user("real question").agent("answer")
	c.msgs = append(c.msgs, Message{Role: "custom", CustomType: CustomType, Text: "[Post-compaction checkpoint restore: cp_001]", Time: c.at()})
	cp := build(c, c.at())
	if cp.Working.Topic != "real question" || cp.Working.Status != StatusWaiting {
		t.Fatalf("%+v", cp.Working)
	}
}

func TestGauge(t *testing.T) {
	for _, c := range []struct {
		tokens, window int
		saved          bool
		want           string
	}{
		{162431, 200000, true, "[Context: 81.2% | 162k/200k tokens | Checkpoint saved]"},
		{148000, 200000, false, "[Context: 74.0% | 148k/200k tokens]"},
		{139999, 200000, false, ""},
		{140000, 200000, false, "[Context: 70.0% | 140k/200k tokens]"},
		{900000, 1000000, false, "[Context: 90.0% | 900k/1M tokens]"},
		{5, 0, false, ""},
	} {
		if got := Gauge(c.tokens, c.window, c.saved); got != c.want {
			t.Errorf("Gauge(%d,%d,%v) = %q, want %q", c.tokens, c.window, c.saved, got, c.want)
		}
	}
}

func TestRenderSeedExampleShape(t *testing.T) {
	cp := sampleCheckpoint()
	cp.Meta.CompactionCount = 4
	text := Render(cp, RenderOptions{})
	for _, want := range []string{
		"[Post-compaction checkpoint restore: cp_003]",
		"Warning: this session has been compacted 4 times",
		"Working on: Helping user plan a trip to Japan\nStatus: in_progress\nNext action: User asked about visa requirements -- need to answer\n",
		"Decisions made:\n- User prefers budget options over luxury (14:15)\n",
		"Thread: Planning Japan trip. Settled on March dates, budget focus.\n",
		"Open items:\n- Visa requirements for Serbian passport\n",
		"Learnings (consider storing to long-term memory):\n- User is price-sensitive, always ask about budget first\n",
		"Tools used: web_search, memory_search\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("resume text lacks %q:\n%s", want, text)
		}
	}
}

// "Working on" names the task: the last user message that asks for
// something (facts.IsAsk, the detector compaction's "## Goal" uses), not a
// later "ok" or greeting.
func TestWorkingOnIsTheLastAsk(t *testing.T) {
	c := (&conv{}).user("hi!").agent("Hello!").user("Please migrate the billing ledger to Postgres 16").
		agent(strings.Repeat("Here is the plan. ", 40)).user("ok").agent("Starting.")
	cp := build(c, c.at())
	if cp.Working.Topic != "Please migrate the billing ledger to Postgres 16" {
		t.Fatalf("topic %q", cp.Working.Topic)
	}
}

// A user message is read as the user's words: OpenClaw's channel envelope
// is stripped, and an injected prompt (a task notification, a heartbeat)
// is no user text at all, so neither becomes the topic.
func TestUserTextWithoutEnvelopes(t *testing.T) {
	envelope := "System: [2026-04-18 16:07:01 GMT+8] Feishu[anuo] DM | user (ou_1) [msg:om_1]\n" +
		"Conversation info (untrusted metadata):\n```json\n{\"message_id\": \"om_1\"}\n```\n\nPlease move the daily plan to 07:00"
	for _, c := range []struct{ in, want string }{
		{envelope, "Please move the daily plan to 07:00"},
		{"[Sat 2026-02-07 14:32 GMT+1] configure brave search\n[message_id: 1d4fe2a5]", "configure brave search"},
		{"<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>", ""},
		{"Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. If nothing needs attention, reply HEARTBEAT_OK.", ""},
	} {
		m := fromTranscript(&transcript.Entry{}, &transcript.Message{Role: "user", Content: []transcript.Block{{Type: "text", Text: c.in}}})
		if m.Text != c.want {
			t.Errorf("%.40q: got %q, want %q", c.in, m.Text, c.want)
		}
	}
}
