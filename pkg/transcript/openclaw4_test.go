package transcript_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/agentkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// An OpenClaw 2026.9 session (header version 4) with what version 4 adds
// to pi's tree: a "reset" boundary (here a preserve-tail reset, which keeps
// the user/assistant turns and answered tool results from its
// firstKeptEntryId) and messages marked excludeFromContext (a
// context-free command's prompt and answer). OpenClaw's context builder
// (dist session-*.mjs, agent-core harness/session/session.ts:
// iterateSessionContextEntries; selectResetKeptEntries in
// tool-result-pairing-*.mjs) sends, of this session: b1 b2 b3 b6 b7 c1 c3
// — not the turn before the reset's tail (a1–a4), not the orphan result
// (b4) nor the custom message (b5) in the tail, not the excluded c2; the
// excluded b6 is in because the reset kept it. Before, ctxtool read all
// 15 entries' 14 messages as pi does (pi knows neither).
var openClawV4Lines = []string{
	`{"type":"session","version":4,"id":"oc-reset-1","timestamp":"2026-12-02T06:00:00.000Z","cwd":"/ws"}`,
	`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-02T06:00:01.000Z","message":{"role":"user","content":"first question","timestamp":1}}`,
	`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-12-02T06:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"first answer"}],"provider":"fake","model":"m","api":"openai-completions","stopReason":"stop","usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12},"timestamp":2}}`,
	`{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-12-02T06:00:03.000Z","message":{"role":"user","content":"/status","excludeFromContext":true,"timestamp":3}}`,
	`{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-12-02T06:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"status: fine"}],"provider":"openclaw","model":"gateway-injected","api":"openai-responses","stopReason":"stop","excludeFromContext":true,"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"timestamp":4}}`,
	`{"type":"message","id":"b1","parentId":"a4","timestamp":"2026-12-02T06:00:05.000Z","message":{"role":"user","content":"second question","timestamp":5}}`,
	`{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-12-02T06:00:06.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"notes.txt"}}],"provider":"fake","model":"m","api":"openai-completions","stopReason":"toolUse","usage":{"input":20,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":22},"timestamp":6}}`,
	`{"type":"message","id":"b3","parentId":"b2","timestamp":"2026-12-02T06:00:07.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"read","content":[{"type":"text","text":"notes body"}],"isError":false,"timestamp":7}}`,
	`{"type":"message","id":"b4","parentId":"b3","timestamp":"2026-12-02T06:00:08.000Z","message":{"role":"toolResult","toolCallId":"call_orphan","toolName":"read","content":[{"type":"text","text":"orphan result"}],"isError":false,"timestamp":8}}`,
	`{"type":"custom_message","id":"b5","parentId":"b4","timestamp":"2026-12-02T06:00:09.000Z","customType":"note","content":"a custom note","display":true}`,
	`{"type":"message","id":"b6","parentId":"b5","timestamp":"2026-12-02T06:00:10.000Z","message":{"role":"user","content":"/status again","excludeFromContext":true,"timestamp":10}}`,
	`{"type":"message","id":"b7","parentId":"b6","timestamp":"2026-12-02T06:00:11.000Z","message":{"role":"assistant","content":[{"type":"text","text":"second answer"}],"provider":"fake","model":"m","api":"openai-completions","stopReason":"stop","usage":{"input":30,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":32},"timestamp":11}}`,
	`{"type":"reset","id":"r1","parentId":"b7","timestamp":"2026-12-02T06:00:12.000Z","reason":"reset","firstKeptEntryId":"b1"}`,
	`{"type":"message","id":"c1","parentId":"r1","timestamp":"2026-12-02T06:00:13.000Z","message":{"role":"user","content":"third question","timestamp":13}}`,
	`{"type":"message","id":"c2","parentId":"c1","timestamp":"2026-12-02T06:00:14.000Z","message":{"role":"user","content":"/status once more","excludeFromContext":true,"timestamp":14}}`,
	`{"type":"message","id":"c3","parentId":"c2","timestamp":"2026-12-02T06:00:15.000Z","message":{"role":"assistant","content":[{"type":"text","text":"third answer"}],"provider":"fake","model":"m","api":"openai-completions","stopReason":"stop","usage":{"input":40,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":42},"timestamp":15}}`,
}

// openClawSends is what OpenClaw 2026.9.6's buildSessionContext gives for
// openClawV4Lines (run by TestOpenClawV4ContextAsOpenClawBuildsIt).
var openClawSends = []string{"user:second question", "assistant:", "toolResult:notes body", "user:/status again",
	"assistant:second answer", "user:third question", "assistant:third answer"}

func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "openclaw-v4.jsonl")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func contextOf(t *testing.T, file string) []string {
	t.Helper()
	s, err := transcript.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	for _, m := range s.Context().Messages {
		msg, err := s.Message(m.Entry)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Role+":"+msg.Text())
	}
	return out
}

func TestOpenClawV4ResetAndExcludedMessages(t *testing.T) {
	got := contextOf(t, writeLines(t, openClawV4Lines))
	if strings.Join(got, "|") != strings.Join(openClawSends, "|") {
		t.Errorf("context\n%q\nwant what OpenClaw sends\n%q", got, openClawSends)
	}
	// A reset without firstKeptEntryId (/new, "clear"): only what follows.
	clear := append([]string(nil), openClawV4Lines...)
	clear[12] = strings.Replace(clear[12], `,"firstKeptEntryId":"b1"`, "", 1)
	got = contextOf(t, writeLines(t, clear))
	if want := []string{"user:third question", "assistant:third answer"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("after a clearing reset: %q; want %q", got, want)
	}
}

// The same session through OpenClaw's own context builder (the pinned
// OpenClaw, when installed): ctxtool's context is OpenClaw's, message for
// message, for the preserve-tail and the clearing reset.
func TestOpenClawV4ContextAsOpenClawBuildsIt(t *testing.T) {
	in, err := agentkit.FindOpenClaw()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("real OpenClaw: %v", err)
	}
	dist := filepath.Join(filepath.Dir(in.Entry), "dist")
	mods, _ := filepath.Glob(filepath.Join(dist, "session-*.mjs"))
	var mod, name string
	export := regexp.MustCompile(`buildSessionContext as (\w+)`)
	for _, m := range mods {
		b, _ := os.ReadFile(m)
		if strings.Contains(string(b), "function buildSessionContext(pathEntries)") {
			if x := export.FindSubmatch(b); x != nil {
				mod, name = m, string(x[1])
			}
		}
	}
	if mod == "" {
		t.Fatalf("no module in %s exports buildSessionContext(pathEntries): the pinned OpenClaw changed", dist)
	}
	script := filepath.Join(t.TempDir(), "context.mjs")
	os.WriteFile(script, []byte(`import { readFileSync } from "node:fs";
const mod = await import(process.argv[2]);
const entries = readFileSync(process.argv[3], "utf8").trim().split("\n").map(JSON.parse).filter(e => e.type !== "session");
for (const m of mod[process.argv[4]](entries).messages) {
	const text = typeof m.content === "string" ? m.content : (m.content ?? []).filter(b => b.type === "text").map(b => b.text).join("");
	console.log(m.role + ":" + text);
}
`), 0o600)
	clear := append([]string(nil), openClawV4Lines...)
	clear[12] = strings.Replace(clear[12], `,"firstKeptEntryId":"b1"`, "", 1)
	for _, lines := range [][]string{openClawV4Lines, clear} {
		f := writeLines(t, lines)
		out, err := exec.Command(in.Node, script, mod, f, name).CombinedOutput()
		if err != nil {
			t.Fatalf("OpenClaw's buildSessionContext: %v\n%s", err, out)
		}
		want := strings.Split(strings.TrimSpace(string(out)), "\n")
		if got := contextOf(t, f); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("ctxtool's context\n%q\nOpenClaw's\n%q", got, want)
		}
	}
}
