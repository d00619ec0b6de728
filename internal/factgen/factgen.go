// Package factgen writes pi sessions with planted facts of every class the
// fact detector knows (decisions, constraints, numbers with context,
// identifiers, open requests, errors), placed in user, assistant and tool
// messages of the older part of the session, among realistic noise: code,
// test output, logs, git history, JSON — the material that buries facts in
// real sessions. Compaction tests check which planted facts survive.
package factgen

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// Planted is one planted fact.
type Planted struct {
	// Class is a facts.Class value.
	Class string
	// Probe is the text that must still be present for the fact to count
	// as kept (compared case-insensitively, whitespace collapsed).
	Probe string
	// Text is the sentence planted.
	Text string
	// Role is user, assistant or toolResult.
	Role    string
	Line    int
	EntryID string
	Turn    int
}

// Options shape a session.
type Options struct {
	Seed uint64
	// Facts to plant (0 = 20), spread over the first FactsWithin of the
	// turns (0 = 0.6).
	Facts       int
	FactsWithin float64
	// Turns (0 = 30); each has 2–4 tool calls with 1.5–4 KB results.
	Turns int
}

// Classes in the order facts are planted (cycled).
var Classes = []string{"decision", "constraint", "number", "identifier", "request", "error"}

// Roles facts are planted in (rotated so each class lands in each role).
var Roles = []string{"user", "assistant", "toolResult"}

// GenerateFile writes a session to path and returns the planted facts.
func GenerateFile(path string, o Options) ([]Planted, error) {
	return sessiongen.ToFile(path, func(w io.Writer) ([]Planted, error) { return Generate(w, o) })
}

// Write generates a session at path for a test and returns the planted
// facts; a generator that fails fails the test, naming the file.
func Write(t testing.TB, path string, o Options) []Planted {
	t.Helper()
	return sessiongen.ToTestFile(t, path, func(w io.Writer) ([]Planted, error) { return Generate(w, o) })
}

type gen struct {
	r       *rand.Rand
	b       *sessiongen.Builder
	o       Options
	planted []Planted
	pending []Planted // due in the current turn, by role
	used    map[string]bool
}

// Generate writes a session to w.
func Generate(w io.Writer, o Options) ([]Planted, error) {
	o.Facts = cmp.Or(o.Facts, 20)
	o.FactsWithin = cmp.Or(o.FactsWithin, 0.6)
	o.Turns = cmp.Or(o.Turns, 30)
	g := &gen{r: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), o: o, used: map[string]bool{}}
	g.b = sessiongen.NewBuilder(w, sessiongen.Config{Seed: o.Seed, Cwd: "/home/dev/shop"})
	factTurns := int(float64(o.Turns) * o.FactsWithin)
	if factTurns < 1 {
		factTurns = 1
	}
	next := 0
	for t := 0; t < o.Turns; t++ {
		// facts due by this turn, spread evenly over the first factTurns
		for next < o.Facts && t >= next*factTurns/o.Facts {
			class := Classes[next%len(Classes)]
			role := Roles[(next+next/len(Classes))%len(Roles)]
			p := g.makeFact(class, role)
			p.Turn = t
			g.pending = append(g.pending, p)
			next++
		}
		g.turn(t)
		if len(g.pending) > 0 {
			return nil, fmt.Errorf("factgen: %d facts left unplaced in turn %d", len(g.pending), t)
		}
	}
	if _, err := g.b.Close(); err != nil {
		return nil, err
	}
	return g.planted, nil
}

// take returns the text of the facts due for role, recording where they go
// (the entry the caller is about to append).
func (g *gen) take(role string) []Planted {
	var out, keep []Planted
	for _, p := range g.pending {
		if p.Role == role {
			out = append(out, p)
		} else {
			keep = append(keep, p)
		}
	}
	g.pending = keep
	return out
}

func (g *gen) placed(ps []Planted, id string) {
	for _, p := range ps {
		p.Line, p.EntryID = g.b.Lines(), id
		g.planted = append(g.planted, p)
	}
}

func joinTexts(ps []Planted) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Text)
	}
	return strings.Join(s, " ")
}

func (g *gen) turn(t int) {
	// user
	ps := g.take("user")
	text := g.userAsk(t)
	if len(ps) > 0 {
		text += " " + joinTexts(ps)
	}
	id := g.b.UserText(text)
	g.placed(ps, id)

	// tool loop
	calls := 2 + g.r.IntN(3)
	toolFacts := g.take("toolResult")
	for c := 0; c < calls; c++ {
		name, args, out := g.tool()
		cid := g.b.ToolCallID()
		g.b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{
			sessiongen.Text(pick(g.r, lookLines)), sessiongen.ToolCall(cid, name, args)}})
		var mine []Planted
		isErr := false
		if c == calls-1 {
			mine = toolFacts
		}
		for _, p := range mine {
			if p.Class == "error" {
				isErr = true
			}
			out = insertLine(g.r, out, p.Text)
		}
		rid := g.b.ToolResult(sessiongen.ToolResult{ToolCallID: cid, ToolName: name,
			Content: []sessiongen.Block{sessiongen.Text(out)}, IsError: isErr})
		g.placed(mine, rid)
	}
	// final answer
	ps = g.take("assistant")
	text = g.answer(t)
	if len(ps) > 0 {
		text += " " + joinTexts(ps)
	}
	id = g.b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text(text)}, StopReason: "stop"})
	g.placed(ps, id)
}

// insertLine puts line somewhere in the middle of a multi-line text.
func insertLine(r *rand.Rand, text, line string) string {
	lines := strings.Split(text, "\n")
	at := 1 + r.IntN(len(lines))
	if at > len(lines) {
		at = len(lines)
	}
	out := append([]string{}, lines[:at]...)
	out = append(out, line)
	return strings.Join(append(out, lines[at:]...), "\n")
}

// unique draws until gen returns a value not used before in the session.
func (g *gen) unique(gen func() string) string {
	for {
		v := gen()
		if !g.used[v] {
			g.used[v] = true
			return v
		}
	}
}

func (g *gen) makeFact(class, role string) Planted {
	r := g.r
	p := Planted{Class: class, Role: role}
	switch class {
	case "decision":
		tech := g.unique(func() string { return pick(r, techA) + "-" + hex(r, 3) })
		thing := pick(r, things)
		p.Probe = fmt.Sprintf("use %s for the %s", tech, thing)
		// Not byRole: the assistant's and the ADR's phrasings draw random
		// parts, and only the phrasing said may draw (or every session changes).
		switch role {
		case "user":
			p.Text = fmt.Sprintf("Let's %s, not the old one.", p.Probe)
		case "assistant":
			p.Text = fmt.Sprintf("We decided to %s instead of %s.", p.Probe, pick(r, techA))
		default:
			p.Text = fmt.Sprintf("ADR-%d: Decision: we chose to %s (accepted).", 10+r.IntN(80), p.Probe)
		}
	case "constraint":
		field := g.unique(func() string { return pick(r, fields) + "_" + hex(r, 2) })
		switch r.IntN(3) {
		case 0:
			p.Probe = fmt.Sprintf("never log the %s field", field)
			p.Text = fmt.Sprintf("Never log the %s field in any handler.", field)
		case 1:
			p.Probe = fmt.Sprintf("do not restart %s during business hours", field)
			p.Text = fmt.Sprintf("Do not restart %s during business hours.", field)
		default:
			p.Probe = fmt.Sprintf("must not write to %s", field)
			p.Text = fmt.Sprintf("The worker must not write to %s directly.", field)
		}
		if role == "toolResult" {
			p.Text = "# NOTE: " + p.Text
		}
	case "number":
		switch r.IntN(4) {
		case 0:
			n := g.unique(func() string { return fmt.Sprint(30000 + r.IntN(30000)) })
			p.Probe = "port " + n
			p.Text = fmt.Sprintf("The debug proxy listens on port %s.", n)
		case 1:
			n := g.unique(func() string { return fmt.Sprint(100 + r.IntN(9000)) })
			p.Probe = n + " requests"
			p.Text = fmt.Sprintf("The upload API allows at most %s requests per minute.", n)
		case 2:
			v := g.unique(func() string { return fmt.Sprintf("%d.%d.%d", 1+r.IntN(9), r.IntN(40), r.IntN(30)) })
			p.Probe = v
			p.Text = fmt.Sprintf("Pin %s to version %s for the release.", pick(r, techA), v)
		default:
			n := g.unique(func() string { return fmt.Sprint(64 * (2 + r.IntN(60))) })
			p.Probe = n + " MB"
			p.Text = fmt.Sprintf("Keep the image cache under %s MB on the build hosts.", n)
		}
	case "identifier":
		switch r.IntN(5) {
		case 0:
			p.Probe = g.unique(func() string {
				return fmt.Sprintf("/srv/%s/%s-%s/settings.toml", pick(r, things), pick(r, fields), hex(r, 3))
			})
			p.Text = "The live config is " + p.Probe + "."
		case 1:
			p.Probe = g.unique(func() string { return uuid(r) })
			p.Text = "The tenant id for the migration is " + p.Probe + "."
		case 2:
			p.Probe = g.unique(func() string { return hex(r, 20) })
			p.Text = "Last good deploy was commit " + p.Probe + "."
		case 3:
			p.Probe = g.unique(func() string {
				return fmt.Sprintf("https://%s-%s.internal.example.com/api/v2/%s", pick(r, things), hex(r, 2), pick(r, fields))
			})
			p.Text = "The artifact endpoint is " + p.Probe + " (needs the VPN)."
		default:
			p.Probe = g.unique(func() string { return fmt.Sprintf("SHOP-%d", 1000+r.IntN(9000)) })
			p.Text = "This is tracked in " + p.Probe + "."
		}
	case "request":
		flag := g.unique(func() string { return pick(r, fields) + "-" + hex(r, 2) })
		cmd := pick(r, things)
		p.Probe = fmt.Sprintf("add a --%s flag to the %s command", flag, cmd)
		p.Text = fmt.Sprintf(byRole(role, "Please also %s later.", "I still need to %s.", "// TODO(ana): %s"), p.Probe)
	case "error":
		host := g.unique(func() string { return pick(r, things) + "-db-" + hex(r, 2) })
		p.Probe = "connection refused dialing " + host
		p.Text = fmt.Sprintf(byRole(role, "The nightly job fails with error: %s.", "The deploy failed with Error: %s.", "Error: %s:5432"), p.Probe)
	}
	return p
}

// byRole is the phrasing a fact takes in a role's message: a user's, an
// assistant's, else a tool result's.
func byRole(role, user, assistant, tool string) string {
	switch role {
	case "user":
		return user
	case "assistant":
		return assistant
	}
	return tool
}

func (g *gen) userAsk(t int) string {
	return fmt.Sprintf("%s %s", pick(g.r, asks), pick(g.r, asksTail))
}

func (g *gen) answer(t int) string {
	return fmt.Sprintf("%s %s", pick(g.r, answers), pick(g.r, answers))
}

// tool returns a tool call and its (noisy) output.
func (g *gen) tool() (string, sessiongen.Obj, string) {
	r := g.r
	switch r.IntN(4) {
	case 0:
		p := fmt.Sprintf("internal/%s/%s.go", pick(r, things), pick(r, fields))
		return "read", sessiongen.Obj{{K: "path", V: p}}, g.code(1500 + r.IntN(2500))
	case 1:
		return "bash", sessiongen.Obj{{K: "command", V: "go test ./..."}}, g.testOutput(1500 + r.IntN(2000))
	case 2:
		return "bash", sessiongen.Obj{{K: "command", V: "git log --oneline -20"}}, g.gitLog()
	default:
		return "bash", sessiongen.Obj{{K: "command", V: "kubectl logs deploy/api --tail=40"}}, g.logs(1500 + r.IntN(2000))
	}
}

func (g *gen) code(n int) string {
	var b strings.Builder
	b.WriteString("package " + pick(g.r, things) + "\n\n")
	for b.Len() < n {
		fn := pick(g.r, fields)
		fmt.Fprintf(&b, "// %s returns the %s of the %s.\nfunc (s *Store) %s(ctx context.Context, id string) (int, error) {\n\tv, err := s.db.Get(ctx, %q)\n\tif err != nil {\n\t\treturn 0, fmt.Errorf(\"%s: %%w\", err)\n\t}\n\treturn v + %d, nil\n}\n\n",
			title(fn), pick(g.r, fields), pick(g.r, things), title(fn), fn+"/"+hex(g.r, 2), fn, g.r.IntN(100))
	}
	return b.String()
}

func (g *gen) testOutput(n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "=== RUN   Test%s%s\n--- PASS: Test%s%s (%d.%02ds)\n", title(pick(g.r, things)), title(pick(g.r, fields)),
			title(pick(g.r, things)), title(pick(g.r, fields)), g.r.IntN(2), g.r.IntN(100))
	}
	fmt.Fprintf(&b, "ok  \tgithub.com/acme/shop/internal/%s\t%d.%03ds\n", pick(g.r, things), g.r.IntN(3), g.r.IntN(1000))
	return b.String()
}

func (g *gen) gitLog() string {
	var b strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "%s %s: %s %s\n", hex(g.r, 4)[:7], pick(g.r, things), pick(g.r, verbs), pick(g.r, fields))
	}
	return b.String()
}

func (g *gen) logs(n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "2026-03-%02dT%02d:%02d:%02dZ INFO %s handled %s in %dms status=%d\n", 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), g.r.IntN(60),
			pick(g.r, things), "/api/"+pick(g.r, fields), g.r.IntN(900), []int{200, 200, 200, 204, 304}[g.r.IntN(5)])
	}
	return b.String()
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

func hex(r *rand.Rand, bytes int) string {
	const h = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < bytes*2; i++ {
		b.WriteByte(h[r.IntN(16)])
	}
	s := b.String()
	if !strings.ContainsAny(s, "abcdef") {
		s = "a" + s[1:]
	}
	if !strings.ContainsAny(s, "0123456789") {
		s = s[:len(s)-1] + "7"
	}
	return s
}

func uuid(r *rand.Rand) string {
	h := hex(r, 16)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

var (
	things    = []string{"billing", "checkout", "catalog", "orders", "payments", "search", "inventory", "shipping", "auth", "reports"}
	fields    = []string{"total", "status", "owner", "region", "quota", "token", "secret", "email", "price", "weight", "channel", "cursor"}
	techA     = []string{"sqlite", "postgres", "redis", "nats", "kafka", "grpc", "protobuf", "zstd", "badger", "envoy"}
	verbs     = []string{"fix", "add", "remove", "refactor", "rename", "test", "document", "speed up"}
	asks      = []string{"Look at the checkout handler next.", "Now the orders service.", "Let's continue with the reports export.", "Check the billing tests.", "Go on with the search indexer."}
	asksTail  = []string{"It was slow yesterday.", "Keep it small.", "The last run looked odd.", "See what the logs say.", ""}
	answers   = []string{"I read the handler and the store.", "The tests pass on my side.", "The change is in place.", "I looked at the recent commits.", "The logs show normal traffic."}
	lookLines = []string{"Let me look.", "Checking.", "Reading it now.", "Running the tests.", "Looking at the history."}
)
