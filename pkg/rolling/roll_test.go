package rolling

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// fakeRecall covers a file once Index has seen it at its current size.
type fakeRecall struct {
	mu      sync.Mutex
	indexed map[string]int64
	calls   int
}

func (f *fakeRecall) Index(_ context.Context, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.indexed == nil {
		f.indexed = map[string]int64{}
	}
	f.indexed[path] = st.Size()
	f.calls++
	return nil
}

func (f *fakeRecall) Covered(path string) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.indexed[path] == st.Size(), nil
}

// heuristic200k measures with pi's chars/4 in a 200k window: the sizes
// pi's loader (oracle.CheckOne) reports.
var heuristic200k = estimate.Options{Method: estimate.Heuristic, Window: models.Settings{ContextWindow: models.DefaultContextWindow}}

func newRoller(o Options) *Roller {
	if o.MinKeepMessages == 0 {
		o.MinKeepMessages = DefaultMinKeepMessages
	}
	return &Roller{Options: o, Size: heuristic200k, Recall: &fakeRecall{}}
}

// inWindow sets the window r measures in (the --context-window override).
func inWindow(r *Roller, tokens int) *Roller {
	r.Size.Window.ContextWindow = tokens
	return r
}

// rolledDetails reads the details of the compaction roll appended.
func lastLine(t testing.TB, path string) []byte {
	t.Helper()
	b := testkit.ReadFile(t, path)
	b = bytes.TrimSuffix(b, []byte("\n"))
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

type compactionLine struct {
	Type                string   `json:"type"`
	ID                  string   `json:"id"`
	Summary             string   `json:"summary"`
	FirstKeptEntryID    string   `json:"firstKeptEntryId"`
	FirstKeptEntryIndex *int     `json:"firstKeptEntryIndex"`
	TokensBefore        int      `json:"tokensBefore"`
	Details             *Details `json:"details"`
	FromHook            *bool    `json:"fromHook"`
}

// checkRolled runs pi's loader on a rolled file and checks every promise of
// the issue: it loads, the context fits the target, minKeepMessages are
// kept, the note is there with count and range, nothing is orphaned, and
// the original bytes are untouched.
func checkRolled(t *testing.T, path string, orig []byte, before oracle.Result, rep *Report, o Options) {
	t.Helper()
	if !rep.Rolled || rep.Error != "" {
		t.Fatalf("%s: not rolled: %+v", path, rep)
	}
	now := testkit.ReadFile(t, path)
	if !bytes.HasPrefix(now, orig) {
		t.Fatalf("%s: original bytes changed", path)
	}
	added := now[len(orig):]
	if len(orig) > 0 && orig[len(orig)-1] != '\n' {
		// A torn last line gets its newline first, or the note would be
		// glued onto it and lost.
		if len(added) == 0 || added[0] != '\n' {
			t.Fatalf("%s: appended after a line without newline", path)
		}
		added = added[1:]
	}
	if bytes.Count(added, []byte("\n")) != 1 {
		t.Fatalf("%s: expected exactly one appended line", path)
	}
	var cl compactionLine
	if err := json.Unmarshal(lastLine(t, path), &cl); err != nil || cl.Type != "compaction" || cl.Details == nil {
		t.Fatalf("%s: last line is not a compaction with details: %v", path, err)
	}
	d := cl.Details
	if d.Mode != "rolling" || d.EvictedCount != rep.EvictedCount || d.EvictedTokens != rep.EvictedTokens ||
		d.KeptTokens != rep.KeptTokens || d.FirstEvictedTimestamp != rep.FirstEvictedTimestamp ||
		d.LastEvictedTimestamp != rep.LastEvictedTimestamp || d.ReadFiles == nil || d.ModifiedFiles == nil {
		t.Fatalf("%s: details %+v do not match report %+v", path, d, rep)
	}
	if cl.FromHook == nil || *cl.FromHook {
		t.Errorf("%s: fromHook must be false (cumulative file lists are carried)", path)
	}
	if o.EvictionNote {
		wants := []string{thousands(rep.EvictedCount) + " message", rep.FirstEvictedTimestamp, rep.LastEvictedTimestamp, "ctxtool search"}
		if h, err := transcript.ReadHeader(path); err == nil && h.Cwd != "" {
			wants = append(wants, "--project "+filepath.Clean(h.Cwd)) // earlier sessions of the workspace
		}
		for _, want := range wants {
			if !strings.Contains(cl.Summary, want) {
				t.Errorf("%s: note lacks %q:\n%s", path, want, cl.Summary)
			}
		}
	}

	after := oracle.CheckOne(t, path)
	if !after.Loads {
		t.Fatalf("%s: pi does not load the rolled file: %s", path, after.Error)
	}
	if after.FirstRole != "compactionSummary" || after.LastCompaction == nil || after.LastCompaction.Summary != cl.Summary {
		t.Fatalf("%s: pi's context does not start with the note: first %s", path, after.FirstRole)
	}
	if after.ContextMessages != rep.KeptMessages+1 {
		t.Errorf("%s: pi rebuilds %d messages, ctxtool kept %d + note", path, after.ContextMessages, rep.KeptMessages)
	}
	if after.ContextMessages-1 < o.MinKeepMessages {
		t.Errorf("%s: kept %d < minKeepMessages %d", path, after.ContextMessages-1, o.MinKeepMessages)
	}
	if before.ContextMessages-rep.EvictedCount-btoi(before.FirstRole == "compactionSummary") != rep.KeptMessages {
		t.Errorf("%s: %d before − %d evicted ≠ %d kept", path, before.ContextMessages, rep.EvictedCount, rep.KeptMessages)
	}
	if after.OrphanToolResults != 0 {
		t.Errorf("%s: %d orphaned tool results after the roll", path, after.OrphanToolResults)
	}
	if after.OrphanToolCalls > before.OrphanToolCalls {
		t.Errorf("%s: orphaned tool calls grew %d → %d", path, before.OrphanToolCalls, after.OrphanToolCalls)
	}
	// With pi's heuristic as the estimator, what ctxtool says it kept is
	// exactly what pi counts.
	if rep.Method == "heuristic" {
		if after.HeuristicTokens != rep.KeptTokens {
			t.Errorf("%s: pi counts %d tokens, ctxtool reported %d kept", path, after.HeuristicTokens, rep.KeptTokens)
		}
		if rep.KeptTokens > rep.TargetTokens && rep.KeptMessages > o.MinKeepMessages {
			t.Errorf("%s: kept %d > target %d with %d messages", path, rep.KeptTokens, rep.TargetTokens, rep.KeptMessages)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestRollFixtures(t *testing.T) {
	oracle.Require(t)
	for _, fx := range oracle.Fixtures(t) {
		for _, target := range []float64{0.6, 0.25} {
			t.Run(filepath.Base(fx)+"@"+thousands(int(target*100)), func(t *testing.T) {
				path := testkit.CopyToTemp(t, fx)
				orig, _ := os.ReadFile(path)
				before := oracle.CheckOne(t, path)
				// The window is the session's own size, so every fixture
				// really has to lose 40 % / 75 % of its context.
				o := Options{TargetUtilization: target, MinKeepMessages: 10, EvictionNote: true, Force: true}
				r := inWindow(newRoller(o), before.HeuristicTokens)
				rep := r.Roll(context.Background(), path)
				checkRolled(t, path, orig, before, rep, o)
				t.Logf("%s: %d → %d tokens, evicted %d messages (%d tokens) %s … %s, kept %d",
					filepath.Base(fx), rep.TokensBefore, rep.KeptTokens, rep.EvictedCount, rep.EvictedTokens,
					rep.FirstEvictedTimestamp, rep.LastEvictedTimestamp, rep.KeptMessages)

				// Idempotent: a second run leaves the file alone.
				again := r.Roll(context.Background(), path)
				now, _ := os.ReadFile(path)
				if again.Rolled || again.Error != "" {
					t.Fatalf("second run rolled again: %+v", again)
				}
				if st, _ := os.Stat(path); st.Size() != int64(len(now)) {
					t.Fatal("second run changed the file")
				}
			})
		}
	}
}

func TestRollDefaultTriggerLeavesSmallSessionsAlone(t *testing.T) {
	fx := oracle.Fixtures(t)[0]
	path := testkit.CopyToTemp(t, fx)
	orig, _ := os.ReadFile(path)
	rep := newRoller(Options{EvictionNote: true}).Roll(context.Background(), path)
	if rep.Rolled || rep.Error != "" || !strings.Contains(rep.Reason, "under the compaction threshold") {
		t.Fatalf("%+v", rep)
	}
	if rep.TriggerTokens != 200000-16384 {
		t.Errorf("trigger %d, want pi's 183,616", rep.TriggerTokens)
	}
	now, _ := os.ReadFile(path)
	if !bytes.Equal(now, orig) {
		t.Fatal("file changed")
	}
	// A small window puts the same session over the threshold.
	rep = inWindow(newRoller(Options{EvictionNote: true}), 50000).Roll(context.Background(), path)
	if !rep.Rolled || rep.KeptTokens > 40000 {
		t.Fatalf("50k window: %+v", rep)
	}
	// --trigger 0.99 of a big window: not rolled.
	rep = newRoller(Options{EvictionNote: true, Trigger: 0.99}).Roll(context.Background(), path)
	if rep.Rolled || !strings.Contains(rep.Reason, "under the trigger") {
		t.Fatalf("trigger 0.99: %+v", rep)
	}
}

func TestRollCarriesEarlierRanges(t *testing.T) {
	oracle.Require(t)
	// before-compaction has a pi summary in force; roll three times with a
	// shrinking target.
	var fx string
	for _, f := range oracle.Fixtures(t) {
		if strings.Contains(f, "before-compaction") {
			fx = f
		}
	}
	path := testkit.CopyToTemp(t, fx)
	var reps []*Report
	for _, target := range []float64{0.5, 0.35, 0.2} {
		rep := newRoller(Options{TargetUtilization: target, EvictionNote: true, Force: true}).Roll(context.Background(), path)
		if !rep.Rolled {
			t.Fatalf("target %.2f: %+v", target, rep)
		}
		reps = append(reps, rep)
	}
	var cl compactionLine
	if err := json.Unmarshal(lastLine(t, path), &cl); err != nil {
		t.Fatal(err)
	}
	rs := cl.Details.Ranges
	if len(rs) != 4 || !rs[0].Summarized || rs[1].Summarized {
		t.Fatalf("ranges %+v: want the summarised history + 3 rolls", rs)
	}
	for i, rep := range reps {
		r := rs[i+1]
		if r.Messages != rep.EvictedCount || r.First != rep.FirstEvictedTimestamp || r.Last != rep.LastEvictedTimestamp {
			t.Errorf("range %d %+v does not match roll %+v", i+1, r, rep)
		}
	}
	for _, want := range []string{"earlier compaction had summarized", "Removed by 2 earlier rolls:", reps[0].FirstEvictedTimestamp} {
		if !strings.Contains(cl.Summary, want) {
			t.Errorf("note lacks %q:\n%s", want, cl.Summary)
		}
	}
	r := oracle.CheckOne(t, path)
	if !r.Loads || r.OrphanToolResults != 0 || r.CompactionsInFile != 5 {
		t.Fatalf("pi: %+v", r)
	}
	// pi's file tracking: the summarised history read files, so the lists
	// must not be empty after evicting it.
	if len(cl.Details.ReadFiles)+len(cl.Details.ModifiedFiles) == 0 {
		t.Error("file lists are empty after evicting tool-heavy history")
	}
}

func TestRollNoNote(t *testing.T) {
	oracle.Require(t)
	path := testkit.CopyToTemp(t, oracle.Fixtures(t)[1])
	orig, _ := os.ReadFile(path)
	before := oracle.CheckOne(t, path)
	o := Options{TargetUtilization: 0.3, MinKeepMessages: 10, Force: true}
	rep := newRoller(o).Roll(context.Background(), path)
	checkRolled(t, path, orig, before, rep, o)
	var cl compactionLine
	json.Unmarshal(lastLine(t, path), &cl)
	if cl.Summary != "" {
		t.Fatalf("--eviction-note=false wrote a note: %q", cl.Summary)
	}
}

func TestRollRecallAndFallback(t *testing.T) {
	path := testkit.CopyToTemp(t, oracle.Fixtures(t)[0])
	orig, _ := os.ReadFile(path)
	o := Options{TargetUtilization: 0.3, MinKeepMessages: 10, EvictionNote: true, Force: true}

	// Recall unavailable, no fallback wired: clear error, nothing written.
	r := &Roller{Options: o, Size: heuristic200k, RecallErr: errTest("recall.enabled is false")}
	rep := r.Roll(context.Background(), path)
	if rep.Rolled || rep.Err() == nil || rep.Fallback != "safeguard" || !strings.Contains(rep.Error, "fallback is unavailable") {
		t.Fatalf("%+v", rep)
	}
	// --no-fallback refuses.
	o2 := o
	o2.NoFallback = true
	rep = (&Roller{Options: o2, Size: heuristic200k, RecallErr: errTest("recall.enabled is false")}).Roll(context.Background(), path)
	if rep.Rolled || rep.Fallback != "" || !strings.Contains(rep.Reason, "--no-fallback") {
		t.Fatalf("%+v", rep)
	}
	// A fallback is called with the options and its report is marked.
	called := false
	r = &Roller{Options: o, Size: heuristic200k, RecallErr: errTest("no index"), Fallback: func(_ context.Context, p string, got Options) (*Report, error) {
		called = p == path && got.TargetUtilization == 0.3
		return &Report{Compacted: true}, nil
	}}
	rep = r.Roll(context.Background(), path)
	if !called || rep.Fallback != "safeguard" || !rep.Compacted || rep.Rolled || !strings.Contains(rep.Reason, "no index") {
		t.Fatalf("fallback: called %v %+v", called, rep)
	}
	now, _ := os.ReadFile(path)
	if !bytes.Equal(now, orig) {
		t.Fatal("file changed without recall")
	}

	// With recall: the session is indexed before anything is evicted.
	fr := &fakeRecall{}
	rep = (&Roller{Options: o, Size: heuristic200k, Recall: fr}).Roll(context.Background(), path)
	if !rep.Rolled || fr.calls == 0 {
		t.Fatalf("recall not asked: %+v", rep)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

func TestRollLockedAndDryRun(t *testing.T) {
	path := testkit.CopyToTemp(t, oracle.Fixtures(t)[0])
	orig, _ := os.ReadFile(path)
	o := Options{TargetUtilization: 0.3, MinKeepMessages: 10, EvictionNote: true, Force: true}

	rep := newRoller(Options{TargetUtilization: 0.3, MinKeepMessages: 10, EvictionNote: true, Force: true, DryRun: true}).Roll(context.Background(), path)
	if rep.Rolled || !rep.Would() || !rep.DryRun || rep.EvictedCount == 0 {
		t.Fatalf("dry run: %+v", rep)
	}

	lock, err := filelock.Acquire(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep = newRoller(o).Roll(context.Background(), path)
	var le *filelock.LockedError
	if rep.Rolled || !rep.Locked || !asLocked(rep.Err(), &le) {
		t.Fatalf("locked: %+v", rep)
	}
	// --wait gets it once released.
	go func() { time.Sleep(200 * time.Millisecond); lock.Release() }()
	o.Wait = 5 * time.Second
	rep = newRoller(o).Roll(context.Background(), path)
	if !rep.Rolled {
		t.Fatalf("after wait: %+v", rep)
	}
	now, _ := os.ReadFile(path)
	if !bytes.HasPrefix(now, orig) {
		t.Fatal("original bytes changed")
	}
}

func asLocked(err error, le **filelock.LockedError) bool {
	return err != nil && errorsAs(err, le)
}

var errorsAs = errors.As
