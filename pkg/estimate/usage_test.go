package estimate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/usagekit"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

func audit(t *testing.T, file string) (*UsageAudit, *transcript.Session) {
	t.Helper()
	s := testkit.Load(t, file)
	t.Cleanup(func() { s.Close() })
	path := s.Branch()
	w := models.ForSession(path, s.Header, models.Settings{})
	return auditUsage(path, w.Tokens), s
}

// The generated sessions whose usage lies: the record pi anchors on gets
// the class the case was built with, and ctxtool anchors elsewhere (or
// nowhere) when it is not trustworthy.
func TestAuditUsageGenerated(t *testing.T) {
	cases := usagekit.Write(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			a, _ := audit(t, c.File)
			if a.PiAnchor < 0 {
				t.Fatalf("no pi anchor")
			}
			pi := a.Records[a.PiAnchor]
			if string(pi.Class()) != c.PiAnchorClass {
				t.Fatalf("pi's anchor at line %d is %s (%s), want %s", pi.Line(), pi.Class(), a.Reason(&pi), c.PiAnchorClass)
			}
			rej := a.Rejected()
			if (rej != nil) != (c.PiAnchorClass != "fresh") {
				t.Fatalf("rejected = %+v for a pi anchor of class %s", rej, pi.Class())
			}
			if a.Anchor >= 0 && !a.Records[a.Anchor].Trusted() {
				t.Fatalf("anchor %+v is not fresh", a.Records[a.Anchor])
			}
			counts := a.Counts()
			switch c.Name {
			case "pinned-4096":
				// every real reply is pinned; the opening mirror is a pseudo reply
				if a.Anchor >= 0 || counts[UsagePseudo] != 1 || counts[UsagePinned] != len(a.Records)-1 {
					t.Fatalf("counts %v anchor %d", counts, a.Anchor)
				}
				if !strings.Contains(a.Reason(&pi), "4096") || !strings.Contains(a.Reason(&pi), "power of two") {
					t.Fatalf("reason %q", a.Reason(&pi))
				}
			case "flat-large":
				if a.Anchor < 0 || a.Records[a.Anchor].Prompt() >= 61440 || counts[UsageFlat] < 20 {
					t.Fatalf("counts %v anchor %+v", counts, a.Records[a.Anchor])
				}
			case "mirror-zero":
				if a.Anchor != a.PiAnchor-1 || counts[UsagePseudo] < 5 || counts[UsageFresh] < 20 {
					t.Fatalf("counts %v anchor %d pi %d", counts, a.Anchor, a.PiAnchor)
				}
			default:
				if counts[UsageFresh] != len(a.Records) {
					t.Fatalf("counts %v: every record of %s is real", counts, c.Name)
				}
			}
		})
	}
}

// A reply that repeats the previous prompt size with messages in between
// is flat; one that counts far less than the transcript holds is
// implausible; a record before the compaction in force is stale.
func TestAuditUsageRules(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.jsonl")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	b := sessiongen.NewBuilder(f, sessiongen.Config{Seed: 7, Provider: "openai", Model: "gpt-4o", SystemTokens: 2000})
	big := strings.Repeat("func f(x int) int { return x * 2 }\n", 400) // ~3.6k pi tokens
	b.UserText("read it")
	b.AssistantText("first") // real usage: fresh
	b.UserText(big)          // the context grows
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("second")},
		Usage: &sessiongen.Usage{Input: 1500, Output: 10, TotalTokens: 1510}}) // < half of ~5.6k: implausible
	b.UserText("and again " + big)
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("third")},
		Usage: &sessiongen.Usage{Input: 9000, Output: 5, TotalTokens: 9005}})
	b.UserText("one more")
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("fourth")},
		Usage: &sessiongen.Usage{Input: 9000, Output: 7, TotalTokens: 9007}}) // same prompt: flat, both
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	a, _ := audit(t, file)
	var classes []UsageClass
	for _, r := range a.Records {
		classes = append(classes, r.Class())
	}
	if want := []UsageClass{UsageFresh, UsageImplausible, UsageFlat, UsageFlat}; !slices.Equal(classes, want) {
		t.Fatalf("classes %v, want %v (%+v)", classes, want, a.Records)
	}
	if a.Anchor != 0 || a.Rejected() != &a.Records[3] {
		t.Fatalf("anchor %d rejected %+v", a.Anchor, a.Rejected())
	}

	// pi-v1-session-d5dde00 ends right after a compaction: every record
	// predates it.
	a, _ = audit(t, oracle.Fixture("pi-v1-session-d5dde00.jsonl"))
	if a.Anchor >= 0 || a.Rejected() == nil || a.Rejected().Class() != UsageStale || a.LastSound < 0 {
		t.Fatalf("stale fixture: anchor %d rejected %+v", a.Anchor, a.Rejected())
	}
	for _, f := range []string{"pi-v1-large-session.jsonl", "pi-v1-before-compaction.jsonl"} {
		a, _ := audit(t, oracle.Fixture(f))
		c := a.Counts()
		if c[UsagePinned]+c[UsageFlat]+c[UsageImplausible]+c[UsageZero] != 0 || a.Rejected() != nil {
			t.Fatalf("%s: real Anthropic usage misclassified: %v", f, c)
		}
	}
}

// The real OpenClaw sessions with lying usage (../shared/fixtures/wild).
func TestAuditUsageWild(t *testing.T) {
	dir := oracle.WildDir(t)
	want := map[string]struct {
		rejected UsageClass // class of pi's anchor when rejected ("" = trusted)
		anchor   bool       // ctxtool finds a fresh anchor
	}{
		"openclaw/archeoneocode-fad751fa.jsonl":               {UsagePinned, false},
		"openclaw/rs-anuo-0139686e-2compactions.jsonl":        {UsagePseudo, true},
		"openclaw/sirdeuce-0f87ff4a-5compactions-small.jsonl": {UsagePinned, false},
		"openclaw/muskfanx-d27ecd5a-3compactions.jsonl":       {"", true},
		"pi/idahovault-pi-019da8eb.jsonl":                     {"", true},
		"pi/agentsessions-fixture-pi-small.jsonl":             {UsageStale, false},
	}
	for name, w := range want {
		a, _ := audit(t, filepath.Join(dir, name))
		got := UsageClass("")
		if r := a.Rejected(); r != nil {
			got = r.Class()
		}
		if got != w.rejected || (a.Anchor >= 0) != w.anchor {
			t.Errorf("%s: rejected %q, anchor %d; want %q, anchor %v", name, got, a.Anchor, w.rejected, w.anchor)
		}
	}
}

// Counts tallies the records by class.
func (a *UsageAudit) Counts() map[UsageClass]int {
	out := map[UsageClass]int{}
	for _, r := range a.Records {
		out[r.Class()]++
	}
	return out
}

// Methods hands out a copy: a caller that edits it (sorts it for help,
// say) cannot change what the package accepts.
func TestMethodsIsACopy(t *testing.T) {
	m := Methods()
	m[0] = "edited"
	if Methods()[0] != Auto || !ValidMethod(Auto) || ValidMethod("edited") {
		t.Fatalf("editing Methods() changed the table: %v", Methods())
	}
}
