package compaction

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/models"
)

func TestGeneratedSessionsAllStrategies(t *testing.T) {
	oracle.Require(t)
	sc := scenarios(t)
	names := make([]string, 0, len(sc))
	for n := range sc {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, strategy := range strategies {
			name, strategy := name, strategy
			t.Run(name+"/"+strategy, func(t *testing.T) {
				t.Parallel()
				file := testkit.CopyToTemp(t, sc[name])
				orig, _ := os.ReadFile(file)
				before := oracle.CheckOne(t, file)
				if !before.Loads || before.OrphanToolResults != 0 {
					t.Fatalf("generator bug: %+v", before)
				}
				res, err := CompactFile(context.Background(), file, Options{
					Settings:   Settings{Strategy: strategy, Force: true, KeepRecentTokens: 3000},
					Summarizer: Extractive{},
					Size:       estimate.Options{Window: models.Settings{ContextWindow: 200000}},
				})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Compacted {
					t.Fatalf("not compacted: %s", res.Reason)
				}
				checkWritten(t, orig, before, file, res, false)
				if name == "earlier-compaction" || name == "v1" {
					if !res.PreviousSummary {
						t.Fatal("previous summary not carried")
					}
				}
				t.Logf("%s/%s: %d → %d, summarized %d, kept %d (split %v)", name, strategy, res.TokensBefore, res.TokensAfter,
					res.SummarizedMessages, res.KeptMessages, res.SplitTurn)
			})
		}
	}
}

// keptToolResultsHaveCalls is the invariant: every tool result in the kept
// region has its call in the kept region (unless the call was never on the
// path at all).
func keptToolResultsHaveCalls(t *testing.T, label string, p *Preparation) {
	t.Helper()
	onPath := map[string]int{}
	for i, e := range p.Path {
		for _, id := range e.ToolCallIDs {
			onPath[id] = i
		}
	}
	for i := p.Cut; i < len(p.Path); i++ {
		e := p.Path[i]
		if e.Type() != "message" || e.Role() != "toolResult" {
			continue
		}
		if at, ok := onPath[e.ToolCallID]; ok && at < p.Cut && at >= p.BoundaryStart {
			t.Fatalf("%s: kept tool result on line %d has its call on line %d, before the cut (line %d)",
				label, e.Line, p.Path[at].Line, p.Path[p.Cut].Line)
		}
	}
}

// Every keepRecentTokens from tiny to large must give a cut that keeps tool
// pairs together, on every fixture and generated session.
func TestCutNeverOrphansAToolResult(t *testing.T) {
	files := scenarios(t)
	for _, fx := range oracle.Fixtures(t) {
		files[filepath.Base(fx)] = fx
	}
	for name, f := range files {
		s := testkit.Load(t, f)
		for keep := 50; keep <= 60000; keep = keep*5/4 + 1 {
			for _, st := range strategies {
				set := Settings{Strategy: st, KeepRecentTokens: keep, ProtectedTail: keep/500 + 1}
				p, err := Prepare(s, set)
				if err != nil {
					t.Fatal(err)
				}
				if p.Cut < 0 {
					continue
				}
				keptToolResultsHaveCalls(t, name, p)
				if p.Reason == "" && validCut(p.Path[p.Cut]) == false && p.Path[p.Cut].ProducesMessage() {
					t.Fatalf("%s keep=%d: cut at a %s", name, keep, p.Path[p.Cut].Role())
				}
			}
		}
		s.Close()
	}
}

func TestInterleavedResultMovesTheCut(t *testing.T) {
	f := scenarios(t)["interleaved"]
	s := testkit.Load(t, f)
	defer s.Close()
	path := s.Branch()
	// Find the steering user message and size keepRecentTokens so the
	// naive cut lands exactly on it.
	steer := -1
	for i, e := range path {
		if e.Role() == "user" {
			if m, _ := s.Message(e); m != nil && strings.HasPrefix(m.Text(), "Also tag it") {
				steer = i
			}
		}
	}
	if steer < 0 {
		t.Fatal("no steering message")
	}
	keep := 0
	for _, e := range path[steer:] {
		keep += e.Tokens()
	}
	p, err := Prepare(s, Settings{KeepRecentTokens: keep, Count: heuristic})
	if err != nil {
		t.Fatal(err)
	}
	if p.Moved == 0 || p.Cut >= steer {
		t.Fatalf("cut at line %d (steering message at line %d), moved %d times", p.Path[p.Cut].Line, path[steer].Line, p.Moved)
	}
	keptToolResultsHaveCalls(t, "interleaved", p)
}

func TestTruncateRewritesWithBackup(t *testing.T) {
	oracle.Require(t)
	sc := scenarios(t)
	for _, name := range []string{"earlier-compaction", "branches", "v1"} {
		t.Run(name, func(t *testing.T) {
			file := testkit.CopyToTemp(t, sc[name])
			orig, _ := os.ReadFile(file)
			before := oracle.CheckOne(t, file)
			res, err := CompactFile(context.Background(), file, Options{
				Settings: Settings{Strategy: StrategyDefault, Force: true, KeepRecentTokens: 3000}, Summarizer: Extractive{}, Truncate: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Backup == "" {
				t.Fatal("no backup reported")
			}
			bak, err := os.ReadFile(res.Backup)
			if err != nil || !bytes.Equal(bak, orig) {
				t.Fatalf("backup differs from the original: %v", err)
			}
			r := checkWritten(t, orig, before, file, res, true)
			if r.PathEntries >= before.PathEntries || r.CompactionsInFile != 1 {
				t.Fatalf("not truncated: %d path entries (was %d), %d compactions", r.PathEntries, before.PathEntries, r.CompactionsInFile)
			}
			after, _ := os.ReadFile(file)
			// every kept line but re-parented ones is byte-identical to an
			// original line
			origLines := map[string]bool{}
			for _, l := range strings.Split(string(orig), "\n") {
				origLines[l] = true
			}
			changed := 0
			for i, l := range strings.Split(strings.TrimSuffix(string(after), "\n"), "\n") {
				if i >= 2 && !origLines[l] {
					changed++
				}
			}
			if changed > 1 {
				t.Fatalf("%d kept lines were rewritten (at most the first kept entry's parentId may change)", changed)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	g := newGen(3)
	g.user("hello there, a short session")
	g.assistant("Hi.", nil)
	small := g.write(t, "small.jsonl")
	orig, _ := os.ReadFile(small)
	res, err := CompactFile(context.Background(), small, Options{Settings: Settings{Force: true}})
	if err != nil || res.Compacted || !strings.HasPrefix(res.Reason, "nothing to compact") {
		t.Fatalf("got %+v %v", res, err)
	}
	// below the trigger without --force
	f := scenarios(t)["branches"]
	res, err = CompactFile(context.Background(), f, Options{Settings: Settings{KeepRecentTokens: 3000}})
	if err != nil || res.Compacted || !strings.Contains(res.Reason, "below the trigger") {
		t.Fatalf("got %+v %v", res, err)
	}
	if now, _ := os.ReadFile(small); !bytes.Equal(now, orig) {
		t.Fatal("file changed")
	}
	// compacting twice: the second run is refused
	f = testkit.CopyToTemp(t, f)
	if _, err := CompactFile(context.Background(), f, Options{Settings: Settings{Force: true, KeepRecentTokens: 3000}}); err != nil {
		t.Fatal(err)
	}
	res, err = CompactFile(context.Background(), f, Options{Settings: Settings{Force: true, KeepRecentTokens: 3000}})
	if err != nil || res.Compacted || !strings.Contains(res.Reason, "already compacted") {
		t.Fatalf("got %+v %v", res, err)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := testkit.CopyToTemp(t, scenarios(t)["tool-dense"])
	orig, _ := os.ReadFile(f)
	res, err := CompactFile(context.Background(), f, Options{Settings: Settings{Force: true, KeepRecentTokens: 3000}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted || res.Summary == "" || res.TokensAfter == 0 || res.SummarizedMessages == 0 {
		t.Fatalf("dry run result %+v", res)
	}
	untouched(t, f, orig, "the dry run")
}

// untouched fails the test unless file still holds orig and no lock is
// left behind: what a compaction that writes nothing (after, what it was)
// leaves.
func untouched(t *testing.T, file string, orig []byte, after string) {
	t.Helper()
	if now, _ := os.ReadFile(file); !bytes.Equal(now, orig) {
		t.Fatalf("the session changed after %s", after)
	}
	if _, err := os.Stat(filelock.Path(file)); !os.IsNotExist(err) {
		t.Fatalf("lock left behind after %s", after)
	}
}

// The previous compaction's file lists (its details) carry into the new
// entry's lists, for v3 and v1 sessions and every strategy.
func TestPreviousFileListsAreMerged(t *testing.T) {
	sc := scenarios(t)
	for _, name := range []string{"earlier-compaction", "v1"} {
		for _, st := range strategies {
			res, err := CompactFile(context.Background(), sc[name], Options{Settings: Settings{Strategy: st, Force: true, KeepRecentTokens: 3000},
				DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			o := res.Outcome()
			if o == nil {
				t.Fatalf("%s/%s: nothing summarised: %s", name, st, res.Reason)
			}
			if !slices.Contains(o.ReadFiles, "docs/old-read.md") || !slices.Contains(o.ModifiedFiles, "src/old-mod.go") {
				t.Fatalf("%s/%s: previous lists not merged: read %v, modified %v", name, st, o.ReadFiles, o.ModifiedFiles)
			}
		}
	}
}

// appendingSummarizer appends a line to the session during its first call,
// like pi writing a reply while ctxtool summarises.
type appendingSummarizer struct {
	Extractive
	file string
	line []byte
	once sync.Once
}

func (a *appendingSummarizer) Summarize(ctx context.Context, r *Request) (string, error) {
	a.once.Do(func() {
		f, err := os.OpenFile(a.file, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			f.Write(append(a.line, '\n'))
			f.Close()
		}
	})
	return a.Extractive.Summarize(ctx, r)
}

// A line appended while --truncate summarises must survive in the
// rewritten file, not only in the backup.
func TestTruncateKeepsLinesAppendedMeanwhile(t *testing.T) {
	g := newGen(3)
	g.turns(0, 4, 4, 600)
	file := g.write(t, "live.jsonl")
	g.user("One more thing, written while ctxtool was summarising.")
	late := []byte(g.lines[len(g.lines)-1])
	sum := &appendingSummarizer{file: file, line: late}
	res, err := CompactFile(context.Background(), file, Options{Settings: Settings{Force: true, KeepRecentTokens: 1000}, Summarizer: sum, Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(file)
	if !bytes.HasSuffix(after, append(late, '\n')) {
		t.Fatalf("the line appended during summarising is not the last line of the rewritten file (backup %s)", res.Backup)
	}
	if baks, _ := filepath.Glob(file + ".bak.*"); len(baks) != 1 || baks[0] != res.Backup {
		t.Fatalf("backups %v, reported %s", baks, res.Backup)
	}
	if oracle.Available() {
		r := oracle.CheckOne(t, file)
		if !r.Loads || r.FirstRole != "compactionSummary" || r.HeuristicTokens != res.TokensAfter || r.ContextMessages != res.KeptMessages+1 {
			t.Fatalf("pi sees %+v, we reported %d tokens, %d kept", r, res.TokensAfter, res.KeptMessages)
		}
	}
}

// The kept region of the compaction in force starts where the context
// found its first kept entry: the first entry before it whose id is the
// one it names, as a scan of the ids finds it, on the generated scenarios,
// the fixtures and sessions with many compactions and branches.
func TestBoundaryStartIsTheIDScan(t *testing.T) {
	var files []string
	for _, f := range scenarios(t) {
		files = append(files, f)
	}
	testdata, _ := filepath.Glob(filepath.Join(oracle.ModuleRoot(), "testdata", "*.jsonl"))
	files = append(append(files, testdata...), oracle.Fixtures(t)...)
	for seed := uint64(1); seed <= 3; seed++ {
		file := filepath.Join(t.TempDir(), "s.jsonl")
		sessiongen.Write(t, file, sessiongen.Options{Seed: seed, Turns: 100, Compactions: 5, Branches: 2, ToolResultBytes: 200})
		files = append(files, file)
	}
	withPrevious := 0
	for _, f := range files {
		s := testkit.Load(t, f)
		p, err := Prepare(s, Settings{})
		if err != nil || p.PrevCompaction == nil {
			s.Close()
			continue
		}
		withPrevious++
		prev := slices.Index(p.Path, p.PrevCompaction)
		want := prev + 1
		if id := p.PrevCompaction.FirstKeptEntryID(); id != "" {
			for i := 0; i < prev; i++ {
				if p.Path[i].ID() == id {
					want = i
					break
				}
			}
		}
		if p.BoundaryStart != want {
			t.Errorf("%s: boundary starts at path index %d, the id scan at %d", filepath.Base(f), p.BoundaryStart, want)
		}
		s.Close()
	}
	if withPrevious < 5 {
		t.Fatalf("only %d sessions with a previous compaction", withPrevious)
	}
}
