package sessionstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
)

// An OpenClaw store as OpenClaw writes it (JSON.stringify(store, null, 2)),
// with fields ctxtool does not know, a nested object and a non-ASCII value.
const openclawStore = `{
  "agent:main:main": {
    "sessionId": "3f1c2a9e-0000-4000-8000-000000000001",
    "updatedAt": 1772366400000,
    "totalTokens": 171234,
    "totalTokensFresh": true,
    "inputTokens": 170000,
    "outputTokens": 1234,
    "contextTokens": 200000,
    "model": "claude-sonnet-4-5",
    "compactionCount": 2,
    "deliveryContext": {
      "channel": "telegram",
      "to": "user:42"
    },
    "label": "Ana — ledger \u2028 work"
  },
  "telegram:user:7": {
    "sessionId": "other",
    "compactionCount": 0
  }
}
`

func writeStore(t *testing.T) (dir, transcriptPath string) {
	t.Helper()
	dir = t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, sessionstore.FileName), []byte(openclawStore), 0o600)
	transcriptPath = filepath.Join(dir, "3f1c2a9e-0000-4000-8000-000000000001.jsonl")
	return dir, transcriptPath
}

func TestFindAndKey(t *testing.T) {
	dir, tp := writeStore(t)
	ref, err := sessionstore.Find(tp)
	if err != nil || ref == nil || ref.Key != "agent:main:main" || ref.Entry.CompactionCount != 2 || *ref.Entry.TotalTokens != 171234 {
		t.Fatalf("Find: %+v %v", ref, err)
	}
	// An archive of the same session maps to the same key.
	st, _ := sessionstore.Read(dir)
	if k := st.KeyFor(tp + ".reset.2026-03-08T13-03-27.008Z"); k != "agent:main:main" {
		t.Fatalf("archive key %q", k)
	}
	if ref, err := sessionstore.Find(filepath.Join(dir, "unlisted.jsonl")); ref != nil || err != nil {
		t.Fatalf("unlisted: %+v %v", ref, err)
	}
	if ref, err := sessionstore.Find(filepath.Join(t.TempDir(), "x.jsonl")); ref != nil || err != nil {
		t.Fatalf("no store: %+v %v", ref, err)
	}
}

func TestRecordCompactionKeepsEverythingElse(t *testing.T) {
	dir, tp := writeStore(t)
	ref, err := sessionstore.RecordCompaction(context.Background(), tp, 41000, 0)
	if err != nil || ref == nil || ref.Entry.CompactionCount != 3 {
		t.Fatalf("RecordCompaction: %+v %v", ref, err)
	}
	data := testkit.ReadFile(t, filepath.Join(dir, sessionstore.FileName))
	// The same document with the three changes, formatted as OpenClaw does.
	want := strings.NewReplacer(
		`"totalTokens": 171234,`, `"totalTokens": 41000,`,
		"    \"inputTokens\": 170000,\n", "",
		"    \"outputTokens\": 1234,\n", "",
		`"compactionCount": 2,`, `"compactionCount": 3,`,
	).Replace(strings.TrimSuffix(openclawStore, "\n"))
	if string(data) != want {
		t.Fatalf("store after update:\n%s\nwant:\n%s", data, want)
	}
	info, _ := os.Stat(filepath.Join(dir, sessionstore.FileName))
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, OpenClaw's 0600 not kept", info.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(dir, sessionstore.FileName+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock left behind: %v", err)
	}
	// One backup, of the previous content; a second update replaces it.
	backups, _ := filepath.Glob(filepath.Join(dir, sessionstore.FileName+".bak.*"))
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if old, _ := os.ReadFile(backups[0]); string(old) != openclawStore {
		t.Fatal("backup is not the previous store")
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := sessionstore.RecordCompaction(context.Background(), tp, 0, 0); err != nil {
		t.Fatal(err)
	}
	backups, _ = filepath.Glob(filepath.Join(dir, sessionstore.FileName+".bak.*"))
	if len(backups) != 1 {
		t.Fatalf("backups after two updates: %v", backups)
	}
	ref, _ = sessionstore.Find(tp)
	if ref.Entry.CompactionCount != 4 || *ref.Entry.TotalTokens != 41000 {
		t.Fatalf("tokensAfter 0 must leave totalTokens alone: %+v", ref.Entry)
	}
}

// Concurrent writers (ours in parallel) serialise on the store lock: no
// increment is lost.
func TestRecordCompactionConcurrent(t *testing.T) {
	_, tp := writeStore(t)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := sessionstore.RecordCompaction(context.Background(), tp, 1000+i, 20*time.Second)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ref, _ := sessionstore.Find(tp)
	if ref.Entry.CompactionCount != 2+n {
		t.Fatalf("compactionCount %d after %d concurrent updates from 2", ref.Entry.CompactionCount, n)
	}
}

// OpenClaw's own lock: held by a live process → wait, then fail; left by
// a dead process or older than 30 s → taken over.
func TestStoreLockOpenClawPayload(t *testing.T) {
	dir, tp := writeStore(t)
	lock := filepath.Join(dir, sessionstore.FileName+".lock")
	live := fmt.Sprintf(`{"pid":%d,"startedAt":%d}`, os.Getppid(), time.Now().UnixMilli())
	testkit.WriteFile(t, lock, []byte(live), 0o644)
	start := time.Now()
	_, err := sessionstore.RecordCompaction(context.Background(), tp, 5, 300*time.Millisecond)
	var le *filelock.LockedError
	if !errors.As(err, &le) || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("live OpenClaw lock: %v after %v", err, time.Since(start))
	}
	// Released while we wait: we get it.
	go func() { time.Sleep(100 * time.Millisecond); os.Remove(lock) }()
	os.WriteFile(lock, []byte(live), 0o644)
	if _, err := sessionstore.RecordCompaction(context.Background(), tp, 5, 5*time.Second); err != nil {
		t.Fatalf("lock released during the wait: %v", err)
	}
	// Old lock of a live pid: stale after 30 s, as OpenClaw says.
	os.WriteFile(lock, []byte(live), 0o644)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(lock, old, old)
	if _, err := sessionstore.RecordCompaction(context.Background(), tp, 5, 0); err != nil {
		t.Fatalf("stale lock: %v", err)
	}
	// Dead pid.
	os.WriteFile(lock, []byte(`{"pid":2147483646,"startedAt":1}`), 0o644)
	if _, err := sessionstore.RecordCompaction(context.Background(), tp, 5, 0); err != nil {
		t.Fatalf("dead holder: %v", err)
	}
	ref, _ := sessionstore.Find(tp)
	if ref.Entry.CompactionCount != 5 {
		t.Fatalf("compactionCount %d, want 5", ref.Entry.CompactionCount)
	}
}

// A store that does not parse is reported and left untouched.
func TestUpdateBadStore(t *testing.T) {
	dir, tp := writeStore(t)
	p := filepath.Join(dir, sessionstore.FileName)
	os.WriteFile(p, []byte(`{"agent:main:main": {"sessionId": "3f1c2a9e-0000-4000-8000-000000000001",}`), 0o600)
	_, err := sessionstore.RecordCompaction(context.Background(), tp, 5, 0)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad store: %v", err)
	}
	// Entry removed between Find and the locked re-read.
	os.WriteFile(p, []byte(openclawStore), 0o600)
	err = sessionstore.Update(context.Background(), p, "gone", 0, func(sessionstore.Entry) (*sessionstore.Patch, error) { return &sessionstore.Patch{}, nil })
	if !errors.Is(err, sessionstore.ErrNoEntry) {
		t.Fatalf("missing entry: %v", err)
	}
	var doc map[string]any
	data, _ := os.ReadFile(p)
	if json.Unmarshal(data, &doc) != nil || string(data) != openclawStore {
		t.Fatal("store changed by a failed update")
	}
}
