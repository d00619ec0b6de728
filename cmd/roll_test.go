package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/rolling"
)

// rollTree lays out sessions the way pi and OpenClaw do, with the files a
// walk must skip next to them. It returns the root and the transcripts.
func rollTree(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	mk := func(rel string, o sessiongen.Options) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		sessiongen.Write(t, p, o)
		return p
	}
	files := []string{
		mk("pi/sessions/--home-dev-shop--/2026-03-02T09-00-00-000Z_0b6f3c1e.jsonl", sessiongen.Options{Seed: 51, Turns: 30, ToolCallsPerTurn: 4}),
		mk("pi/sessions/--home-dev-shop--/2026-03-03T09-00-00-000Z_1c7f4d2f.jsonl", sessiongen.Options{Seed: 52, Version: 1, Turns: 25, ToolCallsPerTurn: 4, Compactions: 1}),
		mk("openclaw/agents/main/sessions/abc.jsonl", sessiongen.Options{Seed: 53, Turns: 30, ToolCallsPerTurn: 5, Compactions: 1, Branches: 1}),
		mk("openclaw/agents/main/sessions/small.jsonl", sessiongen.Options{Seed: 54, Turns: 2, ToolCallsPerTurn: 1}),
	}
	// Never touched: archives, backups, locks (of a missing file), store.
	for _, rel := range []string{
		"openclaw/agents/main/sessions/abc.jsonl.reset.2026-03-08T13-03-27.008Z",
		"openclaw/agents/main/sessions/abc.jsonl.bak.2026-03-08T13-03-27.008Z",
		"openclaw/agents/main/sessions/gone.jsonl.lock",
		"openclaw/agents/main/sessions/sessions.json",
	} {
		testkit.WriteFile(t, filepath.Join(root, rel), []byte("not a session\n"), 0o644)
	}
	return root, files
}

func runRollCmd(t *testing.T, args ...string) ([]rolling.Report, string, string, error) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	root, _ := NewRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var reps []rolling.Report
	if strings.Contains(strings.Join(args, " "), "--json") {
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		for sc.Scan() {
			var r rolling.Report
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
			}
			reps = append(reps, r)
		}
	}
	return reps, out.String(), errOut.String(), err
}

func snapshot(t *testing.T, root string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			m[p] = b
		}
		return nil
	})
	return m
}

func TestRollBatchBothLayouts(t *testing.T) {
	oracle.Require(t)
	root, files := rollTree(t)
	state := t.TempDir()
	before := snapshot(t, root)
	// A 12k window puts the three bigger sessions over pi's threshold
	// (window − 16384 is negative: any content triggers), so use --trigger.
	args := []string{"roll", "--state-dir", state, "--json", "--context-window", "12000", "--trigger", "0.9", "--tokenizer", "heuristic", root}
	reps, _, stderr, err := runRollCmd(t, args...)
	if err != nil {
		t.Fatalf("roll: %v\n%s", err, stderr)
	}
	if len(reps) != len(files) {
		t.Fatalf("%d reports for %d transcripts: %+v", len(reps), len(files), reps)
	}
	rolled := map[string]rolling.Report{}
	for _, r := range reps {
		if r.Rolled {
			rolled[r.File] = r
		}
		if r.Error != "" {
			t.Errorf("%s: %s", r.File, r.Error)
		}
	}
	if len(rolled) != 3 {
		t.Fatalf("want the 3 big sessions rolled, got %d: %+v", len(rolled), reps)
	}
	after := snapshot(t, root)
	for p, b := range before {
		if _, ok := rolled[p]; ok {
			if !bytes.HasPrefix(after[p], b) {
				t.Errorf("%s: original bytes changed", p)
			}
			r := oracle.CheckOne(t, p)
			if !r.Loads || r.FirstRole != "compactionSummary" || r.OrphanToolResults != 0 || r.HeuristicTokens != rolled[p].KeptTokens {
				t.Errorf("%s: pi sees %+v, ctxtool reported %+v", p, r, rolled[p])
			}
		} else if !bytes.Equal(after[p], b) {
			t.Errorf("%s changed but was not rolled", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !strings.HasPrefix(p, state) {
			t.Errorf("new file %s left behind (lock?)", p)
		}
	}

	// The evicted messages are searchable: the first user message of the
	// pi session left the context and recall finds it.
	pi := files[0]
	s := testkit.Load(t, pi)
	var firstUser string
	for _, e := range s.Entries {
		if e.Role() == "user" {
			m, _ := s.Message(e)
			firstUser = m.Text()
			break
		}
	}
	s.Close()
	words := strings.Fields(firstUser)
	if len(words) < 4 {
		t.Fatalf("first user message too short: %q", firstUser)
	}
	ix, err := recall.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(context.Background(), strings.Join(words[:4], " "), recall.SearchOptions{Session: pi, MaxResults: 20})
	ix.Close()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range res.Hits {
		if h.StartLine <= rolled[pi].FirstKeptLine {
			found = true
		}
	}
	if !found {
		t.Fatalf("evicted message not found by recall: %+v", res.Hits)
	}

	// Second run: nothing changes.
	reps, _, _, err = runRollCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if r.Rolled {
			t.Errorf("second run rolled %s again", r.File)
		}
	}
	again := snapshot(t, root)
	for p, b := range after {
		if !strings.HasPrefix(p, state) && !bytes.Equal(again[p], b) {
			t.Errorf("second run changed %s", p)
		}
	}
}

func TestRollLockedOlderThanAndHuman(t *testing.T) {
	root, files := rollTree(t)
	state := t.TempDir()
	lock, err := filelock.Acquire(context.Background(), files[2], 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	orig, _ := os.ReadFile(files[2])
	// Everything was last written 2 h ago except pi session 2, "live":
	// --older-than leaves it alone.
	old := time.Now().Add(-2 * time.Hour)
	for _, f := range files {
		os.Chtimes(f, old, old)
	}
	now := time.Now()
	os.Chtimes(files[1], now, now)

	reps, _, _, err := runRollCmd(t, "roll", "--state-dir", state, "--json", "--context-window", "12000", "--trigger", "0.9",
		"--older-than", "10m", root)
	if exitcode.Code(err) != exitcode.Locked {
		t.Fatalf("exit %d (%v), want 4 for a locked session: %+v", exitcode.Code(err), err, reps)
	}
	by := map[string]rolling.Report{}
	for _, r := range reps {
		by[r.File] = r
	}
	if r := by[files[2]]; !r.Locked || r.Rolled || !strings.Contains(r.Reason, "locked") {
		t.Errorf("locked session: %+v", r)
	}
	if now, _ := os.ReadFile(files[2]); !bytes.Equal(now, orig) {
		t.Error("a locked session was written")
	}
	if r := by[files[1]]; !r.Skipped || r.Rolled {
		t.Errorf("--older-than: %+v", r)
	}
	if r := by[files[0]]; !r.Rolled {
		t.Errorf("old unlocked session not rolled: %+v", r)
	}

	// Human output: a table and the summary line.
	_, out, _, _ := runRollCmd(t, "roll", "--state-dir", state, "--dry-run", "--context-window", "12000", "--trigger", "0", root)
	for _, want := range []string{"FILE", "ROLLED", "locked", "sessions:"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
}

func TestRollFallbackWithoutRecall(t *testing.T) {
	oracle.Require(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "ctxtool.yaml")
	os.WriteFile(cfgFile, []byte("recall:\n  enabled: false\n"), 0o644)
	path := filepath.Join(dir, "s.jsonl")
	sessiongen.Write(t, path, sessiongen.Options{Seed: 61, Turns: 40, ToolCallsPerTurn: 5})
	orig, _ := os.ReadFile(path)

	// --no-fallback refuses and writes nothing.
	reps, _, _, err := runRollCmd(t, "roll", "--config", cfgFile, "--json", "--no-fallback", "--context-window", "40000", "--trigger", "0", path)
	if exitcode.Code(err) != exitcode.Runtime || len(reps) != 1 || reps[0].Rolled || !strings.Contains(reps[0].Reason, "--no-fallback") {
		t.Fatalf("--no-fallback: %v %+v", err, reps)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("--no-fallback wrote")
	}

	// Default: a safeguard compaction (extractive, offline) with a warning.
	reps, _, stderr, err := runRollCmd(t, "roll", "--config", cfgFile, "--json", "--context-window", "40000", "--trigger", "0", path)
	if err != nil {
		t.Fatalf("fallback: %v\n%s", err, stderr)
	}
	r := reps[0]
	if r.Fallback != "safeguard" || !r.Compacted || r.Rolled || !strings.Contains(stderr, "recall is disabled") {
		t.Fatalf("fallback report %+v\nstderr %s", r, stderr)
	}
	res := oracle.CheckOne(t, path)
	if !res.Loads || res.FirstRole != "compactionSummary" || res.OrphanToolResults != 0 {
		t.Fatalf("pi after the fallback: %+v", res)
	}
	if now, _ := os.ReadFile(path); !bytes.HasPrefix(now, orig) {
		t.Fatal("original bytes changed")
	}
}

func TestRollUsageErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	sessiongen.Write(t, path, sessiongen.Options{Seed: 62, Turns: 3})
	for _, args := range [][]string{
		{"roll", "--target-utilization", "1.5", path},
		{"roll", "--trigger", "-1", path},
		{"roll", "--tokenizer", "magic", path},
		{"roll", path + ".lock"},
		{"roll", filepath.Join(filepath.Dir(path), "missing.jsonl")},
	} {
		if args[len(args)-1] == path+".lock" {
			os.WriteFile(path+".lock", []byte("{}"), 0o644)
		}
		_, _, _, err := runRollCmd(t, args...)
		if exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: exit %d (%v), want 2", args, exitcode.Code(err), err)
		}
		os.Remove(path + ".lock")
	}
}

// A dry run of one session shows the exact note it would append and writes
// nothing.
func TestRollDryRunShowsNote(t *testing.T) {
	var src string
	for _, f := range oracle.Fixtures(t) {
		if strings.Contains(f, "large-session") {
			src = f
		}
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	data, _ := os.ReadFile(src)
	os.WriteFile(path, data, 0o644)
	_, out, _, err := runRollCmd(t, "roll", "--state-dir", t.TempDir(), "--trigger", "0", "--dry-run", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "eviction note that would be appended") || !strings.Contains(out, "Removed now: ") {
		t.Fatalf("dry run output:\n%s", out)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(data) {
		t.Fatal("dry run wrote to the session")
	}
	reps, _, _, _ := runRollCmd(t, "roll", "--state-dir", t.TempDir(), "--trigger", "0", "--dry-run", "--json", path)
	if len(reps) != 1 || !strings.HasPrefix(reps[0].Note, "[Context rolled by ctxtool]") {
		t.Fatalf("JSON note: %+v", reps)
	}
	// The note's numbers are the JSON's, and the text output showed that note.
	if n := fmt.Sprintf("Removed now: %d messages (about %s tokens)", reps[0].EvictedCount, humanInt(reps[0].EvictedTokens)); !strings.Contains(reps[0].Note, n) || !strings.Contains(out, n) {
		t.Fatalf("note %q does not say %q", reps[0].Note, n)
	}
	// A dry run says wouldRoll (as compact --dry-run says wouldCompact);
	// rolled is what happened: nothing.
	if reps[0].Rolled || reps[0].WouldRoll == nil || !*reps[0].WouldRoll {
		t.Fatalf("dry run: rolled %v wouldRoll %v", reps[0].Rolled, reps[0].WouldRoll)
	}
	reps, _, _, _ = runRollCmd(t, "roll", "--state-dir", t.TempDir(), "--dry-run", "--json", path)
	if len(reps) != 1 || reps[0].Rolled || reps[0].WouldRoll == nil || *reps[0].WouldRoll {
		t.Fatalf("dry run under the trigger: %+v", reps)
	}
}

// The fallback picks its summariser as compact does: llm.model alone (no
// llm.baseURL, no API key) is not an endpoint, so the offline extractive
// summariser is used instead of calling api.openai.com without a key.
func TestRollFallbackSummarizerLikeCompact(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "ctxtool.yaml")
	os.WriteFile(cfgFile, []byte("recall:\n  enabled: false\nllm:\n  model: gpt-4o-mini\n  maxRetries: 0\n  timeout: 2s\n"), 0o644)
	path := filepath.Join(dir, "s.jsonl")
	sessiongen.Write(t, path, sessiongen.Options{Seed: 61, Turns: 40, ToolCallsPerTurn: 5})
	reps, _, stderr, err := runRollCmd(t, "roll", "--config", cfgFile, "--json", "--context-window", "40000", "--trigger", "0", path)
	if err != nil || len(reps) != 1 {
		t.Fatalf("fallback: %v %+v\n%s", err, reps, stderr)
	}
	if r := reps[0]; r.Fallback != "safeguard" || !r.Compacted || !strings.Contains(r.Reason, "extractive") {
		t.Fatalf("fallback report %+v\nstderr %s", r, stderr)
	}
}
