package lint

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

// session builds a v3 session with the builder, then applies edit (raw
// changes to the bytes, for defects the builder refuses to write), and
// returns the file path.
func session(t *testing.T, build func(b *sessiongen.Builder), edit func([]byte) []byte) string {
	t.Helper()
	var buf bytes.Buffer
	b := sessiongen.NewBuilder(&buf, sessiongen.Config{Seed: 7})
	build(b)
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if edit != nil {
		data = edit(data)
	}
	return testkit.WriteTemp(t, "s.jsonl", data)
}

// turn appends a normal tool turn: user, assistant with one call, result,
// assistant text. It returns the ids.
func turn(b *sessiongen.Builder, text string) (user, call, result, answer string) {
	user = b.UserText(text)
	id := b.ToolCallID()
	call = b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall(id, "read", sessiongen.Obj{{K: "path", V: "main.go"}})}})
	result = b.ToolResultText(id, "read", "package main\n\nfunc main() {}\n")
	answer = b.AssistantText("main.go is an empty program: " + text)
	return
}

// clean is a session with no defect: tool turns, a correct compaction,
// more turns.
func clean(b *sessiongen.Builder) {
	turn(b, "look at main.go")
	u, _, _, _ := turn(b, "and again, please")
	turn(b, "once more")
	b.Compaction(sessiongen.Compaction{Summary: "## Goal\nRead main.go.\n\n## Progress\n- [x] read it twice", FirstKeptEntryID: u})
	turn(b, "after the compaction")
}

func lintFile(t *testing.T, path string, opts *Options) []Finding {
	t.Helper()
	r, err := File(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r.Findings
}

func findingsOf(fs []Finding, rule string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func appendRaw(lines ...string) func([]byte) []byte {
	return func(data []byte) []byte {
		for _, l := range lines {
			data = append(data, l...)
			data = append(data, '\n')
		}
		return data
	}
}

// randomToken is a credential-shaped random string: generated at test time
// so the repository holds nothing a secret scanner would flag.
func randomToken(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b64url  = alnum + "-_"
	upperAN = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// atLines is a case's make: build writes the session and marks the lines
// the rule must report; edit, when set, changes the written bytes.
func atLines(build func(b *sessiongen.Builder, mark func(line int)), edit func([]byte) []byte) func(t *testing.T) (string, []int) {
	return func(t *testing.T) (string, []int) {
		var lines []int
		p := session(t, func(b *sessiongen.Builder) { build(b, func(l int) { lines = append(lines, l) }) }, edit)
		return p, lines
	}
}

// ruleCase is a generated session that must trigger a rule at given lines.
type ruleCase struct {
	rule string
	// make returns the session path and the lines the rule must report.
	make func(t *testing.T) (string, []int)
	opts func(o *Options)
	sev  Severity // expected severity of the findings (0: the rule's default)
}

func ruleCases() []ruleCase {
	return []ruleCase{
		{rule: RuleMalformedLine, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.Garbage("<<<<<<< HEAD")
			mark(b.Lines())
			turn(b, "two")
		}, nil)},
		{rule: RuleGluedLine, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.Glued(&sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("Done.")}}, &sessiongen.User{Blocks: []sessiongen.Block{sessiongen.Text("ok")}})
			mark(b.Lines())
			turn(b, "two")
		}, nil)},
		{rule: RuleTornLine, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.Torn(&sessiongen.User{Blocks: []sessiongen.Block{sessiongen.Text("a message cut short by a crash")}}, 40, false)
			mark(b.Lines())
		}, nil)},
		{rule: RuleMissingNewline, make: func(t *testing.T) (string, []int) {
			var line int
			p := session(t, func(b *sessiongen.Builder) { turn(b, "one"); line = b.Lines() },
				func(d []byte) []byte { return bytes.TrimSuffix(d, []byte("\n")) })
			return p, []int{line}
		}},
		{rule: RuleNonObjectLine, make: atLines(func(b *sessiongen.Builder, mark func(int)) { turn(b, "one"); mark(b.Lines() + 1) }, appendRaw(`[1,2,3]`))},
		{rule: RuleInvalidHeader, make: func(t *testing.T) (string, []int) {
			p := session(t, func(b *sessiongen.Builder) { turn(b, "one") }, func(d []byte) []byte {
				return d[bytes.IndexByte(d, '\n')+1:] // drop the header
			})
			return p, []int{1}
		}},
		{rule: RuleExtraHeader, make: func(t *testing.T) (string, []int) {
			var line int
			p := session(t, func(b *sessiongen.Builder) { turn(b, "one"); line = b.Lines() + 1 },
				appendRaw(`{"type":"session","version":3,"id":"0b6f3c1e-5a47-4d0e-9c1a-2f8e7d6c5b4a","timestamp":"2026-03-02T09:00:00.000Z","cwd":"/x"}`))
			return p, []int{line}
		}},
		{rule: RuleMissingID, make: func(t *testing.T) (string, []int) {
			var line int
			var leaf string
			p := session(t, func(b *sessiongen.Builder) { turn(b, "one"); leaf = b.Leaf(); line = b.Lines() + 1 }, func(d []byte) []byte {
				return appendRaw(`{"type":"custom","customType":"x","parentId":"` + leaf + `","timestamp":"2026-03-02T10:00:00.000Z"}`)(d)
			})
			return p, []int{line}
		}},
		{rule: RuleDuplicateID, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.Custom(sessiongen.Custom{Meta: sessiongen.Meta{ID: "dup00001"}, CustomType: "state"})
			mark(b.Lines())
			turn(b, "two")
		}, func(d []byte) []byte {
			return appendRaw(`{"type":"custom","customType":"state","id":"dup00001","parentId":null,"timestamp":"2026-03-02T10:00:00.000Z"}`)(d)
		})},
		{rule: RuleBrokenParent, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.User(sessiongen.User{Meta: sessiongen.Meta{ParentID: "0badf00d"}, Blocks: []sessiongen.Block{sessiongen.Text("orphan")}})
			mark(b.Lines())
			b.AssistantText("ok")
		}, nil)},
		{rule: RuleParentCycle, make: atLines(func(b *sessiongen.Builder, mark func(int)) { turn(b, "one"); mark(b.Lines() + 1) }, appendRaw(
			`{"type":"custom","customType":"x","id":"cyc00001","parentId":"cyc00002","timestamp":"2026-03-02T10:00:00.000Z"}`,
			`{"type":"custom","customType":"x","id":"cyc00002","parentId":"cyc00001","timestamp":"2026-03-02T10:00:01.000Z"}`))},
		{rule: RuleUnreachable, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			_, _, _, a := turn(b, "one")
			turn(b, "an abandoned idea")
			mark(b.Lines() - 3)
			b.Branch(a)
			b.BranchSummary(sessiongen.BranchSummary{Summary: "Tried an idea; dropped it."})
			turn(b, "back on track")
		}, nil)},
		{rule: RuleDanglingRef, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.Label(sessiongen.Label{TargetID: "0ddba11a", Label: "start"})
			mark(b.Lines())
		}, nil)},
		{rule: RuleOrphanToolCall, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			b.UserText("run it")
			b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall(b.ToolCallID(), "bash", sessiongen.Obj{{K: "command", V: "make"}})}})
			mark(b.Lines())
			turn(b, "never mind, something else")
		}, nil)},
		{rule: RulePendingToolCall, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.UserText("run the tests")
			b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall(b.ToolCallID(), "bash", sessiongen.Obj{{K: "command", V: "go test ./..."}})}})
			mark(b.Lines())
		}, nil)},
		{rule: RuleOrphanToolResult, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.UserText("go on")
			b.ToolResultText("toolu_01NoSuchCallAnywhere", "read", "stale output")
			mark(b.Lines())
			b.AssistantText("ok")
		}, nil)},
		{rule: RuleCompactionKeptOff, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			turn(b, "two")
			b.Compaction(sessiongen.Compaction{Summary: "## Goal\nRead main.go twice.", FirstKeptEntryID: "5eed0000"})
			mark(b.Lines())
			turn(b, "three")
		}, nil)},
		{rule: RuleCompactionSplits, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			_, _, result, _ := turn(b, "two")
			b.Compaction(sessiongen.Compaction{Summary: "## Goal\nRead main.go twice.", FirstKeptEntryID: result})
			mark(b.Lines())
			turn(b, "three")
		}, nil)},
		{rule: RuleCompactionNoGain, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			u, _, _, _ := turn(b, "one")
			turn(b, "two")
			b.Compaction(sessiongen.Compaction{Summary: "## Goal\nRead main.go twice; nothing else happened yet.", FirstKeptEntryID: u})
			mark(b.Lines())
			turn(b, "three")
		}, nil)},
		{rule: RuleCompactionEmpty, make: func(t *testing.T) (string, []int) {
			var lines []int
			p := session(t, func(b *sessiongen.Builder) {
				turn(b, "one")
				_, _, _, a := turn(b, "two")
				b.Compaction(sessiongen.Compaction{Summary: "", FirstKeptEntryID: a})
				lines = append(lines, b.Lines())
				_, _, _, a = turn(b, "three")
				b.Compaction(sessiongen.Compaction{Summary: "## Decisions\nNo prior history.\n\n## Open TODOs\nNone.\n\n## Exact identifiers\nNone captured.", FirstKeptEntryID: a})
				lines = append(lines, b.Lines())
				turn(b, "four")
			}, nil)
			return p, lines
		}, sev: Note}, // the first is superseded: checked separately below
		{rule: RuleUsageSuspect, make: func(t *testing.T) (string, []int) {
			var line int
			pinned := func() *sessiongen.Usage { return &sessiongen.Usage{Input: 4096, Output: 100, TotalTokens: 4196} }
			p := session(t, func(b *sessiongen.Builder) {
				turn(b, "one")
				b.UserText("summarise the design doc")
				b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("It has three parts.")}, Usage: pinned()})
				line = b.Lines()
				b.UserText("and the second part?")
				b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("The second part is the cache.")}, Usage: pinned()})
			}, nil)
			return p, []int{line}
		}},
		{rule: RuleContextOverBudget, opts: func(o *Options) { o.MaxTokens = 20; o.Size.Method = "heuristic" }, make: atLines(func(b *sessiongen.Builder, mark func(int)) { turn(b, "one"); turn(b, "two"); mark(b.Lines()) }, nil)},
		{rule: RuleOversizedLine, opts: func(o *Options) { o.MaxLineBytes = 4000 }, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			b.UserText("cat the log")
			id := b.ToolCallID()
			b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall(id, "bash", sessiongen.Obj{{K: "command", V: "cat app.log"}})}})
			b.ToolResultText(id, "bash", strings.Repeat("GET /health 200 0.4ms\n", 300))
			mark(b.Lines())
			b.AssistantText("the log is all health checks")
		}, nil)},
		{rule: RuleLargeImage, opts: func(o *Options) { o.MaxImageBytes = 100 }, make: atLines(func(b *sessiongen.Builder, mark func(int)) {
			turn(b, "one")
			b.User(sessiongen.User{Blocks: []sessiongen.Block{sessiongen.Text("screenshot:"), sessiongen.ImageBlock(sessiongen.MakePNG(400, 300, 1))}})
			mark(b.Lines())
			b.AssistantText("I see it")
		}, nil)},
		{rule: RuleSecret, make: func(t *testing.T) (string, []int) {
			rng := rand.New(rand.NewPCG(1, 2))
			var lines []int
			p := session(t, func(b *sessiongen.Builder) {
				turn(b, "one")
				b.UserText("my key is sk-proj-" + randomToken(rng, b64url, 120) + " please use it")
				lines = append(lines, b.Lines())
				id := b.ToolCallID()
				b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall(id, "bash", sessiongen.Obj{{K: "command", V: "env"}})}})
				b.ToolResultText(id, "bash", "HOME=/root\nAWS_ACCESS_KEY_ID=AKIA"+randomToken(rng, upperAN, 16)+
					"\nAWS_SECRET_ACCESS_KEY="+randomToken(rng, alnum+"/+", 40)+"\nGH=ghp_"+randomToken(rng, alnum, 36)+"\n")
				lines = append(lines, b.Lines(), b.Lines(), b.Lines())
				b.AssistantText("curl -H 'Authorization: Bearer " + randomToken(rng, alnum, 40) + "' https://api.example.com")
				lines = append(lines, b.Lines())
				jwt := "eyJhbGciOiJIUzI1NiJ9.eyJ" + randomToken(rng, b64url, 40) + "." + randomToken(rng, b64url, 43)
				b.UserText("token: " + jwt)
				lines = append(lines, b.Lines())
				key := "-----BEGIN RSA PRIVATE KEY-----\n"
				for range 8 {
					key += randomToken(rng, alnum+"+/", 64) + "\n"
				}
				key += "-----END RSA PRIVATE KEY-----\n"
				b.UserText("deploy key:\n" + key + "and its token ghp_" + randomToken(rng, alnum, 36))
				lines = append(lines, b.Lines(), b.Lines())
				b.UserText("the docs say AKIAIOSFODNN7EXAMPLE and sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and Bearer YOUR_TOKEN_HERE_PLEASE_12345")
			}, nil)
			return p, lines
		}},
	}
}

// Every rule triggers at the right line on a session made to show it, and
// stays quiet on clean sessions.
func TestEveryRuleTriggersAtItsLine(t *testing.T) {
	covered := map[string]bool{}
	for _, rc := range ruleCases() {
		t.Run(rc.rule, func(t *testing.T) {
			covered[rc.rule] = true
			path, want := rc.make(t)
			opts := defaultOptions()
			if rc.opts != nil {
				rc.opts(opts)
			}
			got := findingsOf(lintFile(t, path, opts), rc.rule)
			var lines []int
			for _, f := range got {
				lines = append(lines, f.Line)
				if f.File != path || f.Message == "" || f.Remedy == "" || f.Key == "" {
					t.Errorf("incomplete finding %+v", f)
				}
			}
			if fmt.Sprint(lines) != fmt.Sprint(want) {
				t.Fatalf("%s at lines %v, want %v\n%+v", rc.rule, lines, want, got)
			}
			if rc.sev == 0 && got[len(got)-1].Severity != RuleByID(rc.rule).Severity {
				t.Errorf("severity %s, want the default %s", got[len(got)-1].Severity, RuleByID(rc.rule).Severity)
			}
			// The same options on clean sessions find nothing of this rule.
			// (sample-v3, a realistic session, with the default limits).
			for _, c := range []string{session(t, clean, nil), filepath.Join(oracle.ModuleRoot(), "testdata", "sample-v3.jsonl")} {
				if strings.HasSuffix(c, "sample-v3.jsonl") {
					if rc.rule == RuleUnreachable {
						continue // it has an abandoned branch on purpose
					}
					opts = defaultOptions()
				}
				if rc.rule == RuleContextOverBudget {
					continue // any session is over a 20-token budget; see TestBudget
				}
				if f := findingsOf(lintFile(t, c, opts), rc.rule); len(f) > 0 {
					t.Errorf("clean session %s: %+v", filepath.Base(c), f)
				}
			}
		})
	}
	for _, r := range Rules() {
		if !covered[r.ID] {
			t.Errorf("rule %s has no test session", r.ID)
		}
	}
}

func TestCleanSessionHasNoFindings(t *testing.T) {
	if fs := lintFile(t, session(t, clean, nil), nil); len(fs) != 0 {
		t.Fatalf("clean session: %+v", fs)
	}
}

// RuleByID returns a rule or nil.
func RuleByID(id string) *Rule { return byID[id] }
