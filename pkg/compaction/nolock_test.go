package compaction

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/factgen"
	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/filelock"
)

// TestHelperAppender is not a test: TestNoLockDuringTheModelCall runs the
// test binary as a second process that takes the session lock without
// waiting (so it fails if ctxtool holds it) and appends two messages.
func TestHelperAppender(t *testing.T) {
	path := os.Getenv("CTXTOOL_TEST_APPEND")
	if path == "" {
		t.Skip("helper process only")
	}
	lock, err := filelock.Acquire(context.Background(), path, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "appender: %v\n", err)
		os.Exit(3)
	}
	defer lock.Release()
	s := testkit.Load(t, path)
	leaf := s.Leaf().ID()
	s.Close()
	now := time.Now().UTC()
	ts := now.Format("2006-01-02T15:04:05.000Z")
	lines := fmt.Sprintf(`{"type":"message","id":"feed0001","parentId":%q,"timestamp":%q,"message":{"role":"user","content":[{"type":"text","text":"Appended while summarising: deploy to eu-west-7 next."}],"timestamp":%d}}`+"\n"+
		`{"type":"message","id":"feed0002","parentId":"feed0001","timestamp":%q,"message":{"role":"assistant","content":[{"type":"text","text":"Noted, eu-west-7 is next."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":%d}}`+"\n",
		leaf, ts, now.UnixMilli(), ts, now.UnixMilli())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// While the model is slow, another process takes the session lock and
// appends; the compaction lands after those lines, nothing is lost, and
// the lock is held only around ctxtool's own append.
func TestNoLockDuringTheModelCall(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	factgen.Write(t, path, factgen.Options{Seed: 7, Turns: 30, FactsWithin: 0.5})
	orig, _ := os.ReadFile(path)

	srv := llmtest.New()
	defer srv.Close()
	srv.Always = llmtest.Step{Delay: 1500 * time.Millisecond}
	var mu sync.Mutex
	var lockedDuringCall []bool
	inner := srv.Reply
	srv.Reply = func(r llmtest.Request) string {
		_, err := os.Stat(filelock.Path(path))
		mu.Lock()
		lockedDuringCall = append(lockedDuringCall, err == nil)
		mu.Unlock()
		return inner(r)
	}

	appended := make(chan error, 1)
	go func() {
		for len(srv.Requests()) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppender$")
		cmd.Env = append(os.Environ(), "CTXTOOL_TEST_APPEND="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		appended <- err
	}()

	res, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 8000}, Summarizer: llmSummarizer(t, srv, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("the other process could not take the lock and append while the model was called: %v", err)
	}
	if !res.Compacted || res.Replans < 1 {
		t.Fatalf("compacted %v after %d re-plans; want a compaction re-planned on the grown file", res.Compacted, res.Replans)
	}
	for i, locked := range lockedDuringCall {
		if locked {
			t.Fatalf("model call %d ran while the session lock was held", i+1)
		}
	}
	if _, err := os.Stat(filelock.Path(path)); !os.IsNotExist(err) {
		t.Fatalf("lock left behind: %v", err)
	}
	now, _ := os.ReadFile(path)
	if !bytes.HasPrefix(now, orig) {
		t.Fatal("the original lines were rewritten")
	}
	added := strings.Split(strings.TrimSuffix(string(now[len(orig):]), "\n"), "\n")
	if len(added) != 3 || !strings.Contains(added[0], `"feed0001"`) || !strings.Contains(added[1], `"feed0002"`) ||
		!strings.Contains(added[2], `"type":"compaction"`) || !strings.Contains(added[2], `"parentId":"feed0002"`) {
		t.Fatalf("after the original: %d lines, want the two appended then the compaction hanging off them:\n%s", len(added), strings.Join(added, "\n"))
	}
	s := testkit.Load(t, path)
	defer s.Close()
	ctx := s.Context()
	last := ctx.Messages[len(ctx.Messages)-1]
	if last.Entry.ID() != "feed0002" || res.KeptMessages != len(ctx.Messages)-1 {
		t.Fatalf("the appended messages are not the end of the kept context (last %s, kept %d of %d)", last.Entry.ID(), res.KeptMessages, len(ctx.Messages)-1)
	}
	if oracle.Available() {
		pi := oracle.Check(t, false, true, path)[0]
		if !pi.Loads || pi.LastCompaction == nil || !strings.Contains(pi.ContextText, "Appended while summarising") || pi.ContextMessages != len(ctx.Messages) {
			t.Fatalf("pi: loads %v, compaction %v, %d messages (want %d)", pi.Loads, pi.LastCompaction != nil, pi.ContextMessages, len(ctx.Messages))
		}
	}
}
