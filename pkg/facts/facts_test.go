package facts

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

func find(fs []Fact, c Class, sub string) *Fact {
	for i := range fs {
		if fs[i].Class == c && strings.Contains(fs[i].Value, sub) {
			return &fs[i]
		}
	}
	return nil
}

func TestDetectEveryClassWithLines(t *testing.T) {
	srcs := []Source{
		{Line: 3, Role: "user", Text: "Please add a retry to the uploader. Never log the api_secret field in any handler."},
		{Line: 4, Role: "assistant", Text: "We decided to use SQLite for the local cache instead of BoltDB. The debug proxy listens on port 31686."},
		{Line: 5, Role: "toolCall", Text: "/srv/app/internal/cache/store.go"},
		{Line: 6, Role: "toolResult", IsError: true, Text: "open /srv/app/config/prod.yaml: permission denied\nexit status 1"},
		{Line: 7, Role: "toolResult", Text: "commit 3f9a2c41be7d\nsee https://example.com/runbooks/cache and ticket OPS-4411, upload limit of 500 requests per minute, memory 512 MB, coverage 87.5%"},
		{Line: 8, Role: "user", Text: "Do not restart the billing service during business hours. Can you also check why the nightly job takes 45 minutes?"},
		{Line: 9, Role: "assistant", Text: "Pinned go to version 1.22.4 and the request id is 0b5f7c1e-2d3a-4c8b-9e6f-1a2b3c4d5e6f."},
	}
	fs := Detect(srcs)
	want := []struct {
		c    Class
		sub  string
		line int
		kind string
	}{
		{Request, "Please add a retry to the uploader", 3, ""},
		{Constraint, "Never log the api_secret field", 3, ""},
		{Decision, "decided to use SQLite", 4, ""},
		{Number, "port 31686", 4, "port"},
		{Identifier, "/srv/app/internal/cache/store.go", 5, "path"},
		{Error, "permission denied", 6, ""},
		{Identifier, "/srv/app/config/prod.yaml", 6, "path"},
		{Identifier, "3f9a2c41be7d", 7, "hash"},
		{Identifier, "https://example.com/runbooks/cache", 7, "url"},
		{Identifier, "OPS-4411", 7, "ticket"},
		{Number, "limit of 500", 7, "count"},
		{Number, "512 MB", 7, "size"},
		{Number, "87.5%", 7, "percent"},
		{Constraint, "Do not restart the billing service", 8, ""},
		{Request, "Can you also check why the nightly job", 8, ""},
		{Number, "45 minutes", 8, "duration"},
		{Number, "1.22.4", 9, "version"},
		{Identifier, "0b5f7c1e-2d3a-4c8b-9e6f-1a2b3c4d5e6f", 9, "uuid"},
	}
	for _, w := range want {
		f := find(fs, w.c, w.sub)
		if f == nil {
			t.Errorf("no %s fact containing %q; got:\n%s", w.c, w.sub, dump(fs))
			continue
		}
		if f.Line != w.line {
			t.Errorf("%s %q: line %d, want %d", w.c, w.sub, f.Line, w.line)
		}
		if w.kind != "" && f.Kind != w.kind {
			t.Errorf("%s %q: kind %q, want %q", w.c, w.sub, f.Kind, w.kind)
		}
	}
	// Numbers inside identifiers are not numbers of their own.
	for _, f := range fs {
		if f.Class == Number && (strings.Contains(f.Value, "3f9a") || strings.Contains(f.Value, "4411")) {
			t.Errorf("number found inside an identifier: %+v", f)
		}
	}
	// The request id's hex runs are not reported as hashes.
	if f := find(fs, Identifier, "2d3a"); f != nil && f.Kind == "hash" {
		t.Errorf("UUID part reported as a hash: %+v", f)
	}
}

func TestDetectDedupesAndKeepsLines(t *testing.T) {
	fs := Detect([]Source{
		{Line: 10, Role: "toolResult", Text: "wrote /tmp/work/out/report.csv (1200 rows)"},
		{Line: 12, Role: "assistant", Text: "The report is in /tmp/work/out/report.csv."},
		{Line: 20, Role: "toolResult", Text: "cat /tmp/work/out/report.csv"},
	})
	var n int
	for _, f := range fs {
		if f.Class == Identifier && f.Value == "/tmp/work/out/report.csv" {
			n++
			if f.Line != 10 || len(f.Lines) != 3 || f.Lines[2] != 20 {
				t.Errorf("lines: %d %v", f.Line, f.Lines)
			}
			if f.Origin != "assistant" {
				t.Errorf("origin %q, want assistant (the most conversational role it was seen in)", f.Origin)
			}
			if f.Sentence != "The report is in /tmp/work/out/report.csv." {
				t.Errorf("sentence %q: want the assistant's sentence", f.Sentence)
			}
		}
	}
	if n != 1 {
		t.Fatalf("identifier reported %d times, want once:\n%s", n, dump(fs))
	}
}

func TestDetectIgnoresCodeAndSmallTalk(t *testing.T) {
	fs := Detect([]Source{
		{Line: 2, Role: "toolResult", Text: "func (s *Store) Get(k string) ([]byte, error) {\n\tif err != nil { return nil, err }\n}"},
		{Line: 3, Role: "assistant", Text: "Sure, here it is."},
		{Line: 4, Role: "user", Text: "thanks"},
	})
	for _, f := range fs {
		if f.Class == Constraint || f.Class == Decision || f.Class == Request {
			t.Errorf("statement found in code or small talk: %+v", f)
		}
	}
}

func TestCorpusHas(t *testing.T) {
	fs := Detect([]Source{
		{Line: 1, Role: "user", Text: "Never log the api_secret field in the payment handlers."},
		{Line: 2, Role: "assistant", Text: "The debug proxy uses port 31686. Artifacts go to /var/lib/ci/artifacts/build-77."},
	})
	c := find(fs, Constraint, "api_secret")
	n := find(fs, Number, "31686")
	id := find(fs, Identifier, "/var/lib/ci/artifacts/build-77")
	if c == nil || n == nil || id == nil {
		t.Fatalf("facts not detected:\n%s", dump(fs))
	}
	cases := []struct {
		text string
		f    *Fact
		want bool
	}{
		{"- never log the API_SECRET field in the payment handlers", c, true},        // case/punctuation ignored
		{"Rule: the api_secret field is never logged by payment handlers.", c, true}, // reworded, content words kept
		{"Never log secrets.", c, false},
		{"proxy on :31686", n, true},
		{"proxy on 316860", n, false},
		{"see /var/lib/ci/artifacts/build-77 for logs", id, true},
		{"see /var/lib/ci/artifacts/build-7", id, false},
	}
	for _, k := range cases {
		if got := NewCorpus(k.text).Has(*k.f); got != k.want {
			t.Errorf("Has(%q) in %q = %v, want %v", k.f.Value, k.text, got, k.want)
		}
	}
	miss := Missing(fs, "Never log the api_secret field in the payment handlers.", "port 31686")
	if len(miss) != 1 || miss[0].Value != "/var/lib/ci/artifacts/build-77" {
		t.Errorf("Missing = %s", dump(miss))
	}
}

func TestSentences(t *testing.T) {
	got := Sentences("Edit ~/.pi/agent/settings.json first. Then v1.2 is fine!\n- Done.\n// never push to main。次の文")
	want := []string{"Edit ~/.pi/agent/settings.json first.", "Then v1.2 is fine!", "Done.", "never push to main。", "次の文"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Sentences = %q\nwant %q", got, want)
	}
}

func TestFromEntriesOnSession(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(self), "..", "..", "testdata", "sample-v3.jsonl")
	s := testkit.Load(t, path)
	defer s.Close()
	ctx := s.Context()
	var entries []*transcript.Entry
	for _, m := range ctx.Messages {
		entries = append(entries, m.Entry)
	}
	srcs, err := FromEntries(s, entries)
	if err != nil {
		t.Fatal(err)
	}
	fs := Detect(srcs)
	if len(fs) == 0 {
		t.Fatal("no facts in sample-v3")
	}
	lines := map[int]bool{}
	for _, e := range entries {
		lines[e.Line] = true
	}
	counts := Count(fs)
	byLine := map[int]*transcript.Entry{}
	for _, e := range entries {
		byLine[e.Line] = e
	}
	for _, f := range fs {
		e := byLine[f.Line]
		if e == nil {
			t.Errorf("fact %q on line %d, which is not a context message", f.Value, f.Line)
			continue
		}
		if f.Class != Identifier {
			continue
		}
		m, err := s.Message(e)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, src := range FromMessage(e, m) {
			text.WriteString(src.Text)
		}
		if !strings.Contains(text.String(), f.Value) {
			t.Errorf("identifier %q not in the message on its line %d", f.Value, f.Line)
		}
	}
	if counts[Identifier] == 0 {
		t.Errorf("no identifiers in a real coding session: %v", counts)
	}
	t.Logf("sample-v3: %v", counts)
}

func dump(fs []Fact) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + string(f.Class) + "/" + f.Kind + " L" + itoa(f.Line) + " " + f.Value + "\n")
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// findAndBlank must find and blank exactly what FindAllStringSubmatch and
// ReplaceAllString do (whole-match patterns), on real session text.
func TestFindAndBlankMatchesFindAndReplace(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	s := testkit.Load(t, filepath.Join(filepath.Dir(self), "..", "..", "testdata", "external", "pi-v1-large-session.jsonl"))
	defer s.Close()
	checked := 0
	for _, e := range s.Entries {
		m, err := s.Message(e)
		if err != nil || m == nil {
			continue
		}
		text := m.Text()
		for _, re := range []*regexp.Regexp{reURL(), reUUID(), reHostPort(), reHex(), reTicket()} {
			locs, blanked := findAndBlank(re, text, 0)
			if want := re.ReplaceAllString(text, " "); blanked != want {
				t.Fatalf("line %d, %s: blanked text differs", e.Line, re)
			}
			want := re.FindAllString(text, -1)
			if len(locs) != len(want) {
				t.Fatalf("line %d, %s: %d matches, want %d", e.Line, re, len(locs), len(want))
			}
			for i, l := range locs {
				if text[l[0]:l[1]] != want[i] {
					t.Fatalf("line %d, %s: match %d differs", e.Line, re, i)
				}
				checked++
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d matches checked", checked)
	}
}

func TestNumbersAreWholeTokens(t *testing.T) {
	f := Fact{Class: Number, Value: "768 MB"}
	for text, want := range map[string]bool{"quota_c768 directly": false, "v2.768": false, "cache 768MB": true, "(768 MB)": true, "x768": false} {
		if got := NewCorpus(text).Has(f); got != want {
			t.Errorf("Has(768 MB) in %q = %v, want %v", text, got, want)
		}
	}
}

// A decision written as a label ("Decision: …", as people and agents write
// them in notes and summaries) is a decision, in prose and in markdown.
func TestDecisionLabels(t *testing.T) {
	for _, text := range []string{
		"Decision: the deploy window is Tuesday 10:00 UTC.",
		"**Decision:** keep the retry budget at three attempts.",
		"Final decision: Postgres stays the default backend for the fleet.",
		"The decision was to pin the tokenizer to o200k for every model.",
	} {
		fs := Detect([]Source{{Text: text, Line: 1, Role: "user"}})
		if f := find(fs, Decision, ""); f == nil {
			t.Errorf("no decision in %q: %+v", text, fs)
		}
	}
	// A label-less mention is not a decision.
	if fs := Detect([]Source{{Text: "The decisionTree package has a helper for this.", Line: 1, Role: "assistant"}}); find(fs, Decision, "") != nil {
		t.Errorf("decisionTree made a decision: %+v", fs)
	}
}

// The user's words without OpenClaw's envelope; injected prompts are no
// user text; a greeting, "ok" or "continue" names no task.
func TestCleanUserText(t *testing.T) {
	for _, c := range []struct {
		in, want string
		injected bool
	}{
		{"System: [2026-04-18 16:07:01 GMT+8] Feishu[anuo] DM | u (ou_1) [msg:om_1]\nSystem: Exec finished (code 0)\n" +
			"Conversation info (untrusted metadata):\n```json\n{\"message_id\": \"om_1\"}\n```\n\nMove the plan to 07:00", "Move the plan to 07:00", false},
		{"[Telegram Arnomad id:1604754210 +7m 2026-02-07 06:27 GMT+1] Write it in .md\n[message_id: 51]", "Write it in .md", false},
		{"Replied message (untrusted, for context):\n```json\n{\"body\": \"x\"}\n```\nfix that", "fix that", false},
		{"System: [2026-04-18] Cron: done\nSystem: ## report", "", true},
		{"<task-notification>\n<task-id>b1</task-id>\n</task-notification>", "", true},
		{"Pre-compaction memory flush. Store durable memories now.", "", true},
		{"The System: line in the middle stays", "The System: line in the middle stays", false},
	} {
		got, inj := CleanUserText(c.in)
		if inj != c.injected || (!inj && got != c.want) {
			t.Errorf("%.40q: got %q injected=%v, want %q injected=%v", c.in, got, inj, c.want, c.injected)
		}
	}
	for s, want := range map[string]bool{"Ahoy!": false, "你好": false, "yes please": false, "OK, continue": false,
		"how do I configure tailscale?": true, "以后每天都告诉我这周计划": true} {
		if IsAsk(s) != want {
			t.Errorf("IsAsk(%q) = %v", s, !want)
		}
	}
}
