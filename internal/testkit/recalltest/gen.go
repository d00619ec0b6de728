// Package recalltest generates deterministic pi v3 session transcripts with
// planted facts, for recall's tests and benchmark: realistic shape (user
// turns, assistant text + thinking + tool calls, tool results, bash runs,
// compactions, an abandoned branch) and filler text that never contains a
// fact's words, so "found in the top 3" means the index works.
package recalltest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// Fact is a planted piece of information and the query that must find it.
type Fact struct {
	Name  string
	Query string
	// Line is the 1-based physical line it was written on.
	Line int
	// Where says which kind of entry holds it (user, assistant, toolCall,
	// toolResult, bash, branch, thinking).
	Where string
}

// FactSpec is what to plant: the text carrying the fact, the kind of entry
// that holds it (Fact.Where) and the query that must find it.
type FactSpec struct {
	Name, Where, Text, Query string
}

// DefaultFacts returns distinctive facts (paths, ids, decisions, CJK) for a
// session; seed makes them unique per file.
func DefaultFacts(seed uint64) []FactSpec {
	s := fmt.Sprintf("%04x", seed%0xffff)
	return []FactSpec{
		{"path", "toolCall", "/srv/quokka" + s + "/config/ledger-rotation.yaml", "quokka" + s + " ledger rotation"},
		{"order-id", "user", "The failing order is ORD-" + s + "-QXZ, please look at its refund trail.", "ORD-" + s + "-QXZ refund"},
		{"decision", "assistant", "Decision: we use PostgreSQL advisory locks (lock key " + s + "77) instead of Redlock for the nightly settlement job.", "advisory locks settlement " + s + "77"},
		{"tool-output", "toolResult", "panic: zanzibar" + s + " checksum mismatch in segment 9 of wal archive", "zanzibar" + s + " checksum mismatch"},
		{"bash", "bash", "export KESTREL_TOKEN_TTL_" + s + "=900", "KESTREL_TOKEN_TTL_" + s},
		{"cjk", "user", "部署到生产环境之前必须先运行迁移脚本" + s + "号，并通知值班工程师。", "迁移脚本" + s + "号"},
		{"cjk-short", "assistant", "好的，我们把这个服务命名为「鲲鹏" + s + "」。", "鲲鹏" + s},
		{"thinking", "thinking", "The flaky test is caused by the marmoset" + s + " cache warming race.", "marmoset" + s + " cache race"},
		{"branch", "branch", "On the abandoned branch we tried the capybara" + s + " sharding plan and dropped it.", "capybara" + s + " sharding"},
	}
}

// Options shape a generated session.
type Options struct {
	Seed uint64
	// Turns of user → assistant (→ tool call → result) exchanges.
	Turns int
	// Facts to plant in the first tenth of the session (nil: none).
	Facts []FactSpec
	// ToolOutput is the typical tool result size in bytes (default 1500).
	ToolOutput int
	// Compactions written (0..2); facts end up before the first one's kept
	// region, i.e. out of the active context.
	Compactions int
}

var words = strings.Fields(`function variable module package import export return error value result handler
request response client server config option parameter argument buffer stream reader writer context timeout
retry backoff channel worker queue message event listener callback promise async await thread process signal
file directory path name size length index offset line column token parser lexer syntax tree node edge graph
vertex cache memory heap stack pointer reference struct interface method field type schema table column row
query insert update delete select join filter sort group limit page cursor batch commit rollback transaction
lock mutex atomic counter metric gauge histogram trace span log level debug info warn fatal test case suite
assert expect mock stub fixture setup teardown build compile link binary release version tag branch merge
rebase diff patch review comment issue bug fix feature refactor rename move extract inline document readme
changelog license deploy container image volume network port host route proxy balancer certificate secret
key value map list set array slice string number integer float boolean null undefined object class instance
the a of to in and for with on is that this it as be by we should will can now then first next also just
check run start stop restart open close read write append flush sync wait notify send receive parse format
encode decode marshal unmarshal validate sanitize normalize convert compute render draw layout style theme`)

type gen struct {
	r      *rand.Rand
	w      *bufio.Writer
	line   int
	ts     time.Time
	lastID string
	nextID int
	opts   Options
	facts  []Fact
	err    error
}

func (g *gen) id() string {
	g.nextID++
	return fmt.Sprintf("%08x", uint32(g.opts.Seed)*2654435761+uint32(g.nextID))
}

func (g *gen) sentence(min, max int) string {
	n := min + g.r.IntN(max-min+1)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[g.r.IntN(len(words))]
	}
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

func (g *gen) paragraph(sentences int) string {
	s := make([]string, sentences)
	for i := range s {
		s[i] = g.sentence(6, 18)
	}
	return strings.Join(s, " ")
}

func (g *gen) code(bytes int) string {
	var b strings.Builder
	for b.Len() < bytes {
		fmt.Fprintf(&b, "%s := %s(%s, %d)\n", words[g.r.IntN(len(words))], words[g.r.IntN(len(words))],
			words[g.r.IntN(len(words))], g.r.IntN(1000))
	}
	return b.String()
}

// write emits one entry as a child of the last one (or of parent).
func (g *gen) write(e map[string]any, parent *string) string {
	g.ts = g.ts.Add(time.Duration(1+g.r.IntN(20)) * time.Second)
	id := g.id()
	e["id"] = id
	if parent != nil {
		e["parentId"] = *parent
	} else if g.lastID == "" {
		e["parentId"] = nil
	} else {
		e["parentId"] = g.lastID
	}
	e["timestamp"] = g.ts.UTC().Format("2006-01-02T15:04:05.000Z")
	if m, ok := e["message"].(map[string]any); ok {
		m["timestamp"] = g.ts.UnixMilli()
	}
	b, err := json.Marshal(e)
	if err != nil && g.err == nil {
		g.err = err
	}
	g.w.Write(b)
	g.w.WriteByte('\n')
	g.line++
	g.lastID = id
	return id
}

func text(t string) []any { return []any{map[string]any{"type": "text", "text": t}} }

func (g *gen) user(t string) string {
	return g.write(map[string]any{"type": "message", "message": map[string]any{"role": "user", "content": text(t)}}, nil)
}

func (g *gen) assistant(content []any, stop string) string {
	return g.write(map[string]any{"type": "message", "message": map[string]any{
		"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
		"model": "claude-sonnet-4-5", "usage": map[string]any{"input": 3, "output": 120, "cacheRead": 4000,
			"cacheWrite": 200, "totalTokens": 4323, "cost": map[string]any{"input": 0.00001, "output": 0.0018,
				"cacheRead": 0.0012, "cacheWrite": 0.00075, "total": 0.00376}},
		"stopReason": stop}}, nil)
}

func (g *gen) toolResult(callID, name, out string) string {
	return g.write(map[string]any{"type": "message", "message": map[string]any{
		"role": "toolResult", "toolCallId": callID, "toolName": name, "content": text(out), "isError": false}}, nil)
}

func (g *gen) bash(cmd, out string) string {
	return g.write(map[string]any{"type": "message", "message": map[string]any{
		"role": "bashExecution", "command": cmd, "output": out, "exitCode": 0, "cancelled": false, "truncated": false}}, nil)
}

// fact writes the entries carrying a fact and returns the fact's line.
func (g *gen) fact(f FactSpec) int {
	switch f.Where {
	case "user":
		g.user(g.sentence(5, 12) + " " + f.Text + " " + g.sentence(5, 12))
	case "assistant":
		g.assistant(text(g.sentence(5, 12)+" "+f.Text+" "+g.sentence(5, 12)), "stop")
	case "thinking":
		g.assistant([]any{map[string]any{"type": "thinking", "thinking": g.paragraph(2) + " " + f.Text, "thinkingSignature": "sig"},
			map[string]any{"type": "text", "text": g.sentence(6, 12)}}, "stop")
	case "toolCall":
		call := fmt.Sprintf("toolu_%d", g.line)
		g.assistant([]any{map[string]any{"type": "toolCall", "id": call, "name": "read", "arguments": map[string]any{"path": f.Text}}}, "toolUse")
		at := g.line
		g.toolResult(call, "read", g.code(g.opts.ToolOutput))
		return at
	case "toolResult":
		call := fmt.Sprintf("toolu_%d", g.line)
		g.assistant([]any{map[string]any{"type": "toolCall", "id": call, "name": "bash", "arguments": map[string]any{"command": "go test ./..."}}}, "toolUse")
		g.toolResult(call, "bash", g.code(g.opts.ToolOutput/3)+f.Text+"\n"+g.code(200))
	case "bash":
		g.bash("grep -r TTL deploy/", "deploy/env.sh: "+f.Text+"\n"+g.code(300))
	case "branch":
		// A side branch: user + assistant under the current leaf, then a
		// branch_summary that goes back to the branch point, so the main
		// line continues without them.
		branchPoint := g.lastID
		g.user(g.sentence(6, 12) + " " + f.Text)
		at := g.line
		g.assistant(text(g.paragraph(2)), "stop")
		g.write(map[string]any{"type": "branch_summary", "fromId": branchPoint,
			"summary": "Explored an alternative; abandoned.", "fromHook": false}, &branchPoint)
		return at
	}
	return g.line
}

func (g *gen) turn() {
	g.user(g.paragraph(1 + g.r.IntN(3)))
	switch g.r.IntN(4) {
	case 0:
		g.assistant([]any{map[string]any{"type": "thinking", "thinking": g.paragraph(2), "thinkingSignature": "sig"},
			map[string]any{"type": "text", "text": g.paragraph(2 + g.r.IntN(4))}}, "stop")
	default:
		for k := 0; k < 1+g.r.IntN(3); k++ {
			call := fmt.Sprintf("toolu_%d", g.line)
			name := []string{"read", "bash", "edit", "write"}[g.r.IntN(4)]
			g.assistant([]any{map[string]any{"type": "text", "text": g.sentence(5, 15)},
				map[string]any{"type": "toolCall", "id": call, "name": name, "arguments": map[string]any{
					"path": "src/" + words[g.r.IntN(len(words))] + "/" + words[g.r.IntN(len(words))] + ".go"}}}, "toolUse")
			size := g.opts.ToolOutput/2 + g.r.IntN(g.opts.ToolOutput+1)
			if g.r.IntN(20) == 0 {
				size *= 10
			}
			g.toolResult(call, name, g.code(size))
		}
		g.assistant(text(g.paragraph(1+g.r.IntN(3))), "stop")
	}
	if g.r.IntN(15) == 0 {
		g.bash("make "+words[g.r.IntN(len(words))], g.code(400))
	}
}

// Generate writes a session to w and returns the planted facts.
func Generate(w io.Writer, opts Options) ([]Fact, error) {
	if opts.Turns <= 0 {
		opts.Turns = 100
	}
	if opts.ToolOutput <= 0 {
		opts.ToolOutput = 1500
	}
	g := &gen{r: rand.New(rand.NewPCG(opts.Seed, 0x5eed)), w: bufio.NewWriterSize(w, 1<<20), opts: opts,
		ts: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC).Add(time.Duration(opts.Seed%1000) * time.Hour)}
	hdr, _ := json.Marshal(map[string]any{"type": "session", "version": 3,
		"id": fmt.Sprintf("0b6f3c1e-5a47-4d0e-9c1a-%012x", opts.Seed), "timestamp": g.ts.Format("2006-01-02T15:04:05.000Z"),
		"cwd": "/home/dev/shop"})
	g.w.Write(hdr)
	g.w.WriteByte('\n')
	g.line = 1
	g.write(map[string]any{"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"}, nil)

	plantUntil := max(opts.Turns/10, len(opts.Facts))
	fi := 0
	var keepID string
	compactAt := []int{opts.Turns / 2, opts.Turns * 4 / 5}
	for t := 0; t < opts.Turns; t++ {
		if fi < len(opts.Facts) && t >= fi*plantUntil/max(1, len(opts.Facts)) {
			f := opts.Facts[fi]
			g.facts = append(g.facts, Fact{Name: f.Name, Query: f.Query, Where: f.Where, Line: g.fact(f)})
			fi++
		}
		g.turn()
		for c := 0; c < opts.Compactions && c < len(compactAt); c++ {
			if t == compactAt[c]-2 {
				keepID = g.lastID
			}
			if t == compactAt[c] {
				g.write(map[string]any{"type": "compaction", "summary": "## Goal\n" + g.paragraph(3) + "\n\n## Progress\n" + g.paragraph(4),
					"firstKeptEntryId": keepID, "tokensBefore": 170000 + g.r.IntN(10000),
					"details": map[string]any{"readFiles": []string{}, "modifiedFiles": []string{}}, "fromHook": false}, nil)
			}
		}
	}
	if err := g.w.Flush(); err != nil {
		return nil, err
	}
	return g.facts, g.err
}

// TempFile generates a session into a file named name in a new
// t.TempDir() and returns its path.
func TempFile(t testing.TB, name string, opts Options) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	Write(t, p, opts)
	return p
}

// Write generates a session at path for a test and returns the planted
// facts; a generator that fails fails the test, naming the file.
func Write(t testing.TB, path string, opts Options) []Fact {
	t.Helper()
	return sessiongen.ToTestFile(t, path, func(w io.Writer) ([]Fact, error) { return Generate(w, opts) })
}

// WriteFile generates a session into path.
func WriteFile(path string, opts Options) ([]Fact, error) {
	return sessiongen.ToFile(path, func(w io.Writer) ([]Fact, error) { return Generate(w, opts) })
}
