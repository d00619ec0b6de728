package agentkit

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// Sessions the real agents write themselves (issue 35), for tests that
// read them: each agent runs offline against a fake model server through
// a scripted session — tool calls, a failing tool, an image, a subagent,
// a manual and an automatic compaction, a resume and a fork, as far as
// the agent supports each offline — and the fake server's log of what the
// agent sent is kept beside the files, so a test can check what it reads
// against what the agent itself sent.

// WrittenSession is one agent's self-written session.
type WrittenSession struct {
	Agent string
	// File is the main transcript; Fork is the forked session's (""
	// when the agent cannot fork offline); Side are side-chain files
	// (subagents).
	File, Fork string
	Side       []string
	// Home is the agent's HOME (its session store is under it).
	Home string
	// Bodies are the request bodies the fake server received, in order;
	// Last is the last one the main session sent (not a side request).
	Bodies [][]byte
	Last   []byte
	// ForkLast and SideLast are the last requests of the fork and of the
	// (first) side chain.
	ForkLast, SideLast []byte
	// Reset is a second session with a /reset before its last turn
	// (OpenClaw writes a "reset" boundary entry), ResetLast its last
	// request; "" and nil for the agents that write none.
	Reset     string
	ResetLast []byte
	// Touched are the files the agent's tools wrote.
	Touched []string
	// Words are words the agent sent that a search must find.
	Words []string
	// Missing says what the agent could not do offline.
	Missing []string
}

// A 1×1 PNG, for the agents' image inputs.
var pixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// Cues of the scripted sessions (the fake model keys its answers on them).
const (
	writtenToolsCue    = "TOOLS-NOW"
	writtenSubagentCue = "SUBAGENT-TASK"
	writtenInflateCue  = "INFLATE-USAGE"
	writtenLastCue     = "Who is first on call"
	// WrittenSecret is a token the second prompt of every written
	// session carries (a GitHub fine-grained token's shape): the agent
	// sends it, lint must find it in every form of the session.
	WrittenSecret = "github_pat_11ABCDEFG0123456789_" + "q8Wm2Rt5Yx7Kp3Ln9Vb4Hc6Jd1Fg0Sz8Aw5Ee2Rr7Tt3Uu9Ii4Oo1Pp6"
	// WrittenMarker is a word of the first prompt of every written
	// session (search must find it).
	WrittenMarker = "zq-ledger-7"
)

// writtenProject makes the project the scripted sessions work in, under
// home: billing/ with pixel.png (the image the agents read) and the path
// of notes.txt (the file they write).
func writtenProject(home string) (proj, png, notes string, err error) {
	proj = filepath.Join(home, "billing")
	if err = os.MkdirAll(proj, 0o700); err != nil {
		return
	}
	png, notes = filepath.Join(proj, "pixel.png"), filepath.Join(proj, "notes.txt")
	err = os.WriteFile(png, pixelPNG, 0o600)
	return
}

// toolResults counts the tool results in a request body (Anthropic
// tool_result blocks or Responses function_call_output items).
func toolResults(body []byte) int {
	return bytes.Count(body, []byte(`"type":"tool_result"`)) + bytes.Count(body, []byte(`"type":"function_call_output"`))
}

// offeredTool is the first of names the request offers as a tool.
func offeredTool(body []byte, names ...string) string {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	for _, n := range names {
		for _, tl := range req.Tools {
			if tl.Name == n {
				return n
			}
		}
	}
	return ""
}

// ClaudeCodeSession has the real Claude Code write a session under dir
// (its HOME): a turn of tool calls (Write, a failing Bash, Read of a PNG —
// an image — and the Task tool, whose subagent reads a file: a side
// chain), a resume, a manual /compact, an automatic compaction (the fake
// server answers one request "prompt is too long": Claude Code 2.1.332
// compacts reactively and retries), a last turn with a tool call, and a
// fork (--fork-session).
func ClaudeCodeSession(a *Agents, dir string) (*WrittenSession, error) {
	srv := llmtest.NewAnthropic()
	defer srv.Close()
	home := dir
	proj, png, notes, err := writtenProject(home)
	if err != nil {
		return nil, err
	}
	ws := &WrittenSession{Agent: "claude-code", Home: home, Touched: []string{notes}}
	// Set by the fake server's handler (another goroutine).
	var autoDone, noTask atomic.Bool
	srv.Answer = func(body []byte) llmtest.Turn {
		main := bytes.Contains(body, []byte(writtenToolsCue))
		switch {
		case bytes.Contains(body, []byte("summary of the conversation")):
			return llmtest.Turn{Text: "<summary>\n1. Primary Request: migrate the billing service (zq-ledger-7).\n2. Files: notes.txt written.\n</summary>"}
		case strings.HasPrefix(firstUserText(body), writtenSubagentCue):
			if toolResults(body) == 0 {
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_sub1", Name: "Read", Arguments: map[string]any{"file_path": notes}}}
			}
			return llmtest.Turn{Text: "The notes hold one line about the ledger."}
		case main && !bytes.Contains(body, []byte("/compact")):
			// The tool turn, keyed on how many results came back.
			switch toolResults(body) {
			case 0:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_w1", Name: "Write", Arguments: map[string]any{"file_path": notes, "content": "Ledger zq-ledger-7 moves to Postgres.\n"}}}
			case 1:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_w2", Name: "Bash", Arguments: map[string]any{"command": "ls /nonexistent-zq-dir", "description": "List a missing directory"}}}
			case 2:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_w3", Name: "Read", Arguments: map[string]any{"file_path": png}}}
			case 3:
				task := offeredTool(body, "Task", "Agent")
				if task == "" {
					noTask.Store(true)
					break
				}
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_w4", Name: task, Arguments: map[string]any{
					"description": "Read the notes", "subagent_type": "general-purpose", "run_in_background": false,
					"prompt": writtenSubagentCue + ": read " + notes + " and say what it holds."}}}
			}
		}
		if bytes.Contains(body, []byte(writtenLastCue)) && !bytes.Contains(body, []byte("toolu_last")) {
			// The last turn reads a file: its call is in the last request.
			return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "toolu_last", Name: "Read", Arguments: map[string]any{"file_path": notes}}}
		}
		if bytes.Contains(body, []byte(writtenInflateCue)) && autoDone.CompareAndSwap(false, true) {
			// Claude Code 2.1.332 compacts automatically when the API
			// says "prompt is too long", then retries. (A threshold
			// compaction did not fire in -p mode: neither a reported
			// usage near the window nor CLAUDE_CODE_AUTO_COMPACT_WINDOW
			// and CLAUDE_AUTOCOMPACT_PCT_OVERRIDE made it compact.)
			return llmtest.Turn{Status: 400, ErrorBody: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`}
		}
		return llmtest.Turn{Text: "Noted."}
	}
	// IS_SANDBOX lets root use --dangerously-skip-permissions.
	env := []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=x", "IS_SANDBOX=1"}
	run := func(args ...string) (string, error) {
		r := RunAgent(context.Background(), a.Claude, home, proj, env, 120*time.Second,
			append([]string{"-p", "--output-format", "json", "--dangerously-skip-permissions"}, args...)...)
		if r.Err != nil {
			return "", fmt.Errorf("claude %v: %w (%s)\n%s\n%s", args, r.Err, r.Took, tail(r.Stdout, 2000), tail(r.Stderr, 2000))
		}
		var out struct {
			SessionID string `json:"session_id"`
			IsError   bool   `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.IsError {
			return "", fmt.Errorf("claude %v: %w\n%s", args, err, tail(r.Stdout, 2000))
		}
		return out.SessionID, nil
	}
	sid, err := run(writtenToolsCue + ": we migrate the billing service; the database is " + WrittenMarker + " on db-7.internal. Write the notes, list the old dumps, look at the pixel and have a subagent read the notes.")
	if err != nil {
		return nil, err
	}
	if _, err := run("--resume", sid, "The deadline is 2027-03-14 and the retry budget stays at 7 attempts; push with "+WrittenSecret+"."); err != nil {
		return nil, err
	}
	if _, err := run("--resume", sid, "/compact"); err != nil {
		return nil, err
	}
	if _, err := run("--resume", sid, writtenInflateCue+": paste of the old runbook."); err != nil {
		return nil, err
	}
	if _, err := run("--resume", sid, writtenLastCue+"? Ana, then Bo."); err != nil {
		return nil, err
	}
	ws.Bodies = srv.Bodies()
	ws.Last = ws.Bodies[len(ws.Bodies)-1]
	ws.Words = []string{writtenLastCue, "2027-03-14"}
	fork, err := run("--resume", sid, "--fork-session", "In the fork: try MySQL instead.")
	if err != nil {
		return nil, err
	}
	all := srv.Bodies()
	ws.ForkLast = all[len(all)-1]
	for _, b := range all {
		if strings.HasPrefix(firstUserText(b), writtenSubagentCue) {
			ws.SideLast = b
		}
	}
	if noTask.Load() {
		ws.Missing = append(ws.Missing, "claude-code: no Task/Agent tool offered (no subagent)")
	}
	files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", sid+".jsonl"))
	if len(files) != 1 {
		return nil, fmt.Errorf("claude-code: transcript of %s: %v", sid, files)
	}
	ws.File = files[0]
	data, _ := os.ReadFile(ws.File)
	for _, trig := range []string{"manual", "auto"} {
		if !bytes.Contains(data, []byte(`"trigger":"`+trig+`"`)) {
			ws.Missing = append(ws.Missing, "claude-code: no "+trig+" compaction in the transcript")
		}
	}
	if fork != sid {
		ws.Fork = filepath.Join(filepath.Dir(ws.File), fork+".jsonl")
	} else {
		ws.Missing = append(ws.Missing, "claude-code: --fork-session kept the session id")
	}
	filepath.Walk(filepath.Join(home, ".claude", "projects"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".jsonl") && p != ws.File && p != ws.Fork {
			ws.Side = append(ws.Side, p)
		}
		return nil
	})
	return ws, nil
}

// firstUserText is the last text block of the first message of an
// Anthropic request (Claude Code puts its reminders before the prompt).
func firstUserText(body []byte) string {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(req.Messages[0].Content, &s) == nil {
		return s
	}
	var blocks []struct{ Type, Text string }
	json.Unmarshal(req.Messages[0].Content, &blocks)
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].Type == "text" {
			return blocks[i].Text
		}
	}
	return ""
}

// CodexSession has the real Codex write a session under dir (its HOME):
// an image attached to the first prompt (-i), a turn of tool calls
// (exec_command writing a file, a failing exec_command, view_image, and
// multi_agent_v1.spawn_agent, whose subagent answers in its own rollout:
// a side chain), a resume, an automatic compaction
// (model_auto_compact_token_limit), a turn after it, and a fork
// (codex exec fork).
func CodexSession(a *Agents, dir string) (*WrittenSession, error) {
	srv := llmtest.NewResponses()
	defer srv.Close()
	home := dir
	proj, png, notes, err := writtenProject(home)
	if err != nil {
		return nil, err
	}
	codexHome := filepath.Join(home, ".codex")
	os.MkdirAll(codexHome, 0o700)
	cfg := "model = \"fake-model\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + srv.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_KEY\"\n"
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	ws := &WrittenSession{Agent: "codex", Home: home, Touched: []string{notes},
		Missing: []string{"codex: no manual compaction (codex exec sends \"/compact\" as text; /compact is the TUI's)"}}
	var toolsDone atomic.Bool // set by the fake server's handler
	srv.Answer = func(body []byte) llmtest.Turn {
		main := bytes.Contains(body, []byte(writtenToolsCue))
		switch {
		case bytes.Contains(body, []byte("CONTEXT CHECKPOINT COMPACTION")):
			return llmtest.Turn{Text: "Summary: migrate the billing service (zq-ledger-7); notes.txt written."}
		case bytes.Contains(body, []byte(writtenSubagentCue)) && !main:
			return llmtest.Turn{Text: "The notes hold one line about the ledger."}
		case bytes.Contains(body, []byte(writtenLastCue)) && !bytes.Contains(body, []byte("call_last")):
			// The last turn views the image: its call is in the last request.
			return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "call_last", Name: "view_image", Arguments: map[string]any{"path": png}}}
		case main && !toolsDone.Load():
			// The tool turn, keyed on how many results came back (the
			// user's messages outlive Codex's compaction: the cue alone
			// would start the turn over).
			switch bytes.Count(body, []byte(`"type":"function_call_output"`)) {
			case 0:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "call_w1", Name: "exec_command", Arguments: map[string]any{"cmd": "printf 'Ledger zq-ledger-7 moves to Postgres.\\n' > notes.txt"}}}
			case 1:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "call_w2", Name: "exec_command", Arguments: map[string]any{"cmd": "ls /nonexistent-zq-dir"}}}
			case 2:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "call_w3", Name: "view_image", Arguments: map[string]any{"path": png}}}
			case 3:
				return llmtest.Turn{Tool: &llmtest.ToolCall{ID: "call_w4", Name: "spawn_agent", Namespace: "multi_agent_v1", Arguments: map[string]any{"message": writtenSubagentCue + ": say what " + notes + " holds."}}}
			}
			toolsDone.Store(true)
		}
		return llmtest.Turn{Text: "Noted, " + strings.Repeat("all good. ", 20)}
	}
	env := []string{"FAKE_KEY=x", "CODEX_HOME=" + codexHome}
	run := func(args ...string) (string, error) {
		base := []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json"}
		if len(args) > 0 && (args[0] == "resume" || args[0] == "fork") {
			base = append([]string{"exec", args[0], "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json"}, args[1:]...)
			args = nil
		}
		r := RunAgent(context.Background(), a.Codex, home, proj, env, 120*time.Second, append(base, args...)...)
		if r.Err != nil {
			return "", fmt.Errorf("codex %v: %w (%s)\n%s\n%s", args, r.Err, r.Took, tail(r.Stdout, 2000), tail(r.Stderr, 2000))
		}
		for _, l := range strings.Split(r.Stdout, "\n") {
			var ev struct {
				ThreadID string `json:"thread_id"`
			}
			if json.Unmarshal([]byte(l), &ev) == nil && ev.ThreadID != "" {
				return ev.ThreadID, nil
			}
		}
		return "", fmt.Errorf("codex %v: no thread id in\n%s\n%s", args, tail(r.Stdout, 2000), tail(r.Stderr, 2000))
	}
	id, err := run("-i", png, "--", writtenToolsCue+": we migrate the billing service; the database is "+WrittenMarker+" on db-7.internal. Write the notes, list the old dumps, look at the pixel and have a subagent read the notes.")
	if err != nil {
		return nil, err
	}
	if _, err := run("resume", id, "The deadline is 2027-03-14 and the retry budget stays at 7 attempts; push with "+WrittenSecret+"."); err != nil {
		return nil, err
	}
	if _, err := run("resume", "-c", "model_auto_compact_token_limit=3000", id, "Paste of the old runbook: "+strings.Repeat("Context line. ", 300)); err != nil {
		return nil, err
	}
	if _, err := run("resume", id, writtenLastCue+"? Ana, then Bo."); err != nil {
		return nil, err
	}
	ws.Bodies = srv.Bodies()
	ws.Last = ws.Bodies[len(ws.Bodies)-1]
	ws.Words = []string{writtenLastCue, "2027-03-14"}
	fork, err := run("fork", id, "In the fork: try MySQL instead.")
	if err != nil {
		return nil, err
	}
	all := srv.Bodies()
	ws.ForkLast = all[len(all)-1]
	for _, b := range all {
		if bytes.Contains(b, []byte(writtenSubagentCue)) && !bytes.Contains(b, []byte(writtenToolsCue)) {
			ws.SideLast = b
		}
	}
	filepath.Walk(filepath.Join(codexHome, "sessions"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		switch {
		case strings.HasSuffix(p, id+".jsonl"):
			ws.File = p
		case strings.HasSuffix(p, fork+".jsonl") && fork != id:
			ws.Fork = p
		default:
			ws.Side = append(ws.Side, p)
		}
		return nil
	})
	if ws.File == "" {
		return nil, fmt.Errorf("codex: no rollout of thread %s under %s", id, codexHome)
	}
	if ws.Fork == "" {
		ws.Missing = append(ws.Missing, "codex: exec fork wrote no new rollout")
	}
	if data, _ := os.ReadFile(ws.File); !bytes.Contains(data, []byte(`"type":"compacted"`)) {
		ws.Missing = append(ws.Missing, "codex: no automatic compaction in the rollout")
	}
	if len(ws.Side) == 0 {
		ws.Missing = append(ws.Missing, "codex: no subagent rollout")
	}
	return ws, nil
}

// Sent is what one logged request sent the model, read from its body
// (Anthropic Messages or OpenAI Responses).
type Sent struct {
	// Chars is the text of the conversation sent: messages (text,
	// thinking, tool calls' names and arguments, tool results), an image
	// counted as 4800 chars as pi's estimate does; the system prompt
	// (Anthropic's system, Codex's base instructions — its first
	// developer message) and the tool schemas are left out, as they are
	// not in the transcripts.
	Chars int
	// LastUser is the text of the last user message (reminders left out).
	LastUser string
	// Files are the paths the tool calls in the request name.
	Files []string
}

const imageChars = 4800

// ReadSent reads a logged request body.
func ReadSent(body []byte) Sent {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Output    json.RawMessage `json:"output"`
		} `json:"input"`
	}
	json.Unmarshal(body, &req)
	var s Sent
	addFiles := func(args []byte) {
		var a map[string]any
		json.Unmarshal(args, &a)
		for _, k := range []string{"file_path", "path"} {
			if p, ok := a[k].(string); ok && p != "" {
				s.Files = append(s.Files, p)
			}
		}
	}
	for _, m := range req.Messages {
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			s.Chars += len(str)
			if m.Role == "user" {
				s.LastUser = str
			}
			continue
		}
		var blocks []struct {
			Type, Text, Thinking, Name string
			Input                      json.RawMessage
			Content                    json.RawMessage
		}
		json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				s.Chars += len(b.Text)
				if m.Role == "user" && !strings.HasPrefix(b.Text, "<system-reminder>") {
					s.LastUser = b.Text
				}
			case "thinking":
				s.Chars += len(b.Thinking)
			case "image":
				s.Chars += imageChars
			case "tool_use":
				s.Chars += len(b.Name) + len(b.Input)
				addFiles(b.Input)
			case "tool_result":
				s.Chars += resultChars(b.Content)
			}
		}
	}
	for i, it := range req.Input {
		switch it.Type {
		case "message":
			if i == 0 && it.Role == "developer" {
				continue // the base instructions
			}
			var parts []struct{ Type, Text string }
			json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				switch p.Type {
				case "input_text", "output_text":
					s.Chars += len(p.Text)
					if it.Role == "user" {
						s.LastUser = p.Text
					}
				case "input_image":
					s.Chars += imageChars
				}
			}
		case "function_call":
			s.Chars += len(it.Name) + len(it.Arguments)
			addFiles([]byte(it.Arguments))
		case "function_call_output":
			s.Chars += resultChars(it.Output)
		}
	}
	return s
}

// resultChars is the size of a tool result: a string, or blocks of text
// and images.
func resultChars(raw json.RawMessage) int {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return len(str)
	}
	var blocks []struct{ Type, Text string }
	json.Unmarshal(raw, &blocks)
	n := 0
	for _, b := range blocks {
		switch b.Type {
		case "text", "input_text", "output_text":
			n += len(b.Text)
		case "image", "input_image":
			n += imageChars
		}
	}
	return n
}

// OpenClawSession has the real OpenClaw Gateway write a session into its
// SQLite store under dir (its HOME): two turns, a manual compaction
// (`openclaw sessions compact`, the model's own summary), a last turn;
// and a second session (Reset, ResetLast): a turn, /reset, a last turn.
// File is "<store>#agent:main:main"; Last is the last chat-completions
// request of the session (the fake server's log). The Gateway's tools
// stay off (the fake model answers text): no tool calls, no image, no
// fork, no subagent — reported in Missing.
func OpenClawSession(in *OpenClawInstall, dir string) (*WrittenSession, error) {
	srv := llmtest.New()
	defer srv.Close()
	srv.UsageFromBody = true
	srv.Reply = func(r llmtest.Request) string {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "<conversation>") {
				return "## Goal\nMigrate the billing service (" + WrittenMarker + ") by 2027-03-14.\n\n## Decisions\n- none"
			}
		}
		return fmt.Sprintf("Noted (reply %d).", len(r.Messages))
	}
	home := dir
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	model := map[string]any{"id": "fake-model", "name": "fake-model", "reasoning": false, "input": []string{"text"},
		"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 200000, "maxTokens": 1024}
	cfg := map[string]any{
		"gateway": map[string]any{"port": port, "mode": "local", "bind": "loopback", "auth": map[string]any{"mode": "none"}},
		"agents": map[string]any{
			"defaults": map[string]any{"model": map[string]any{"primary": "fake/fake-model"}, "workspace": filepath.Join(home, "ws")},
			"list":     []any{map[string]any{"id": "main", "default": true, "workspace": filepath.Join(home, "ws")}},
		},
		"models": map[string]any{"mode": "merge", "providers": map[string]any{"fake": map[string]any{
			"baseUrl": srv.BaseURL(), "apiKey": "fake-key", "api": "openai-completions", "models": []any{model}}}},
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	cfgPath := filepath.Join(home, ".openclaw", "openclaw.json")
	os.MkdirAll(filepath.Dir(cfgPath), 0o755)
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		return nil, err
	}
	env := []string{"HOME=" + home, "PATH=" + filepath.Dir(in.Node) + ":" + os.Getenv("PATH"), "NO_COLOR=1", "TMPDIR=" + os.TempDir()}
	gw, err := StartGateway(in, home, port, env, 180*time.Second)
	if err != nil {
		return nil, err
	}
	defer gw.Stop()
	const key = "agent:main:main"
	turn := func(msg string) error {
		_, err := gw.CLI(240*time.Second, "agent", "--agent", "main", "--session-key", key, "--message", msg, "--json")
		return err
	}
	for _, m := range []string{
		"We migrate the billing service; the database is " + WrittenMarker + " on db-7.internal.",
		"The deadline is 2027-03-14 and the retry budget stays at 7 attempts; push with " + WrittenSecret + ".",
	} {
		if err := turn(m); err != nil {
			return nil, err
		}
	}
	if _, err := gw.CLI(240*time.Second, "sessions", "compact", key, "--json"); err != nil {
		return nil, err
	}
	if err := turn(writtenLastCue + "? Ana, then Bo."); err != nil {
		return nil, err
	}
	// A second session: a turn, /reset (a "reset" boundary entry in the
	// same session), a last turn, which OpenClaw sends without the first.
	const resetKey = "agent:main:reset"
	// (The last prompt is long enough that the reply, in ctxtool's
	// context and not in the request, stays within the matrix's margin.)
	after := "After the reset: who is on call this week, and who covers the billing migration's cut-over night? " +
		"List the rota in order, say who holds the pager for the ledger database, and name the person who signs off the retry budget " +
		"before the deadline; keep it to one line per person, with their hand-over time and the channel they answer on."
	for _, m := range []string{"Before the reset: the database is " + WrittenMarker + ".", "/reset", after} {
		if _, err := gw.CLI(240*time.Second, "agent", "--agent", "main", "--session-key", resetKey, "--message", m, "--json"); err != nil {
			return nil, err
		}
	}
	store := filepath.Join(home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite")
	ws := &WrittenSession{Agent: "openclaw", Home: home, Reset: store + "#" + resetKey,
		File:    store + "#" + key,
		Words:   []string{writtenLastCue, "2027-03-14"},
		Missing: []string{"openclaw: no tool calls, image, subagent or fork (text-only fake model); no automatic compaction (a manual one)"}}
	for _, r := range srv.Requests() {
		ws.Bodies = append(ws.Bodies, r.Body)
		for _, m := range r.Messages {
			if strings.Contains(m.Content, writtenLastCue) {
				ws.Last = r.Body
			}
			if strings.Contains(m.Content, "After the reset") {
				ws.ResetLast = r.Body
			}
		}
	}
	if ws.Last == nil || ws.ResetLast == nil {
		return nil, fmt.Errorf("openclaw: no request carried the last prompt of each session (%d requests)", len(ws.Bodies))
	}
	return ws, nil
}

// ReadSentOpenClaw reads a chat-completions request of the OpenClaw
// Gateway as ReadSent does, less what OpenClaw adds as it sends and does
// not store in the session: the system prompt, the internal-context
// block (<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>…), the "[Wed 2026-12-02
// 06:02 UTC] " stamp before a prompt, and the wrapper around a
// compaction summary (what is outside <summary>…</summary>).
func ReadSentOpenClaw(body []byte) Sent {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	var s Sent
	for _, m := range req.Messages {
		if m.Role == "system" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			var parts []struct{ Type, Text string }
			json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				if p.Type == "text" {
					text += p.Text
				} else if p.Type == "image_url" {
					s.Chars += imageChars
				}
			}
		}
		if strings.HasPrefix(text, "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>") {
			continue
		}
		if i, j := strings.Index(text, "<summary>\n"), strings.LastIndex(text, "\n</summary>"); i >= 0 && j > i {
			text = text[i+len("<summary>\n") : j]
		}
		if m.Role == "user" && strings.HasPrefix(text, "[") {
			if i := strings.Index(text, " UTC] "); i > 0 && i < 40 {
				text = text[i+len(" UTC] "):]
			}
		}
		if m.Role == "user" {
			// The openai-completions transport moves the system prompt's
			// relocatable region — its "Runtime: agent=… | session=…" line
			// (dist system-prompt-params-*.mjs buildRuntimeLine) — into a
			// user message as it sends (@openclaw/ai
			// openai-completions-stream-*.mjs relocateNonBehavioralRegion);
			// the stored message does not hold it.
			if i := strings.LastIndex(text, "\n\nRuntime: "); i >= 0 && !strings.Contains(text[i+2:], "\n") {
				text = text[:i]
			}
		}
		s.Chars += len(text)
		if m.Role == "user" {
			s.LastUser = text
		}
	}
	return s
}
