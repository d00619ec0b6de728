package compaction

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

// gen writes small synthetic pi sessions (v3 or v1) for edge cases the
// fixtures lack. Assistant usage grows like a provider that counts 1.3×
// pi's heuristic plus a 4,000-token system prompt, so the calibrated
// estimator has something to learn.
type gen struct {
	v      int
	lines  []string
	parent string
	n      int
	t      time.Time
	real   float64 // provider tokens of the context so far
	ids    []string
}

func newGen(v int) *gen {
	g := &gen{v: v, t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), real: 4000}
	h := map[string]any{"type": "session", "id": "sess-0001", "timestamp": g.ts(), "cwd": "/work/proj"}
	if v >= 2 {
		h["version"] = v
	} else {
		h["provider"], h["modelId"], h["thinkingLevel"] = "anthropic", "claude-sonnet-4-5", "off"
	}
	g.emit(h)
	return g
}

func (g *gen) ts() string {
	g.t = g.t.Add(1500 * time.Millisecond)
	return g.t.Format("2006-01-02T15:04:05.000Z")
}

func (g *gen) emit(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	g.lines = append(g.lines, string(b))
}

// entry appends an entry and returns its id ("" for v1).
func (g *gen) entry(m map[string]any) string {
	m["timestamp"] = g.ts()
	id := ""
	if g.v >= 2 {
		g.n++
		id = fmt.Sprintf("e%07x", g.n)
		m["id"] = id
		if g.parent == "" {
			m["parentId"] = nil
		} else {
			m["parentId"] = g.parent
		}
		g.parent = id
	}
	g.ids = append(g.ids, id)
	g.emit(m)
	return id
}

func u16(s string) int { return len(utf16.Encode([]rune(s))) }

func (g *gen) grow(chars int) { g.real += math.Ceil(float64(chars)/4) * 1.3 }

func (g *gen) user(text string) string {
	g.grow(u16(text))
	return g.entry(map[string]any{"type": "message", "message": map[string]any{
		"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": g.t.UnixMilli()}})
}

type call struct{ id, name, path, cmd string }

func (g *gen) assistant(text string, calls []call) string {
	content := []any{}
	chars := 0
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
		chars += u16(text)
	}
	for _, c := range calls {
		args := map[string]any{}
		if c.path != "" {
			args["path"] = c.path
		}
		if c.cmd != "" {
			args["command"] = c.cmd
		}
		ab, _ := json.Marshal(args)
		chars += len(c.name) + len(ab)
		content = append(content, map[string]any{"type": "toolCall", "id": c.id, "name": c.name, "arguments": args})
	}
	stop := "stop"
	if len(calls) > 0 {
		stop = "toolUse"
	}
	g.grow(chars)
	total := int(g.real)
	return g.entry(map[string]any{"type": "message", "message": map[string]any{
		"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
		"model": "claude-sonnet-4-5", "usage": map[string]any{"input": total - 200, "output": 200, "cacheRead": 0,
			"cacheWrite": 0, "totalTokens": total, "cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
		"stopReason": stop, "timestamp": g.t.UnixMilli()}})
}

func (g *gen) result(c call, text string, isErr bool) string {
	g.grow(u16(text))
	return g.entry(map[string]any{"type": "message", "message": map[string]any{
		"role": "toolResult", "toolCallId": c.id, "toolName": c.name,
		"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isErr, "timestamp": g.t.UnixMilli()}})
}

func (g *gen) modelChange() string {
	return g.entry(map[string]any{"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
}

func (g *gen) compaction(summary string, firstKept string, firstKeptIndex int) string {
	m := map[string]any{"type": "compaction", "summary": summary, "tokensBefore": 150000,
		"details": map[string]any{"readFiles": []string{"docs/old-read.md"}, "modifiedFiles": []string{"src/old-mod.go"}}}
	if g.v >= 2 {
		m["firstKeptEntryId"] = firstKept
		m["fromHook"] = false
	} else {
		m["firstKeptEntryIndex"] = firstKeptIndex
	}
	return g.entry(m)
}

func (g *gen) write(t testing.TB, name string) string {
	return testkit.WriteTemp(t, name, []byte(strings.Join(g.lines, "\n")+"\n"))
}

var lorem = "The quick brown fox checks the build output, reads the failing test and edits the handler so the retry loop backs off properly. "

func para(n int) string { return strings.Repeat(lorem, n) }

// turns writes the tasks from, …, to-1 with turn: the filler history every
// scenario is built around.
func (g *gen) turns(from, to, k, resultChars int) {
	for i := from; i < to; i++ {
		g.turn(i, k, resultChars)
	}
}

// turn is a user request, k tool round trips and a final answer.
func (g *gen) turn(i, k int, resultChars int) {
	g.user(fmt.Sprintf("Task %d: please fix the flaky test in pkg/svc%d/handler_test.go and keep the API stable. Ticket ENG-%d.", i, i, 1000+i))
	for j := 0; j < k; j++ {
		c := call{id: fmt.Sprintf("toolu_%03d_%03d", i, j), name: []string{"read", "bash", "edit"}[j%3],
			path: fmt.Sprintf("pkg/svc%d/file%d.go", i, j), cmd: fmt.Sprintf("go test ./pkg/svc%d/...", i)}
		g.assistant(fmt.Sprintf("Step %d: checking %s.", j, c.path), []call{c})
		g.result(c, strings.Repeat("x", resultChars/2)+fmt.Sprintf(" result %d/%d ", i, j)+strings.Repeat("y", resultChars/2), j%7 == 3)
	}
	g.assistant(fmt.Sprintf("Done with task %d: decided to use a fake clock instead of sleeping. Next I will run the full suite.", i), nil)
}

// scenarios builds the generated sessions the tests run on.
func scenarios(t testing.TB) map[string]string {
	out := map[string]string{}

	// Tool-dense: turns of 30 calls, one of them with 30 parallel calls.
	g := newGen(3)
	g.turns(0, 6, 30, 400)
	g.user("Now run all 30 linters at once.")
	var calls []call
	for j := 0; j < 30; j++ {
		calls = append(calls, call{id: fmt.Sprintf("toolu_par_%02d", j), name: "bash", cmd: fmt.Sprintf("lint-%d", j)})
	}
	g.assistant("Running all linters in parallel.", calls)
	for _, c := range calls {
		g.result(c, para(3), false)
	}
	g.assistant("All linters passed.", nil)
	out["tool-dense"] = g.write(t, "tool-dense.jsonl")

	// CJK: pi undercounts it 3–4×.
	g = newGen(3)
	for i := 0; i < 12; i++ {
		g.user(fmt.Sprintf("第%d个任务：请修复 src/服务/处理器%d.go 中的错误，并保持接口稳定。", i, i))
		c := call{id: fmt.Sprintf("toolu_cjk_%02d", i), name: "read", path: fmt.Sprintf("src/服务/处理器%d.go", i)}
		g.assistant("我先读取文件。", []call{c})
		g.result(c, strings.Repeat("这是一个很长的中文工具输出，包含错误信息和堆栈跟踪。", 60), false)
		g.assistant(fmt.Sprintf("已完成第%d个任务：决定使用互斥锁而不是通道。", i), nil)
	}
	out["cjk"] = g.write(t, "cjk.jsonl")

	// Huge tool results, the last ones larger than keepRecentTokens.
	g = newGen(3)
	g.turns(0, 4, 3, 300)
	g.user("Dump the whole database log.")
	for j := 0; j < 3; j++ {
		c := call{id: fmt.Sprintf("toolu_huge_%d", j), name: "bash", cmd: "cat /var/log/db.log"}
		g.assistant("", []call{c})
		g.result(c, strings.Repeat("2026-03-02 09:00:00 INFO query ok rows=12 latency=3ms\n", 4000), false)
	}
	out["huge-results"] = g.write(t, "huge.jsonl")

	// Branches: an abandoned branch in the middle of the file.
	g = newGen(3)
	g.turns(0, 3, 4, 600)
	fork := g.parent
	g.user("Try approach A.")
	g.assistant("Approach A failed.", nil)
	g.parent = fork // back to the fork: the A branch is abandoned
	g.entry(map[string]any{"type": "branch_summary", "fromId": fork, "summary": "Explored approach A; it failed on the race detector.", "fromHook": false})
	g.turns(3, 7, 4, 600)
	out["branches"] = g.write(t, "branches.jsonl")

	// An earlier compaction that kept a region, and a split turn with a
	// model change right before the cut.
	g = newGen(3)
	g.turns(0, 3, 5, 800)
	keptFrom := g.user("Continue with the migration of pkg/store to the new API.")
	for j := 0; j < 8; j++ {
		c := call{id: fmt.Sprintf("toolu_mig_%d", j), name: "edit", path: fmt.Sprintf("pkg/store/m%d.go", j)}
		g.assistant("Migrating.", []call{c})
		g.result(c, para(4), false)
	}
	g.compaction("## Goal\n- Fix flaky tests and migrate pkg/store.\n\n## Key Decisions\n- Use a fake clock.", keptFrom, 0)
	g.modelChange()
	g.turns(3, 8, 6, 700)
	out["earlier-compaction"] = g.write(t, "earlier.jsonl")

	// v1 with an earlier compaction (firstKeptEntryIndex).
	g = newGen(1)
	g.turns(0, 3, 5, 800)
	keptIdx := len(g.lines) // index of the next record (header = 0)
	g.turns(3, 5, 5, 800)
	g.compaction("# Context Checkpoint\nWorked on tasks 0-2.", "", keptIdx)
	g.turns(5, 10, 5, 800)
	out["v1"] = g.write(t, "v1.jsonl")

	// A steering message between a call and its result: a cut at the user
	// message would orphan the result unless the cut moves back.
	g = newGen(3)
	g.turns(0, 4, 3, 900)
	c := call{id: "toolu_slow", name: "bash", cmd: "make release"}
	g.user("Build the release.")
	g.assistant("Building.", []call{c})
	g.user("Also tag it v2.1.0 when done.")
	g.result(c, para(30), false)
	g.assistant("Built and tagged v2.1.0.", nil)
	g.turns(4, 6, 2, 300)
	out["interleaved"] = g.write(t, "interleaved.jsonl")
	return out
}
