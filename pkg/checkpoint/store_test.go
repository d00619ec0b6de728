package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

func writeN(t *testing.T, s *Store, key string, n int) []*WriteResult {
	t.Helper()
	var out []*WriteResult
	for i := 0; i < n; i++ {
		cp := sampleCheckpoint()
		cp.Meta.TokenUsage.InputTokens = 1000 * (i + 1)
		res, err := s.Write(key, cp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

func TestRetentionKeepsNewestFive(t *testing.T) {
	s := &Store{StateDir: t.TempDir()}
	res := writeN(t, s, "k", 7)
	if res[6].ID != "cp_007" {
		t.Fatalf("7th id %s", res[6].ID)
	}
	if strings.Join(res[5].Pruned, ",") != "cp_001" || strings.Join(res[6].Pruned, ",") != "cp_002" {
		t.Fatalf("pruned %v %v", res[5].Pruned, res[6].Pruned)
	}
	list, _ := s.List("k")
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "cp_003,cp_004,cp_005,cp_006,cp_007" {
		t.Fatalf("kept %v", ids)
	}
	latest, warns, err := s.Latest("k")
	if err != nil || latest.Meta.CheckpointID != "cp_007" || len(warns) > 0 {
		t.Fatalf("latest %v %v %v", latest, warns, err)
	}
	// Every checkpoint links to its predecessor; the first has none.
	for _, e := range list {
		cp, err := s.Load("k", e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := formatID(e.Number - 1); cp.Meta.PreviousCheckpoint != want {
			t.Errorf("%s previous = %q, want %q", e.ID, cp.Meta.PreviousCheckpoint, want)
		}
	}
	// Numbering continues after pruning and is never reused.
	more := writeN(t, s, "k", 1)
	if more[0].ID != "cp_008" {
		t.Fatalf("next id %s", more[0].ID)
	}
	// Custom retention.
	s3 := &Store{StateDir: t.TempDir(), Keep: 2}
	writeN(t, s3, "k", 4)
	if l, _ := s3.List("k"); len(l) != 2 {
		t.Fatalf("keep 2: %d files", len(l))
	}
}

func TestWriteOnceNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cp_001.yaml")
	if err := writeOnce(p, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := writeOnce(p, []byte("b")); err == nil {
		t.Fatal("second write succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "a" {
		t.Fatalf("content %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temp files left: %v", ents)
	}
}

func TestDedupe(t *testing.T) {
	last := sampleCheckpoint()
	last.Meta.TokenUsage.InputTokens = 100000
	for _, c := range []struct {
		tokens int
		skip   bool
	}{{100000, true}, {104999, true}, {95001, true}, {105000, false}, {94000, false}, {200000, false}} {
		skip, delta := Dedupe(last, c.tokens, DefaultDedupeThreshold)
		if skip != c.skip {
			t.Errorf("tokens %d: skip=%v (delta %.4f), want %v", c.tokens, skip, delta, c.skip)
		}
	}
	if skip, _ := Dedupe(nil, 5, DefaultDedupeThreshold); skip {
		t.Error("no previous checkpoint must not dedupe")
	}
}

func TestCorruptLatestFallsBack(t *testing.T) {
	s := &Store{StateDir: t.TempDir()}
	writeN(t, s, "k", 3)
	dir := s.Dir("k")
	// Truncate cp_003 mid-file (a torn write that escaped the atomic rename).
	data, _ := os.ReadFile(filepath.Join(dir, "cp_003.yaml"))
	os.Chmod(filepath.Join(dir, "cp_003.yaml"), 0o600)
	testkit.WriteFile(t, filepath.Join(dir, "cp_003.yaml"), data[:len(data)/3], 0o600)
	cp, warns, err := s.Latest("k")
	if err != nil || cp.Meta.CheckpointID != "cp_002" {
		t.Fatalf("fallback got %v %v", cp, err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "cp_003") || !strings.Contains(warns[0], "falling back to cp_002") {
		t.Fatalf("warnings %q", warns)
	}
	// Garbage cp_002 whose previous link still reads: follow the link to cp_001.
	os.WriteFile(filepath.Join(dir, "cp_002.yaml"), []byte("schema: [\nprevious_checkpoint: \"cp_001\"\n"), 0o600)
	cp, warns, err = s.Latest("k")
	if err != nil || cp.Meta.CheckpointID != "cp_001" || len(warns) != 2 {
		t.Fatalf("second fallback got %v %q %v", cp, warns, err)
	}
	// All corrupt: a clear error.
	os.WriteFile(filepath.Join(dir, "cp_001.yaml"), []byte("\x00"), 0o600)
	if _, _, err = s.Latest("k"); err == nil || !strings.Contains(err.Error(), "all are corrupt") {
		t.Fatalf("all corrupt: %v", err)
	}
	// A new write after corruption still gets a fresh number and no link to a corrupt file.
	res, err := s.Write("k", sampleCheckpoint())
	if err != nil || res.ID != "cp_004" {
		t.Fatalf("write after corruption: %v %v", res, err)
	}
	cp, _ = s.Load("k", "cp_004")
	if cp.Meta.PreviousCheckpoint != "" {
		t.Fatalf("links to corrupt %q", cp.Meta.PreviousCheckpoint)
	}
}

func TestBrokenPointer(t *testing.T) {
	s := &Store{StateDir: t.TempDir()}
	writeN(t, s, "k", 2)
	os.WriteFile(filepath.Join(s.Dir("k"), latestFile), []byte("{not json"), 0o600)
	cp, warns, err := s.Latest("k")
	if err != nil || cp.Meta.CheckpointID != "cp_002" || len(warns) != 1 {
		t.Fatalf("%v %q %v", cp, warns, err)
	}
	os.WriteFile(filepath.Join(s.Dir("k"), latestFile), []byte(`{"checkpoint_id":"cp_009","path":"/etc/passwd"}`), 0o600)
	cp, warns, err = s.Latest("k")
	if err != nil || cp.Meta.CheckpointID != "cp_002" || len(warns) != 1 {
		t.Fatalf("%v %q %v", cp, warns, err)
	}
	if _, _, err := s.Latest("nothing-here"); err == nil {
		t.Fatal("empty key: no error")
	}
	if _, err := s.Load("k", "../../x"); err == nil {
		t.Fatal("Load accepted a path as id")
	}
}

func TestStateAccumulateBundleReset(t *testing.T) {
	s := &Store{StateDir: t.TempDir()}
	when := time.Date(2026, 2, 24, 14, 15, 0, 0, time.UTC)
	err := s.UpdateState("k", func(st *State) error {
		st.RecordToolResult("read", []byte(`{"path":"a.go"}`), false, "", when)
		st.RecordToolResult("edit", []byte(`{"path":"b.go"}`), false, "", when)
		st.RecordToolResult("bash", []byte(`{"command":"go test"}`), true, "exit 1\nmore", when)
		st.Decisions = append(st.Decisions, StateDecision{What: "use budget hotels", When: when.Format(time.RFC3339)})
		st.OpenItems = append(st.OpenItems, "book flights")
		st.Learnings = append(st.Learnings, "user is price-sensitive")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, warns := s.ReadState("k")
	if len(warns) > 0 || len(st.Resources.FilesRead) != 1 || st.Resources.FilesModified[0] != "b.go" || len(st.Thread.Errors) != 1 {
		t.Fatalf("state %+v %v", st, warns)
	}
	cp := Build(Input{SessionKey: "k", Now: when, State: st})
	if len(cp.Decisions) != 1 || cp.Decisions[0].What != "use budget hotels" || cp.OpenItems[0] != "book flights" ||
		cp.Learnings[0] != "user is price-sensitive" || cp.Resources.FilesModified[0] != "b.go" || len(cp.Resources.ToolsUsed) != 3 {
		t.Fatalf("bundle %+v", cp)
	}
	if _, err := s.Write("k", cp); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetState("k"); err != nil {
		t.Fatal(err)
	}
	st, _ = s.ReadState("k")
	if len(st.Decisions)+len(st.OpenItems)+len(st.Learnings)+len(st.Resources.ToolsUsed) != 0 {
		t.Fatalf("not reset: %+v", st)
	}
	// A state file older than the latest checkpoint is stale and discarded.
	old := time.Now().Add(-time.Hour)
	p := filepath.Join(s.StateFilesDir("k"), "open_items.json")
	os.WriteFile(p, []byte(`["stale item"]`), 0o600)
	os.Chtimes(p, old, old)
	st, warns = s.ReadState("k")
	if len(st.OpenItems) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "stale") {
		t.Fatalf("stale state used: %+v %v", st.OpenItems, warns)
	}
	// A corrupt state file is ignored with a warning.
	os.WriteFile(p, []byte(`{oops`), 0o600)
	st, warns = s.ReadState("k")
	if len(st.OpenItems) != 0 || len(warns) != 1 {
		t.Fatalf("corrupt state: %+v %v", st.OpenItems, warns)
	}
}
