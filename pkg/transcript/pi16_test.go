package transcript_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/agentkit"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// A session the real pi 1.6.0 wrote (offline, fake model server: a tool
// call, pi's own /compact, a turn after it) is measured as pi 1.6.0
// rebuilds its context: its system message (sections, toolsAdded), the
// compaction's systemMessage and the turns. ctxtool's context equals pi
// 1.6.0's own loader's (internal/oracle, Check16) message for message, and
// its chars/4 estimate is compared with the request pi sent next.
func TestPi16SessionAsPiRebuildsIt(t *testing.T) {
	in, err := agentkit.FindPi(false)
	if err != nil {
		t.Skipf("real pi 1.6.0: %v", err)
	}
	srv := llmtest.New()
	defer srv.Close()
	srv.UsageFromBody = true
	calls := 0
	srv.ToolCall = func(r llmtest.Request) *llmtest.ToolCall {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "user" && strings.Contains(r.Messages[n-1].Content, "README") && calls == 0 {
			calls++
			return &llmtest.ToolCall{ID: "call_1", Name: "read", Arguments: map[string]any{"path": "README.md"}}
		}
		return nil
	}
	srv.Reply = func(r llmtest.Request) string {
		last := ""
		if n := len(r.Messages); n > 0 {
			last = r.Messages[n-1].Content
		}
		if strings.Contains(last, "<conversation>") {
			return "## Goal\nThe user is migrating the billing service; the deadline is 2027-03-14."
		}
		return fmt.Sprintf("Noted (reply %d).", len(r.Messages))
	}
	home := t.TempDir()
	agentDir, sessions := home+"/agent", home+"/sessions"
	if err := agentkit.WriteAgentDir(agentDir, srv.BaseURL(), 128000, map[string]any{"keepRecentTokens": 40}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, home+"/README.md", strings.Repeat("The billing service keeps ledgers. ", 40))
	p, err := agentkit.StartPi(in, agentkit.PiConfig{AgentDir: agentDir, SessionDir: sessions, Home: home, Tools: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const turn = 60 * time.Second
	for _, m := range []string{
		"We are migrating the billing service. The database is postgres://billing@db-7.internal:5432/ledger.",
		"Read the README and tell me what it says.",
		"The deadline is 2027-03-14; keep the retry budget at 7 attempts.",
	} {
		if err := p.Prompt(m, turn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Command(map[string]any{"type": "compact"}, turn); err != nil {
		t.Fatal(err)
	}
	if err := p.Prompt("What is the deadline?", turn); err != nil {
		t.Fatal(err)
	}
	p.Close()
	file, err := agentkit.SessionFile(sessions)
	if err != nil {
		t.Fatal(err)
	}
	s, err := transcript.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Context()
	if c.Compaction == nil || c.Compaction.SystemMessage() == nil {
		t.Fatalf("pi 1.6.0's compaction has no systemMessage here: %v", c.Compaction)
	}
	var roles []string
	for _, m := range c.Messages {
		roles = append(roles, m.Role)
	}
	got := c.HeuristicTokens()

	res := oracle.Check16(t, true, false, file)[0]
	var want []string
	for _, m := range res.Messages {
		want = append(want, m.Role)
	}
	// pi sends the replayed system message first; ctxtool keeps the
	// summary at index 0 (see BuildContext): same messages, same sizes.
	if len(want) > 1 && want[0] == "system" && want[1] == "compactionSummary" {
		want[0], want[1] = want[1], want[0]
	}
	if strings.Join(roles, ",") != strings.Join(want, ",") {
		t.Errorf("context roles\nctxtool %v\npi 1.6.0 %v", roles, want)
	}
	if got != res.HeuristicTokens {
		t.Errorf("heuristic tokens: ctxtool %d, pi 1.6.0 %d", got, res.HeuristicTokens)
	}

	// Against the request pi actually sent last.
	reqs := srv.Requests()
	body := len(reqs[len(reqs)-1].Body)
	dev := math.Abs(float64(got)-float64(body)/4) / (float64(body) / 4)
	t.Logf("pi 1.6.0 session: ctxtool heuristic %d tokens, pi 1.6.0's own %d; last request body %d chars (chars/4 %d): %.1f%% apart",
		got, res.HeuristicTokens, body, body/4, 100*dev)
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pi 1.6.0's context_edit (a replacement, and null: removed) and usage
// entries, in a hand-made session: the context is what pi 1.6.0's
// buildSessionProjection makes of it (Σ chars/4 computed by hand, and
// equal to pi's own loader's when it is installed).
func TestPi16ContextEdits(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"a0","parentId":null,"timestamp":"2026-11-30T10:00:00.001Z","message":{"role":"system","content":"","sections":{"preamble":"` + strings.Repeat("p", 400) + `","tools":null},"toolsAdded":[{"name":"read"}],"timestamp":1}}`,
		`{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-11-30T10:00:01.000Z","message":{"role":"user","content":"` + strings.Repeat("u", 80) + `","timestamp":2}}`,
		`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"x"}}],"api":"openai-completions","provider":"fake","model":"m","usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12},"stopReason":"toolUse","timestamp":3}}`,
		`{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-11-30T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"` + strings.Repeat("r", 4000) + `"}],"isError":false,"timestamp":4}}`,
		`{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-11-30T10:00:04.000Z","message":{"role":"user","content":"` + strings.Repeat("v", 40) + `","timestamp":5}}`,
		`{"type":"usage","id":"a5","parentId":"a4","timestamp":"2026-11-30T10:00:05.000Z","kind":"summary","provider":"fake","model":"m","usage":{"input":100,"output":20,"totalTokens":120}}`,
		`{"type":"context_edit","id":"a6","parentId":"a5","timestamp":"2026-11-30T10:00:06.000Z","targetId":"a3","replacement":{"content":[{"type":"text","text":"` + strings.Repeat("e", 40) + `"}]}}`,
		`{"type":"context_edit","id":"a7","parentId":"a6","timestamp":"2026-11-30T10:00:07.000Z","targetId":"a4","replacement":null}`,
	}
	p := t.TempDir() + "/s.jsonl"
	writeFile(t, p, strings.Join(lines, "\n")+"\n")
	s, err := transcript.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Context()
	roles := roleTokens(c)
	// system: 400 + len(`[{"name":"read"}]`) = 417 → 105; user 80 → 20;
	// assistant "read" + `{"path":"x"}` = 16 → 4; the result edited to 40
	// chars → 10; the last user removed.
	want := "system:105 user:20 assistant:4 toolResult:10"
	if strings.Join(roles, " ") != want {
		t.Errorf("context %q, want %q", strings.Join(roles, " "), want)
	}
	if got := c.HeuristicTokens(); got != 139 {
		t.Errorf("heuristic %d, want 139", got)
	}
	if _, err := agentkit.FindPi(false); err == nil {
		if res := oracle.Check16(t, false, false, p)[0]; res.HeuristicTokens != c.HeuristicTokens() || res.ContextMessages != len(c.Messages) {
			t.Errorf("pi 1.6.0: %d messages, %d tokens; ctxtool %d, %d", res.ContextMessages, res.HeuristicTokens, len(c.Messages), c.HeuristicTokens())
		}
	}
}

// ctxtool's compaction of a pi 1.6.0 session keeps the system prompt in
// the summary's context as pi's own does (systemMessage: sections merged,
// tools by name), so the context after it still holds it; pi 1.6.0's
// loader agrees.
func TestPi16CompactionKeepsSystemMessage(t *testing.T) {
	sys := `{"type":"message","id":"a0","parentId":null,"timestamp":"2026-11-30T10:00:00.001Z","message":{"role":"system","content":"","sections":{"preamble":"` + strings.Repeat("p", 400) + `","env":"cwd /w"},"toolsAdded":[{"name":"read","description":"Read a file"},{"name":"bash"}],"timestamp":1}}`
	patch := `{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T10:00:02.000Z","message":{"role":"system","content":"","sections":{"env":null,"date":"2026-11-30"},"toolsRemoved":[{"name":"bash"}],"timestamp":3}}`
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/w"}`, sys,
		`{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-11-30T10:00:01.000Z","message":{"role":"user","content":"` + strings.Repeat("u", 80) + `","timestamp":2}}`,
		patch,
		`{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-11-30T10:00:03.000Z","message":{"role":"user","content":"` + strings.Repeat("v", 40) + `","timestamp":4}}`,
	}
	p := t.TempDir() + "/s.jsonl"
	writeFile(t, p, strings.Join(lines, "\n")+"\n")
	s, err := transcript.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: "the summary", FirstKept: s.Entries[len(s.Entries)-1], TokensBefore: 200})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := `"systemMessage":{"role":"system","content":"","sections":{"preamble":"` + strings.Repeat("p", 400) + `","date":"2026-11-30"},"toolsAdded":[{"name":"read","description":"Read a file"}],"timestamp":`
	if !strings.Contains(string(a.Line), want) {
		t.Fatalf("compaction line %s\nwant it to hold %s", a.Line, want)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(a.Line, '\n'))
	f.Close()
	s, err = transcript.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Context()
	roles := roleTokens(c)
	// summary 11 chars → 3; system 400 + "2026-11-30" + JSON of the one
	// tool (43) = 453 → 114; the kept user message 40 → 10.
	if got := strings.Join(roles, " "); got != "compactionSummary:3 system:114 user:10" {
		t.Errorf("context after the compaction: %s", got)
	}
	if _, err := agentkit.FindPi(false); err == nil {
		if res := oracle.Check16(t, false, false, p)[0]; res.HeuristicTokens != c.HeuristicTokens() || res.ContextMessages != len(c.Messages) {
			t.Errorf("pi 1.6.0: %d messages, %d tokens; ctxtool %d, %d", res.ContextMessages, res.HeuristicTokens, len(c.Messages), c.HeuristicTokens())
		}
	}
}

// roleTokens is "role:tokens" of each context message.
func roleTokens(c *transcript.Context) []string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, fmt.Sprintf("%s:%d", m.Role, m.Tokens()))
	}
	return out
}
