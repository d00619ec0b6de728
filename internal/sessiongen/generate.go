package sessiongen

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// Options control Generate. The zero value gives a small, clean v3 coding
// session (20 turns, a few tool calls each). Counts of optional features
// are spread evenly over the session; a feature needs at least twice as many
// turns as occurrences to be placed every time (Result says what was written).
type Options struct {
	Seed    uint64 // same Seed + Options = same bytes
	Version int    // 1, 2 or 3 (0 = 3). v1: no branches, labels or ids.

	// Turns is the number of user turns (0 = 20). TargetBytes > 0 instead
	// keeps adding turns until the file holds at least that many bytes.
	Turns       int
	TargetBytes int64

	// Tool calls per turn are drawn uniformly from
	// [MinToolCallsPerTurn, ToolCallsPerTurn] (defaults 1 and 6; use e.g.
	// 20 and 30 for a tool-dense session). An assistant message carries up
	// to ParallelToolCalls calls (0 = 3).
	ToolCallsPerTurn    int
	MinToolCallsPerTurn int
	ParallelToolCalls   int
	// ToolResultBytes is the median size of a tool result's text
	// (0 = 1500); sizes vary log-normally around it.
	ToolResultBytes int
	// HugeToolResults results of HugeToolResultBytes each (0 = 3 MB) —
	// a JSON dump on one JSONL line.
	HugeToolResults     int
	HugeToolResultBytes int
	// CJKShare is the fraction (0..1) of turns held in Chinese (user
	// prompt, answer, docs read in that turn).
	CJKShare float64
	// Thinking adds thinking blocks (with signatures) to assistants.
	Thinking bool

	UserImages           int // user messages with a screenshot (PNG)
	ToolImages           int // read results that return a PNG
	BashExecutions       int // user "!cmd" bashExecution messages
	CustomMessages       int // custom_message entries
	CustomEntries        int // custom entries (never in context)
	ModelChanges         int // model_change entries (v3 sessions also start with one)
	ThinkingLevelChanges int
	Branches             int // abandoned branches followed by branch_summary (not v1)
	Compactions          int // compaction entries
	// CompactionsWithin spreads the compactions over the first fraction
	// of the session (0 = all of it).
	CompactionsWithin float64
	// KeepTurns is how many recent user turns a compaction keeps (0 = 2);
	// firstKeptEntryId/Index names the user message starting them.
	KeepTurns         int
	AbortedAssistants int // stopReason "aborted" with an unanswered tool call
	ErrorAssistants   int // stopReason "error" (provider 400) with an unanswered tool call
	ToolErrors        int // toolResults with isError true
	// TrailingToolCall ends the session with an assistant tool call that
	// has no result (a tool still running).
	TrailingToolCall bool
	GarbageLines     int  // lines that are not JSON (pi skips them)
	GluedLines       int  // lines holding two complete records (pi loses both); every 2nd hides a compaction
	TruncatedTail    bool // last line cut short, no final newline
	// Facts is how many distinctive identifiers to plant (kinds cycle
	// through FactKinds); Result.Facts says where each went. They are
	// spread over the first FactsWithin of the session (0 = 0.15), in
	// user messages (uuid, url, cjk), tool results (path, hash, port) and
	// assistant replies (decision); each value occurs exactly once.
	Facts        int
	FactsWithin  float64
	SystemTokens int       // ground-truth system prompt + tools (0 = DefaultSystemTokens)
	Cwd          string    // header cwd ("" = /home/dev/acme-api)
	Start        time.Time // header/clock start (zero = DefaultStart)
	// Provider and Model of the first assistants (default
	// anthropic/claude-sonnet-4-5); ModelChanges rotate through others.
	Provider, Model string
	NoLineIndex     bool   // skip Result.Lines and Context.Entries/Lines (huge files)
	SessionName     string // appends a session_info entry (v2/v3)
	SignatureBytes  int    // thinking signature length (0 = 240)
}

// FactKinds are the kinds of planted facts, in the order they cycle.
var FactKinds = []string{"path", "uuid", "hash", "port", "url", "cjk", "decision"}

// GenerateFile writes a session to path (created or truncated).
func GenerateFile(path string, o Options) (*Result, error) {
	return ToFile(path, func(w io.Writer) (*Result, error) { return Generate(w, o) })
}

// ToFile runs a generator that writes to w on the file path (created or
// truncated) and closes it; a failed close is the error when the generator
// had none. The generators of the other kits write files through it.
func ToFile[R any](path string, generate func(w io.Writer) (R, error)) (R, error) {
	f, err := os.Create(path)
	if err != nil {
		var zero R
		return zero, err
	}
	res, err := generate(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// sched spreads n occurrences evenly over the first `within` (0 = all) of
// the session.
type sched struct {
	n, done int
	within  float64
}

// due reports whether the next occurrence is due at progress p ∈ [0,1).
func (s *sched) due(p float64) bool {
	w := s.within
	if w <= 0 {
		w = 1
	}
	return s.done < s.n && p >= w*(float64(s.done)+0.5)/float64(s.n)
}

type pathUser struct {
	turn int
	id   string
}

type gen struct {
	o         Options
	b         *Builder
	r         *rand.Rand
	c         *corpus
	turn      int
	cjk       bool
	users     []pathUser
	lastCmp   int // turn of the last compaction (-1 none)
	read      map[string]bool
	mod       map[string]bool
	s         map[string]*sched
	facts     []PlantedFact
	pending   []pendingFact // facts waiting for an entry
	just      []int         // facts planted into the entry being written
	noFacts   bool
	factsDone int
	content   []Block      // reused per assistant message
	results   []ToolResult // reused per assistant message
	asst      Assistant
	mi, tli   int // model / thinking level rotation
	files     []string
}

var modelRotation = []struct{ provider, model string }{
	{"anthropic", "claude-opus-4-5"},
	{"openai", "gpt-5.1-codex"},
	{"anthropic", "claude-sonnet-4-5"},
	{"google", "gemini-2.5-pro"},
}

var thinkingRotation = []string{"medium", "high", "low", "minimal", "off", "xhigh"}

// Generate writes a synthetic pi session to w and returns what pi will load
// from it. Content is streamed (nothing of it is kept); only the entry tree
// bookkeeping stays in memory, about 0.4 KB per entry (~250 MB live for a
// 1 GB file with NoLineIndex). Speed on the 2-core reference VM: ~160–190 MB/s
// of CPU time (see BenchmarkGenerate and `go run ./bench/gen -preset bench
// -size 1GB`).
func Generate(w io.Writer, o Options) (*Result, error) {
	o.Version = cmp.Or(o.Version, 3)
	o.Turns = cmp.Or(o.Turns, 20)
	o.ToolCallsPerTurn = cmp.Or(o.ToolCallsPerTurn, 6)
	o.MinToolCallsPerTurn = min(cmp.Or(o.MinToolCallsPerTurn, 1), o.ToolCallsPerTurn)
	o.ParallelToolCalls = cmp.Or(o.ParallelToolCalls, 3)
	o.ToolResultBytes = cmp.Or(o.ToolResultBytes, 1500)
	o.HugeToolResultBytes = cmp.Or(o.HugeToolResultBytes, 3<<20)
	o.KeepTurns = cmp.Or(o.KeepTurns, 2)
	o.FactsWithin = cmp.Or(o.FactsWithin, 0.15)
	o.SignatureBytes = cmp.Or(o.SignatureBytes, 240)
	o.Cwd = cmp.Or(o.Cwd, "/home/dev/acme-api")
	if o.Version == 1 {
		o.Branches = 0
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	b := NewBuilder(bw, Config{Version: o.Version, Seed: o.Seed, Start: o.Start, Cwd: o.Cwd,
		Provider: o.Provider, Model: o.Model, SystemTokens: o.SystemTokens, NoLineIndex: o.NoLineIndex})
	g := &gen{o: o, b: b, r: rand.New(rand.NewPCG(o.Seed, 0xc0de)), lastCmp: -1,
		read: map[string]bool{}, mod: map[string]bool{}}
	g.c = newCorpus(g.r)
	for i := 0; i < 24; i++ {
		g.files = append(g.files, goPath(g.r))
	}
	g.s = map[string]*sched{}
	for name, n := range map[string]int{
		"userImage": o.UserImages, "toolImage": o.ToolImages, "bash": o.BashExecutions,
		"customMessage": o.CustomMessages, "custom": o.CustomEntries, "model": o.ModelChanges,
		"thinking": o.ThinkingLevelChanges, "branch": o.Branches, "compaction": o.Compactions,
		"aborted": o.AbortedAssistants, "error": o.ErrorAssistants, "toolError": o.ToolErrors,
		"garbage": o.GarbageLines, "glued": o.GluedLines, "huge": o.HugeToolResults,
	} {
		g.s[name] = &sched{n: n}
	}
	g.s["compaction"].within = o.CompactionsWithin
	if o.Version > 1 {
		b.ModelChange(ModelChange{Provider: b.provider, ModelID: b.model})
		b.ThinkingLevelChange(ThinkingLevelChange{ThinkingLevel: "off"})
	}
	for g.turn = 0; g.more(); g.turn++ {
		g.betweenTurns()
		g.userTurn()
		if b.Err() != nil {
			break
		}
		if g.s["branch"].due(g.progress()) && g.turn > 0 {
			g.s["branch"].done++
			g.branch()
		}
	}
	g.finish()
	res, err := b.Close()
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	res.Facts = placedFacts(g.facts)
	return res, err
}

func (g *gen) more() bool {
	if g.o.TargetBytes > 0 {
		return g.b.Bytes() < g.o.TargetBytes
	}
	return g.turn < g.o.Turns
}

func (g *gen) progress() float64 {
	if g.o.TargetBytes > 0 {
		return float64(g.b.Bytes()) / float64(g.o.TargetBytes)
	}
	return float64(g.turn) / float64(g.o.Turns)
}

func (g *gen) fire(name string) bool {
	s := g.s[name]
	if s.due(g.progress()) {
		s.done++
		return true
	}
	return false
}

// betweenTurns places the scheduled entries that sit between user turns.
func (g *gen) betweenTurns() {
	b := g.b
	if g.turn > 0 && g.s["compaction"].due(g.progress()) {
		if g.compact() {
			g.s["compaction"].done++
		}
	}
	for g.fire("model") {
		b.Advance(time.Duration(2+g.r.IntN(20)) * time.Second)
		m := modelRotation[g.mi%len(modelRotation)]
		g.mi++
		b.ModelChange(ModelChange{Provider: m.provider, ModelID: m.model})
	}
	for g.fire("thinking") {
		b.Advance(time.Duration(1+g.r.IntN(5)) * time.Second)
		b.ThinkingLevelChange(ThinkingLevelChange{ThinkingLevel: thinkingRotation[g.tli%len(thinkingRotation)]})
		g.tli++
	}
	for g.fire("bash") {
		b.Advance(time.Duration(5+g.r.IntN(60)) * time.Second)
		fail := g.r.IntN(4) == 0
		x := BashExecution{Command: pick(g.r, []string{"go test ./...", "go vet ./...", "git status --short", "make lint"}),
			Output: g.testOutput(fail), ExitCode: Int(0)}
		if fail {
			x.ExitCode = Int(1)
		}
		if g.r.IntN(4) == 0 {
			x.Output = slice(g.r, g.c.code, g.c.codeLines, 2000)
			x.Truncated = true
			x.FullOutputPath = "/tmp/pi-bash-" + hexString(g.r, 8) + ".log"
		}
		b.BashExecution(x)
	}
	for g.fire("customMessage") {
		b.Advance(time.Duration(1+g.r.IntN(5)) * time.Second)
		b.CustomMessage(CustomMessage{CustomBody: CustomBody{CustomType: pick(g.r, []string{"lint-bot", "memory-recall", "ci-status"}),
			Text: g.prose(2 + g.r.IntN(3)), Display: g.r.IntN(3) > 0}})
	}
	for g.fire("custom") {
		b.Advance(10 * time.Millisecond)
		b.Custom(Custom{CustomType: "model-snapshot", Data: Obj{{"timestamp", b.Now().UnixMilli()},
			{"provider", b.provider}, {"modelApi", b.api}, {"modelId", b.model}}})
	}
	for g.fire("garbage") {
		b.Garbage(pick(g.r, []string{
			"<<<<<<< HEAD",
			`{"type":"message","timestamp":"` + b.Now().UTC().Format("2006-01-02T15:04:05.000Z") + `","message":{"role":"assistant","content":[{"type":"text","text":"Working on`,
			"\x1b[31merror: session write interrupted\x1b[0m",
		}))
	}
	for g.fire("glued") {
		b.Advance(3 * time.Second)
		if g.s["glued"].done%2 == 1 || len(g.users) == 0 {
			b.Glued(&Assistant{Content: []Block{Text("Done.")}}, &User{Blocks: []Block{Text("ok")}})
			continue
		}
		// like pi-v1-compact-705ba5d.jsonl: a compaction hidden in a glued line
		b.Glued(&Assistant{Content: []Block{Text("Compacting now.")}},
			&Compaction{Summary: g.summary(), FirstKeptEntryID: g.users[len(g.users)-1].id})
	}
}

func (g *gen) prose(n int) string {
	if g.cjk {
		return paragraph(g.r, g.c.cjk, n, "")
	}
	return paragraph(g.r, g.c.sentences, n, " ")
}

// signature is an opaque thinking signature: a slice of a random base64
// pool (no allocation).
func (g *gen) signature() string {
	n := min(g.o.SignatureBytes, len(g.c.b64))
	off := g.r.IntN(len(g.c.b64) - n + 1)
	return g.c.b64[off : off+n]
}

// sent is one English sentence from the pool.
func (g *gen) sent() string { return g.c.sentences[g.r.IntN(len(g.c.sentences))] }

func (g *gen) userTurn() {
	b := g.b
	o := g.o
	g.cjk = o.CJKShare > 0 && g.r.Float64() < o.CJKShare
	b.Advance(time.Duration(20+g.r.IntN(600)) * time.Second)
	g.planFacts()
	f := pick(g.r, g.files)
	var text string
	if g.cjk {
		text = fmt.Sprintf("请看一下 `%s`：%s", f, paragraph(g.r, g.c.cjk, 1+g.r.IntN(3), ""))
	} else {
		text = fmt.Sprintf("Please %s the %s in %s. %s", pick(g.r, verbs), pick(g.r, nouns), f, paragraph(g.r, g.c.sentences, 1+g.r.IntN(3), " "))
	}
	text = g.plant(text, "user")
	blocks := []Block{Text(text)}
	if g.fire("userImage") {
		blocks[0].Text += " Screenshot attached."
		blocks = append(blocks, ImageBlock(MakePNG(1280, 800, g.turn)))
	}
	id := b.User(User{Blocks: blocks})
	g.placed("user")
	g.users = append(g.users, pathUser{g.turn, id})
	g.toolLoop()
}

// toolLoop writes the assistant/toolResult exchange of one turn and its
// final answer (or an aborted/error assistant).
func (g *gen) toolLoop() {
	b, o := g.b, g.o
	n := o.MinToolCallsPerTurn + g.r.IntN(o.ToolCallsPerTurn-o.MinToolCallsPerTurn+1)
	if g.noFacts { // an abandoned branch turn: keep it short
		n = min(n, 1)
	}
	huge := g.fire("huge")
	if huge && n == 0 {
		n = 1
	}
	for n > 0 {
		k := 1 + g.r.IntN(min(n, o.ParallelToolCalls))
		n -= k
		content := g.content[:0]
		if o.Thinking {
			content = append(content, Thinking(g.prose(1+g.r.IntN(3)), g.signature()))
		}
		if g.r.IntN(3) == 0 {
			content = append(content, Text(g.prose(1)))
		}
		results := g.results[:0]
		for i := 0; i < k; i++ {
			id := b.ToolCallID()
			name, args, tr := g.toolCall(huge && i == 0)
			huge = false
			tr.ToolCallID, tr.ToolName = id, name
			content = append(content, ToolCall(id, name, args))
			results = append(results, tr)
		}
		b.Advance(time.Duration(2000+g.r.IntN(15000)) * time.Millisecond)
		g.asst = Assistant{Content: content} // reused: the builder keeps no reference
		b.Append(&g.asst)
		g.content, g.results = content, results
		for i := range results {
			tr := &results[i]
			b.Advance(time.Duration(30+g.r.IntN(800)) * time.Millisecond)
			tr.Content[0].Text = g.plant(tr.Content[0].Text, "tool")
			b.Append(tr)
			g.placed("toolResult")
		}
	}
	b.Advance(time.Duration(3000+g.r.IntN(20000)) * time.Millisecond)
	switch {
	case g.fire("aborted"):
		b.Assistant(Assistant{Content: []Block{Text(g.prose(1)), ToolCall(b.ToolCallID(), "bash", Obj{{"command", "go test -count=1 ./..."}})},
			StopReason: "aborted", ErrorMessage: "Request was aborted."})
	case g.fire("error"):
		id := b.ToolCallID()
		b.Assistant(Assistant{Content: []Block{ToolCall(id, "read", Obj{{"path", pick(g.r, g.files)}})},
			StopReason: "error", ErrorMessage: `400 {"type":"error","error":{"type":"invalid_request_error","message":"messages.` +
				fmt.Sprint(2*len(g.users)) + ": `tool_use` ids were found without `tool_result` blocks immediately after: " + id + `"}}`})
	default:
		var content []Block
		if o.Thinking && g.r.IntN(2) == 0 {
			content = append(content, Thinking(g.prose(1), g.signature()))
		}
		text := g.prose(2 + g.r.IntN(3))
		if !g.cjk {
			text = "Done. " + text + "\n\n- " + g.sent() + "\n- " + g.sent()
		}
		content = append(content, Text(g.plant(text, "assistant")))
		b.Assistant(Assistant{Content: content})
		g.placed("assistant")
	}
}

// toolCall invents one call and its result.
func (g *gen) toolCall(huge bool) (string, Obj, ToolResult) {
	r := g.r
	size := int(float64(g.o.ToolResultBytes) * math.Min(5, math.Max(0.1, math.Exp(r.NormFloat64()*0.8))))
	if huge {
		p := fmt.Sprintf("data/export-%s.json", hexString(r, 6))
		return "bash", Obj{{"command", "cat " + p}},
			ToolResult{Content: []Block{TextKind(slice(r, g.c.json, g.c.jsonLines, g.o.HugeToolResultBytes), KindCode)}}
	}
	if g.fire("toolImage") {
		p := fmt.Sprintf("docs/screenshots/%s.png", pick(r, nouns))
		g.read[p] = true
		img := MakePNG(800, 600, g.turn+7)
		return "read", Obj{{"path", p}},
			ToolResult{Content: []Block{Text("Read image file [image/png]"), ImageBlock(img)}}
	}
	if g.fire("toolError") {
		p := pick(r, g.files) + "x"
		return "read", Obj{{"path", p}},
			ToolResult{Content: []Block{Text("ENOENT: no such file or directory, access '" + g.o.Cwd + "/" + p + "'")}, IsError: true}
	}
	f := pick(r, g.files)
	switch k := r.IntN(20); {
	case k < 8:
		g.read[f] = true
		if r.IntN(5) == 0 || (g.cjk && r.IntN(2) == 0) {
			f = strings.TrimSuffix(f, ".go") + ".md"
			var txt string
			if g.cjk {
				txt = paragraph(r, g.c.cjk, 1+size/150, "")
			} else {
				txt = slice(r, g.c.prose, g.c.proseLines, size)
			}
			return "read", Obj{{"path", f}}, ToolResult{Content: []Block{TextKind(txt, KindProse)}}
		}
		args := Obj{{"path", f}}
		if r.IntN(4) == 0 {
			args = append(args, KV{"offset", 1 + r.IntN(400)}, KV{"limit", 200})
		}
		return "read", args, ToolResult{Content: []Block{TextKind(slice(r, g.c.code, g.c.codeLines, size), KindCode)}}
	case k < 14:
		switch r.IntN(4) {
		case 0:
			return "bash", Obj{{"command", "go test ./" + strings.TrimSuffix(f[:strings.LastIndexByte(f, '/')], "/") + "/..."}, {"timeout", 120}},
				ToolResult{Content: []Block{TextKind(g.testOutput(r.IntN(3) == 0), KindCode)}}
		case 1:
			return "bash", Obj{{"command", "git log --oneline -n 20"}}, ToolResult{Content: []Block{TextKind(slice(r, g.c.gitlog, g.c.gitLines, 20*40), KindCode)}}
		case 2:
			return "bash", Obj{{"command", "curl -s localhost:8080/api/v1/" + pick(r, nouns) + "s | jq ."}},
				ToolResult{Content: []Block{TextKind(slice(r, g.c.json, g.c.jsonLines, size), KindCode)}}
		}
		return "bash", Obj{{"command", "rg -n '" + pick(r, nouns) + "' " + f[:strings.IndexByte(f, '/')]}},
			ToolResult{Content: []Block{TextKind(slice(r, g.c.grep, g.c.grepLines, size/2), KindCode)}}
	case k < 18:
		g.mod[f] = true
		old := slice(r, g.c.code, g.c.codeLines, 120+r.IntN(300))
		repl := slice(r, g.c.code, g.c.codeLines, 120+r.IntN(400))
		return "edit", Obj{{"path", f}, {"oldText", old}, {"newText", repl}},
			ToolResult{Content: []Block{Text("Successfully replaced text in " + f + ".")},
				Details: Obj{{"diff", diff(old, repl)}, {"firstChangedLine", 1 + r.IntN(300)}}}
	}
	g.mod[f] = true
	body := slice(r, g.c.code, g.c.codeLines, size/2+100)
	return "write", Obj{{"path", f}, {"content", body}},
		ToolResult{Content: []Block{Text(fmt.Sprintf("Successfully wrote %d bytes to %s", len(body), f))}}
}

// testOutput picks a pooled go test output.
func (g *gen) testOutput(fail bool) string {
	i := 2 * g.r.IntN(len(g.c.tests)/2)
	if fail {
		i++
	}
	return g.c.tests[i]
}

func diff(old, repl string) string {
	var sb strings.Builder
	sb.Grow(len(old) + len(repl) + 64)
	for _, part := range []struct {
		sign byte
		text string
	}{{'-', old}, {'+', repl}} {
		for rest := part.text; rest != ""; {
			var l string
			l, rest, _ = strings.Cut(rest, "\n")
			sb.WriteByte(part.sign)
			sb.WriteString(l)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// compact writes a compaction keeping the last KeepTurns user turns on the
// path. It returns false when there is nothing to keep yet.
func (g *gen) compact() bool {
	var cand []pathUser
	for _, u := range g.users {
		if u.turn > g.lastCmp {
			cand = append(cand, u)
		}
	}
	if len(cand) <= g.o.KeepTurns {
		return false
	}
	kept := cand[len(cand)-g.o.KeepTurns]
	b := g.b
	b.Advance(time.Duration(20+g.r.IntN(60)) * time.Second)
	summary := g.summary()
	b.Compaction(Compaction{Summary: summary, FirstKeptEntryID: kept.id,
		Details: Obj{{"readFiles", sortedKeys(g.read)}, {"modifiedFiles", sortedKeys(g.mod)}}})
	g.lastCmp = g.turn - 1
	g.read, g.mod = map[string]bool{}, map[string]bool{}
	return true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// summary is a pi-style structured compaction summary.
func (g *gen) summary() string {
	r := g.r
	var sb strings.Builder
	fmt.Fprintf(&sb, "## Goal\n%s\n\n## Constraints & Preferences\n- %s\n- %s\n\n## Progress\n### Done\n", g.prose(1), sentence(r), sentence(r))
	for i := 0; i < 3+r.IntN(4); i++ {
		fmt.Fprintf(&sb, "- [x] %s %s in %s\n", pick(r, verbs), pick(r, nouns), pick(r, g.files))
	}
	fmt.Fprintf(&sb, "\n### In Progress\n- [ ] %s\n\n## Key Decisions\n- **%s**: %s\n\n## Next Steps\n1. %s\n2. %s\n\n## Critical Context\n- %s\n",
		sentence(r), pick(r, nouns), sentence(r), sentence(r), sentence(r), sentence(r))
	if len(g.read) > 0 {
		fmt.Fprintf(&sb, "\n<read-files>\n%s\n</read-files>\n", strings.Join(sortedKeys(g.read), "\n"))
	}
	if len(g.mod) > 0 {
		fmt.Fprintf(&sb, "\n<modified-files>\n%s\n</modified-files>", strings.Join(sortedKeys(g.mod), "\n"))
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// branch writes one abandoned turn after the current leaf, navigates back
// and appends a branch_summary, as pi's /tree navigation does.
func (g *gen) branch() {
	b := g.b
	point := b.Leaf()
	users := len(g.users)
	g.noFacts = true
	g.userTurn()
	g.noFacts = false
	g.users = g.users[:users] // the abandoned user turn is not on the path
	b.Advance(time.Duration(30+g.r.IntN(300)) * time.Second)
	b.Branch(point)
	b.BranchSummary(BranchSummary{Summary: "Explored " + g.prose(2) + " Abandoned: " + sentence(g.r),
		Details: Obj{{"readFiles", []string{pick(g.r, g.files)}}, {"modifiedFiles", []string{}}}})
}

// finish writes the optional trailing entries.
func (g *gen) finish() {
	b := g.b
	if g.o.SessionName != "" && g.o.Version > 1 {
		b.SessionInfo(SessionInfo{Name: g.o.SessionName})
	}
	if g.o.TrailingToolCall {
		b.Advance(time.Minute)
		g.cjk = false
		b.UserText("Run the full test suite once more.")
		b.Advance(4 * time.Second)
		id := b.ToolCallID()
		b.Assistant(Assistant{Content: []Block{Text("Running the tests."), ToolCall(id, "bash", Obj{{"command", "go test ./..."}, {"timeout", 600}})}})
		if g.o.TruncatedTail {
			b.Torn(&ToolResult{ToolCallID: id, ToolName: "bash", Content: []Block{TextKind(g.testOutput(false), KindCode)}}, 0, false)
		}
		return
	}
	if g.o.TruncatedTail {
		b.Advance(time.Minute)
		b.Torn(&User{Blocks: []Block{Text(g.prose(2))}}, 0, false)
	}
}
