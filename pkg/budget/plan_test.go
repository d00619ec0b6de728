package budget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/budget"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// The tests below recompute every number from VS7's formulas with
// their own arithmetic (integer percentages, their own chars/4 counting of
// the raw session lines), never by calling the budget package's helpers.

func u16(s string) int { return len(utf16.Encode([]rune(s))) }

func ceil4(n int) int { return int(math.Ceil(float64(n) / 4)) }

// piTokens is pi's estimateTokens for a message object, written from
// docs/design/pi-baseline.md (text, thinking, tool-call names + JSON
// arguments, 1,200 tokens per tool-result image, summaries).
func piTokens(t *testing.T, raw json.RawMessage) int {
	t.Helper()
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Summary string          `json:"summary"`
		Command string          `json:"command"`
		Output  string          `json:"output"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("message %s: %v", raw, err)
	}
	chars := 0
	var str string
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(m.Content) > 0 && m.Content[0] == '"' {
		_ = json.Unmarshal(m.Content, &str)
	} else if len(m.Content) > 0 {
		_ = json.Unmarshal(m.Content, &blocks)
	}
	switch m.Role {
	case "system", "user":
		chars = u16(str)
		for _, b := range blocks {
			if b.Type == "text" {
				chars += u16(b.Text)
			}
		}
	case "assistant":
		for _, b := range blocks {
			switch b.Type {
			case "text":
				chars += u16(b.Text)
			case "thinking":
				chars += u16(b.Thinking)
			case "toolCall":
				chars += u16(b.Name) + u16(string(b.Arguments))
			}
		}
	case "toolResult", "custom":
		chars = u16(str)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				chars += u16(b.Text)
			case "image":
				chars += 4800
			}
		}
	case "bashExecution":
		chars = u16(m.Command) + u16(m.Output)
	case "compactionSummary", "branchSummary":
		chars = u16(m.Summary)
	default:
		return 0
	}
	return ceil4(chars)
}

// workspace writes a generated OpenClaw workspace: AGENTS.md far over the
// per-file limit, a few small files, three missing ones, MEMORY.md and a
// daily memory note.
func workspace(t *testing.T, agentsChars int) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; b.Len() < agentsChars; i++ {
		fmt.Fprintf(&b, "Rule %d: run the tests before every commit and keep the diff small.\n", i)
	}
	files := map[string]string{
		"AGENTS.md": b.String(),
		"SOUL.md":   "Be direct. Prefer small, reviewable changes.\n\n\n",
		"TOOLS.md":  "Use rg, not grep. The deploy script is scripts/deploy.sh.\n",
		"USER.md":   "The user is Ana, UTC+1, prefers Go.\n",
		"MEMORY.md": "- 2026-01-02: chose PostgreSQL 16 for the ledger.\n",
	}
	for name, text := range files {
		testkit.WriteFile(t, filepath.Join(dir, name), []byte(text), 0o644)
	}
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(dir, "memory", "2026-01-02.md"), []byte("- ledger on PostgreSQL 16\n"), 0o644)
	return dir
}

func generate(t *testing.T, o sessiongen.Options) (string, *sessiongen.Result) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	res := sessiongen.Write(t, path, o)
	return path, res
}

// rollingSession loads the session of the rolling summary's tests, with a
// config whose summary trigger (2000 tokens) its history crosses.
func rollingSession(t *testing.T) (*transcript.Session, *sessiongen.Result, budget.Config) {
	t.Helper()
	path, gen := generate(t, sessiongen.Options{Seed: 7, Turns: 30, ToolResultBytes: 600})
	s := testkit.Load(t, path)
	t.Cleanup(func() { s.Close() })
	cfg := budget.DefaultConfig()
	cfg.RollingSummary.TriggerThreshold = 2000
	return s, gen, cfg
}

// seedAllocation is VS7's allocation for the default ratios with
// integer arithmetic (15/10/45/20 percent, response at least 4096 taken
// from history, the rest reserve).
func seedAllocation(w int) (sp, bs, hist, resp, reserve int) {
	sp, bs, hist, resp = w*15/100, w*10/100, w*45/100, w*20/100
	if resp < 4096 {
		hist -= 4096 - resp
		if hist < 0 {
			hist = 0
		}
		resp = 4096
	}
	return sp, bs, hist, resp, w - sp - bs - hist - resp
}

func TestAllocateMatchesSeed(t *testing.T) {
	for _, w := range []int{1000, 8000, 16000, 20480, 32768, 128000, 200000, 1000000} {
		a := budget.Allocate(w, budget.DefaultConfig())
		sp, bs, hist, resp, reserve := seedAllocation(w)
		got := [5]int{a.SystemPrompt, a.Bootstrap, a.History, a.Response, a.Reserve}
		if want := [5]int{sp, bs, hist, resp, max(0, reserve)}; got != want {
			t.Errorf("window %d: allocation %v, seed formula %v", w, got, want)
		}
		if a.BootstrapMaxChars() != bs*4 {
			t.Errorf("window %d: maxChars %d, want %d", w, a.BootstrapMaxChars(), bs*4)
		}
	}
	// VS7's worked example: 200k → 20,000 bootstrap tokens, 80,000 chars.
	a := budget.Allocate(200000, budget.DefaultConfig())
	if a.Bootstrap != 20000 || a.BootstrapMaxChars() != 80000 {
		t.Fatalf("200k window: bootstrap %d / %d chars, seed says 20000 / 80000", a.Bootstrap, a.BootstrapMaxChars())
	}
	// VS7's own test: system 20k and bootstrap 5k used of 30k/20k → 135k.
	if hb, rec := a.Reclaim(20000, 5000); hb != 135000 || rec != 25000 {
		t.Fatalf("reclaim: history budget %d (reclaimed %d), VS7 says 135000 (25000)", hb, rec)
	}
	if hb, rec := a.Reclaim(40000, 25000); hb != 110000 || rec != 0 {
		t.Fatalf("over budget: history budget %d (reclaimed %d), VS7 says 110000 (0)", hb, rec)
	}
}

// TestPlanGenerated is the done-when check: a generated session and
// workspace, every region recomputed from VS7's formulas.
func TestPlanGenerated(t *testing.T) {
	const window = 64000
	path, gen := generate(t, sessiongen.Options{Seed: 12, Turns: 40})
	ws := workspace(t, 40000)
	systemPrompt := strings.Repeat("You are a careful coding agent. ", 150)

	s := testkit.Load(t, path)
	defer s.Close()
	var logs []string
	r, err := budget.Plan(context.Background(), budget.Input{
		Session: s, Window: window, Config: budget.DefaultConfig(),
		SystemPrompt: systemPrompt, HaveSystemPrompt: true, Workspace: ws,
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) },
	})
	if err != nil {
		t.Fatal(err)
	}

	// Allocation.
	sp, bs, hist, resp, reserve := seedAllocation(window)
	if r.Budget != (budget.Allocation{Total: window, SystemPrompt: sp, Bootstrap: bs, History: hist, Response: resp, Reserve: reserve}) {
		t.Fatalf("budget %+v, seed %d/%d/%d/%d/%d", r.Budget, sp, bs, hist, resp, reserve)
	}

	// Per-file truncation at bootstrapTokens × 4 chars: head 70%, tail 20%.
	maxChars := bs * 4
	agents, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md"))
	trimmed := strings.TrimRight(string(agents), " \n")
	head, tail := maxChars*7/10, maxChars*2/10
	byName := map[string]budget.BootstrapFile{}
	for _, f := range r.Bootstrap {
		byName[f.Name] = f
	}
	af := byName["AGENTS.md"]
	if !af.Truncated || af.Chars != u16(trimmed) || af.MaxChars != maxChars {
		t.Fatalf("AGENTS.md: %+v; want truncated at %d of %d chars", af, maxChars, u16(trimmed))
	}
	if !strings.HasPrefix(af.Content, trimmed[:head]+"\n") || !strings.HasSuffix(af.Content, "\n"+trimmed[len(trimmed)-tail:]) {
		t.Fatalf("AGENTS.md: injected text is not the first %d + last %d chars", head, tail)
	}
	marker := fmt.Sprintf("\n[...truncated, read AGENTS.md for full content...]\n…(truncated AGENTS.md: kept %d+%d chars of %d)…\n", head, tail, u16(trimmed))
	if af.InjectedChars != head+tail+u16(marker)+2 || !strings.Contains(af.Content, marker) {
		t.Fatalf("AGENTS.md injected %d chars, want %d + %d + marker %d + 2 newlines", af.InjectedChars, head, tail, u16(marker))
	}
	soul := byName["SOUL.md"]
	if soul.Truncated || soul.Content != "Be direct. Prefer small, reviewable changes." {
		t.Fatalf("SOUL.md: %+v (trailing blank lines are trimmed, nothing else)", soul)
	}
	for _, name := range []string{"IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md"} {
		f := byName[name]
		if !f.Missing || f.Content != "[MISSING] Expected at: "+filepath.Join(ws, name) {
			t.Fatalf("%s: %+v, want a [MISSING] line", name, f)
		}
	}
	if byName["MEMORY.md"].Content == "" || len(r.MemoryNotes) != 1 {
		t.Fatalf("MEMORY.md injected and memory/ listed: %+v %+v", byName["MEMORY.md"], r.MemoryNotes)
	}

	// The emitted messages: system prompt, bootstrap, history — each
	// counted here by pi's rule; they add up to the reported total.
	if len(r.Messages) < 3 || r.Messages[0].Region != budget.RegionSystemPrompt || r.Messages[1].Region != budget.RegionBootstrap {
		t.Fatalf("regions: %v", regions(r.Messages))
	}
	var sysText, bootText string
	contentOf(t, r.Messages[0].Message, &sysText)
	contentOf(t, r.Messages[1].Message, &bootText)
	if sysText != systemPrompt {
		t.Fatalf("system message is not the system prompt")
	}
	for _, f := range r.Bootstrap {
		if !strings.Contains(bootText, "## "+f.Name+"\n\n"+f.Content) {
			t.Fatalf("bootstrap message lacks %s", f.Name)
		}
	}
	spActual, bsActual := ceil4(u16(sysText)), ceil4(u16(bootText))
	if r.Actual.SystemPrompt != spActual || r.Actual.Bootstrap != bsActual {
		t.Fatalf("actual system %d bootstrap %d, counted %d %d", r.Actual.SystemPrompt, r.Actual.Bootstrap, spActual, bsActual)
	}

	// Reclaim: unused system and bootstrap budget + reserve go to history.
	reclaimed := max(0, sp-spActual) + max(0, bs-bsActual)
	if r.Reclaimed != reclaimed || r.HistoryBudget != hist+reclaimed+reserve {
		t.Fatalf("reclaimed %d history budget %d; seed: %d, %d+%d+%d", r.Reclaimed, r.HistoryBudget, reclaimed, hist, reclaimed, reserve)
	}

	// History: pi's context per sessiongen, messages counted from the raw lines.
	ctxTokens := make([]int, len(gen.Context.Entries))
	roles := make([]string, len(gen.Context.Entries))
	all := 0
	for i, line := range gen.Context.Lines {
		raw := lineMessage(t, s, line)
		ctxTokens[i] = piTokens(t, raw)
		roles[i] = gen.Lines[line-1].Role
		all += ctxTokens[i]
	}
	if all != gen.Context.HeuristicTokens {
		t.Fatalf("test's own count %d != sessiongen's %d", all, gen.Context.HeuristicTokens)
	}
	if all <= r.HistoryBudget {
		t.Fatalf("history (%d) fits the budget (%d): the test needs a longer session", all, r.HistoryBudget)
	}
	hmsgs := r.Messages[2:]
	start := len(ctxTokens) - len(hmsgs)
	kept := 0
	for i, m := range hmsgs {
		if m.Line != gen.Context.Lines[start+i] {
			t.Fatalf("history message %d is line %d, context has line %d", i, m.Line, gen.Context.Lines[start+i])
		}
		if piTokens(t, m.Message) != ctxTokens[start+i] || m.Tokens != ctxTokens[start+i] {
			t.Fatalf("line %d: %d tokens reported, %d counted", m.Line, m.Tokens, ctxTokens[start+i])
		}
		kept += ctxTokens[start+i]
	}
	// Preserved recent turns: everything from the 5th-last user message.
	users := 0
	preserved := len(roles)
	for i := len(roles) - 1; i >= 0 && users < 5; i-- {
		if roles[i] == "user" {
			users++
			preserved = i
		}
	}
	if start > preserved {
		t.Fatalf("kept from context index %d, but the last 5 user turns start at %d", start, preserved)
	}
	if roles[start] != "user" {
		t.Fatalf("kept history starts with a %s message (a turn split)", roles[start])
	}
	// As many older turns as fit: the kept part fits, one more turn does not.
	if kept > r.HistoryBudget {
		t.Fatalf("kept %d tokens, budget %d", kept, r.HistoryBudget)
	}
	prevTurn := start - 1
	for prevTurn > 0 && roles[prevTurn] != "user" {
		prevTurn--
	}
	more := 0
	for _, n := range ctxTokens[prevTurn:start] {
		more += n
	}
	if start > 0 && kept+more <= r.HistoryBudget {
		t.Fatalf("the previous turn (%d tokens) would still fit (%d of %d)", more, kept, r.HistoryBudget)
	}
	if r.History.MessagesIn != len(roles) || r.History.MessagesOut != len(hmsgs) || r.History.TokensOut != kept || r.Actual.History != kept {
		t.Fatalf("history report %+v, counted in %d out %d tokens %d", r.History, len(roles), len(hmsgs), kept)
	}

	t.Logf("history in %d msgs/%d tok, out %d msgs/%d tok, budget %d, start %d preserved %d", len(roles), all, len(hmsgs), kept, r.HistoryBudget, start, preserved)
	// Totals: the request is the sum of the emitted messages.
	total := spActual + bsActual + kept
	emitted := 0
	for _, m := range r.Messages {
		emitted += piTokens(t, m.Message)
	}
	if r.TotalTokens != total || r.EmittedTokens != total || emitted != total {
		t.Fatalf("total %d emitted %d, counted %d (messages %d)", r.TotalTokens, r.EmittedTokens, total, emitted)
	}
	if r.Free != window-total-resp {
		t.Fatalf("free %d, want %d", r.Free, window-total-resp)
	}

	// VS7's verification lines.
	wantLogs := []string{
		fmt.Sprintf("context management: bootstrap budget=%d tokens, maxChars=%d", bs, bs*4),
		"semantic history: retrieved 0 chunks, 0 tokens",
		fmt.Sprintf("rolling summary: triggering summarization for %d messages", len(roles)),
		fmt.Sprintf("context management: contextWindow=%d systemPrompt=%d bootstrap=%d historyBudget=%d messagesIn=%d messagesOut=%d",
			window, spActual, bsActual, r.HistoryBudget, len(roles), len(hmsgs)),
	}
	if strings.Join(logs, "\n") != strings.Join(wantLogs, "\n") {
		t.Fatalf("log lines:\n%s\nwant:\n%s", strings.Join(logs, "\n"), strings.Join(wantLogs, "\n"))
	}
	// Rolling summary: triggered (history > min(30000, 80% of budget)), not run.
	if thr := min(30000, r.HistoryBudget*8/10); r.Rolling.Threshold != thr || !r.Rolling.Triggered || r.Rolling.Ran || r.Rolling.HistoryTokens != all {
		t.Fatalf("rolling %+v, threshold should be %d", r.Rolling, thr)
	}
}

// TestPlanRollingSummary runs the rolling summary with the offline
// summariser: the summary leads, the last 5 turns follow verbatim, and the
// history budget is what remains after the summary.
func TestPlanRollingSummary(t *testing.T) {
	const window = 64000
	s, gen, cfg := rollingSession(t)
	var logs []string
	r, err := budget.Plan(context.Background(), budget.Input{Session: s, Window: window, Config: cfg,
		SystemPrompt: "sys", HaveSystemPrompt: true, Summarizer: compaction.Extractive{},
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Rolling.Triggered || !r.Rolling.Ran {
		t.Fatalf("rolling summary did not run: %+v", r.Rolling)
	}
	roles := make([]string, len(gen.Context.Lines))
	for i, l := range gen.Context.Lines {
		roles[i] = gen.Lines[l-1].Role
	}
	users, recent := 0, 0
	for i := len(roles) - 1; i >= 0; i-- {
		if roles[i] == "user" {
			if users++; users == 5 {
				recent = i
				break
			}
		}
	}
	if r.Rolling.CoversMessages != recent {
		t.Fatalf("summary covers %d messages, the last 5 turns start at %d", r.Rolling.CoversMessages, recent)
	}
	sm := r.Messages[1]
	var text string
	contentOf(t, sm.Message, &text)
	if sm.Region != budget.RegionSummary || !strings.HasPrefix(text, budget.SummaryPreamble+"\n\n<prior-conversation-summary>\n") ||
		!strings.HasSuffix(text, "\n</prior-conversation-summary>") || sm.Tokens != ceil4(u16(text)) {
		t.Fatalf("summary message %+v", sm)
	}
	if sm.Tokens > 2000+ceil4(u16(budget.SummaryPreamble))+20 {
		t.Fatalf("summary %d tokens, summaryMaxTokens 2000", sm.Tokens)
	}
	hist := r.Messages[2:]
	if len(hist) != len(roles)-recent || hist[0].Line != gen.Context.Lines[recent] {
		t.Fatalf("history after the summary: %d messages from line %d; want the %d from line %d", len(hist), hist[0].Line, len(roles)-recent, gen.Context.Lines[recent])
	}
	if r.History.Budget != r.HistoryBudget-sm.Tokens {
		t.Fatalf("history budget after summary %d, want %d", r.History.Budget, r.HistoryBudget-sm.Tokens)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "rolling summary: injected summary as leading context message") ||
		!strings.HasSuffix(logs[len(logs)-1], "(with rolling summary)") {
		t.Fatalf("logs: %q", logs)
	}
	total := 0
	for _, m := range r.Messages {
		total += piTokens(t, m.Message)
	}
	if total != r.TotalTokens {
		t.Fatalf("emitted %d, reported %d", total, r.TotalTokens)
	}
}

type failing struct{}

func (failing) Name() string { return "llm" }
func (failing) Capabilities() compaction.Capabilities {
	return compaction.Capabilities{}
}
func (failing) Summarize(context.Context, *compaction.Request) (string, error) {
	return "", fmt.Errorf("endpoint returned 503")
}

// TestPlanRollingFallback: a failing summariser falls back to truncation
// with a warning.
func TestPlanRollingFallback(t *testing.T) {
	s, _, cfg := rollingSession(t)
	r, err := budget.Plan(context.Background(), budget.Input{Session: s, Window: 64000, Config: cfg, Summarizer: failing{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rolling.Ran || !strings.Contains(r.Rolling.Fallback, "503") || r.Actual.Summary != 0 {
		t.Fatalf("rolling %+v", r.Rolling)
	}
	found := false
	for _, w := range r.Warnings {
		found = found || strings.Contains(w, "falling back to truncation")
	}
	if !found {
		t.Fatalf("no fallback warning in %q", r.Warnings)
	}
}

func regions(ms []budget.ContextMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Region)
	}
	return out
}

func contentOf(t *testing.T, raw json.RawMessage, into *string) {
	t.Helper()
	var m struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	*into = m.Content
}

// lineMessage is the "message" object of a session line.
func lineMessage(t *testing.T, s *transcript.Session, line int) json.RawMessage {
	t.Helper()
	for _, e := range s.Entries {
		if e.Line == line {
			raw, err := s.Raw(e)
			if err != nil {
				t.Fatal(err)
			}
			var x struct {
				Message json.RawMessage `json:"message"`
			}
			if err := json.Unmarshal(raw, &x); err != nil {
				t.Fatal(err)
			}
			return x.Message
		}
	}
	t.Fatalf("no entry on line %d", line)
	return nil
}
