package compaction

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/factgen"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/facts"
)

// withoutProbe is the extractive summariser with every summary line that
// carries one planted fact removed — a summary that forgot it.
type withoutProbe struct {
	Extractive
	probe string
}

func (w withoutProbe) Summarize(ctx context.Context, r *Request) (string, error) {
	s, err := w.Extractive.Summarize(ctx, r)
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !probeIn(l, w.probe) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n"), err
}

// plantedIn returns the planted facts the dropped list names: a dropped
// fact on a planted fact's line that carries its probe.
func plantedIn(dropped []facts.Fact, planted []factgen.Planted) map[string]bool {
	out := map[string]bool{}
	for _, p := range planted {
		for _, f := range dropped {
			if f.Line == p.Line && (probeIn(f.Value, p.Probe) || probeIn(f.Sentence, p.Probe)) {
				out[p.Probe] = true
			}
		}
	}
	return out
}

// The audit names exactly the planted facts a summary lost: remove one
// fact of each class from the summary by hand, and the audit lists that
// one (with its line) and no other planted fact; the entry's details.audit
// says the same to pi's loader.
func TestAuditNamesTheRemovedFact(t *testing.T) {
	src := filepath.Join(t.TempDir(), "facts.jsonl")
	ps := factgen.Write(t, src, factgen.Options{Seed: 77, Turns: 24, FactsWithin: 0.5})
	orig := testkit.ReadFile(t, src)
	set := Settings{Force: true, KeepRecentTokens: 8000}
	// the untouched summary drops no planted fact
	res, err := CompactFile(context.Background(), src, Options{Settings: set, Summarizer: Extractive{}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := plantedIn(res.Audit.Dropped, ps); len(got) != 0 {
		t.Fatalf("the extractive summary already drops planted facts: %v", got)
	}
	type written struct {
		file  string
		probe string
		res   *Result
	}
	var checks []written
	dir := t.TempDir() // outlives the subtests: pi checks the files at the end
	done := map[string]bool{}
	for _, p := range ps {
		if done[p.Class] {
			continue
		}
		done[p.Class] = true
		t.Run(p.Class+"/"+p.Role, func(t *testing.T) {
			f := filepath.Join(dir, p.Class+".jsonl")
			testkit.WriteFile(t, f, orig, 0o644)
			if p.Line >= res.FirstKeptLine {
				t.Fatalf("planted fact on line %d is kept verbatim (from line %d)", p.Line, res.FirstKeptLine)
			}
			res, err := CompactFile(context.Background(), f, Options{Settings: set, Summarizer: withoutProbe{probe: p.Probe}})
			if err != nil {
				t.Fatal(err)
			}
			got := plantedIn(res.Audit.Dropped, ps)
			if len(got) != 1 || !got[p.Probe] {
				t.Fatalf("removed %q (line %d); the audit names these planted facts: %v", p.Probe, p.Line, got)
			}
			var line int
			for _, d := range res.Audit.Dropped {
				if probeIn(d.Value, p.Probe) || probeIn(d.Sentence, p.Probe) {
					line = d.Line
				}
			}
			if line != p.Line {
				t.Errorf("audit line %d, planted on line %d", line, p.Line)
			}
			checks = append(checks, written{f, p.Probe, res})
		})
	}
	if len(done) != len(factgen.Classes) {
		t.Fatalf("tested %d classes, want %d", len(done), len(factgen.Classes))
	}
	if !oracle.Available() || len(checks) == 0 {
		return
	}
	var files []string
	for _, c := range checks {
		files = append(files, c.file)
	}
	for i, pi := range oracle.Check(t, false, true, files...) {
		c := checks[i]
		var d struct {
			Audit DetailsAudit `json:"audit"`
		}
		if pi.LastCompaction == nil || json.Unmarshal(pi.LastCompaction.Details, &d) != nil {
			t.Fatalf("%s: pi sees no compaction details", c.file)
		}
		if d.Audit.Dropped != len(c.res.Audit.Dropped) || d.Audit.Facts != c.res.Audit.Facts {
			t.Errorf("details.audit %+v, result audit %d/%d", d.Audit, len(c.res.Audit.Dropped), c.res.Audit.Facts)
		}
		if probeIn(pi.ContextText, c.probe) {
			t.Errorf("%q is still in pi's context: the test removed nothing", c.probe)
		}
	}
}

// --fail-on-dropped N refuses to write a summary that drops more than N
// facts, with exit code 3, and writes nothing.
func TestFailOnDroppedWritesNothing(t *testing.T) {
	f := filepath.Join(t.TempDir(), "facts.jsonl")
	planted := factgen.Write(t, f, factgen.Options{Seed: 78, Turns: 24, FactsWithin: 0.5})
	orig, _ := os.ReadFile(f)
	zero := 0
	set := Settings{Force: true, KeepRecentTokens: 8000}
	res, err := CompactFile(context.Background(), f, Options{Settings: set, Summarizer: withoutProbe{probe: planted[0].Probe}, FailOnDropped: &zero})
	if err == nil || exitcode.Code(err) != exitcode.Threshold {
		t.Fatalf("err %v (code %d), want exit 3", err, exitcode.Code(err))
	}
	if res.Compacted || res.Audit == nil || len(res.Audit.Dropped) == 0 {
		t.Fatalf("result %+v", res)
	}
	if now, _ := os.ReadFile(f); string(now) != string(orig) {
		t.Fatal("the session was written")
	}
	// a limit the summary stays within writes
	lim := len(res.Audit.Dropped)
	res, err = CompactFile(context.Background(), f, Options{Settings: set, Summarizer: withoutProbe{probe: planted[0].Probe}, FailOnDropped: &lim})
	if err != nil || !res.Compacted {
		t.Fatalf("at the limit: %v %+v", err, res)
	}
}

// The audit tells the facts that mattered from bulk tool output: a path
// the user gave counts, a hash only a download page listed does not.
func TestAuditSplitsBulk(t *testing.T) {
	found := facts.Merge([][]facts.Fact{
		facts.Scan(facts.Source{Text: "Please deploy from /srv/app/releases/current now.", Line: 3, Role: "user"}),
		facts.Scan(facts.Source{Text: "asset.tar.gz sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Line: 5, Role: "toolResult"}),
	})
	a := audit(found, "## Goal\n- deploy", "")
	if a.DroppedMattered != 2 || a.DroppedBulk != 1 { // the path and the request; the hash
		t.Fatalf("mattered %d, bulk %d; want 2 and 1: %+v", a.DroppedMattered, a.DroppedBulk, a.Dropped)
	}
}

// The identifier retry asks first for what the extractive summariser
// keeps first: identifiers said in the conversation before tool-call
// arguments before bulk tool output.
func TestRetryIdentifiersFollowTheSummaryRanking(t *testing.T) {
	found := facts.Merge([][]facts.Fact{
		facts.Scan(facts.Source{Text: "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Line: 2, Role: "toolResult"}),
		facts.Scan(facts.Source{Text: "/srv/app/deploy/run.sh", Line: 3, Role: "toolCall"}),
		facts.Scan(facts.Source{Text: "Use https://example.org/spec for the format.", Line: 4, Role: "user"}),
	})
	got := audit(found, "", "").droppedIdentifiers()
	want := []string{"https://example.org/spec", "/srv/app/deploy/run.sh", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("retry order %q, want %q", got, want)
	}
	for i := 1; i < len(found); i++ {
		if factTier(found[i]) > factTier(found[i-1]) {
			t.Fatalf("fixture: facts should rank in the reverse of session order")
		}
	}
}
