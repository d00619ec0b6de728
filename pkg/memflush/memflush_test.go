package memflush_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/llm"
	"github.com/ctxtool/ctxtool/pkg/memflush"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
)

// Facts planted in the region compaction will summarise, and one in the
// kept tail that the flush must leave alone.
var (
	plantedRegion = []string{
		"We decided to use SQLite for the session cache.",
		"Never log the api_secret field.",
		"We agreed that the deploy window is Tuesday 10:00 UTC.",
		"You must not restart the billing worker during business hours.",
	}
	plantedTail  = "We must keep the p99 latency under 200 ms on the search endpoint."
	plantedLater = []string{
		"We decided to switch the job queue to NATS JetStream.",
		"Do not delete rows from the audit_log table.",
	}
)

// filler is prose with no decision, rule, request, number or identifier.
var filler = strings.Repeat("The parser reads each record and builds an index of the fields. ", 40)

const (
	window = 30000 // flush threshold 30000 − 20000 − 4000 = 6000 tokens
	now0   = "2026-03-01T09:00:00Z"
)

func fixedNow() time.Time { t, _ := time.Parse(time.RFC3339, now0); return t }

// buildSession writes a session whose early turns carry plantedRegion and
// whose last turn carries plantedTail.
func buildSession(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Each file its own session id: the flush cycle is keyed by it.
	b := sessiongen.NewBuilder(f, sessiongen.Config{SessionID: "sess-" + strings.TrimSuffix(name, ".jsonl")})
	for i := 0; i < 14; i++ {
		b.UserText("Continue with the report.")
		text := filler
		if i < len(plantedRegion) {
			text = plantedRegion[i] + " " + filler
		}
		b.AssistantText(text)
	}
	b.UserText(plantedTail)
	b.AssistantText("Noted.")
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendTurns adds raw turns to a session file after its leaf.
func appendTurns(t *testing.T, path string, texts []string, fillerTurns int) {
	t.Helper()
	s := testkit.Load(t, path)
	parent := s.Leaf().ID()
	s.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	add := func(role, text string) {
		n++
		id := fmt.Sprintf("c0ffee%02x", n)
		msg := map[string]any{"role": role, "content": []map[string]string{{"type": "text", "text": text}}, "timestamp": 1772356000000 + n}
		if role == "assistant" {
			msg["api"], msg["provider"], msg["model"], msg["stopReason"] = "anthropic-messages", "anthropic", "claude-sonnet-4-5", "stop"
			msg["usage"] = map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
		}
		line, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-03-01T10:00:00.000Z", "message": msg})
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		parent = id
	}
	for _, text := range texts {
		add("user", "Continue with the report.")
		add("assistant", text+" "+filler)
	}
	for i := 0; i < fillerTurns; i++ {
		add("user", "Continue with the report.")
		add("assistant", filler)
	}
}

func options(t *testing.T, file, ws, state string) memflush.Options {
	t.Helper()
	return memflush.Options{File: file, Workspace: ws, StateDir: state, Size: inWindow(window),
		ReserveTokensFloor: compaction.DefaultReserveTokensFloor, SoftThresholdTokens: memflush.DefaultSoftThresholdTokens,
		Compaction: compaction.Settings{KeepRecentTokens: 2000}, Now: fixedNow}
}

// inWindow measures in a window of w tokens (the sessions here have no
// usage records: pi's chars/4).
func inWindow(w int) estimate.Options {
	return estimate.Options{Window: models.Settings{ContextWindow: w}}
}

func memoryFile(ws string) string { return filepath.Join(ws, "memory", "2026-03-01.md") }

func read(t *testing.T, p string) string {
	t.Helper()
	return string(testkit.ReadFile(t, p))
}

func TestThresholdAndDue(t *testing.T) {
	// OpenClaw's numbers: 200k window flushes at 176,000 (docs/design/openclaw-compaction.md).
	if got := memflush.Threshold(200000, 20000, 4000); got != 176000 {
		t.Fatalf("threshold %d, want 176000", got)
	}
	if got := memflush.Threshold(20000, 20000, 4000); got != 0 {
		t.Fatalf("threshold %d, want 0", got)
	}
	two := 2
	for _, c := range []struct {
		tokens, thr, count int
		last               *int
		want               bool
	}{
		{176000, 176000, 0, nil, true},
		{175999, 176000, 0, nil, false},
		{180000, 176000, 2, &two, false}, // flushed in this cycle
		{180000, 176000, 3, &two, true},  // compacted since
		{0, 176000, 0, nil, false},
		{5, 0, 0, nil, false},
	} {
		if got, why := memflush.Due(c.tokens, c.thr, c.count, c.last); got != c.want {
			t.Errorf("Due(%d, %d, %d, %v) = %v (%s)", c.tokens, c.thr, c.count, c.last, got, why)
		}
	}
}

// flushDirs makes a test directory for sessions (dir) holding the agent's
// workspace (ws, created) and the state directory (state, not created).
func flushDirs(t *testing.T) (dir, ws, state string) {
	t.Helper()
	dir = t.TempDir()
	ws, state = filepath.Join(dir, "ws"), filepath.Join(dir, "state")
	os.MkdirAll(ws, 0o755)
	return dir, ws, state
}

// TestFlushOncePerCycle is the done-when check: the planted decisions and
// constraints of the region reach the memory file, a second flush in the
// same cycle writes nothing, and after a compaction a flush writes again —
// only what is new.
func TestFlushOncePerCycle(t *testing.T) {
	dir, ws, state := flushDirs(t)
	file := buildSession(t, dir, "s.jsonl")
	ctx := context.Background()

	r, err := memflush.Run(ctx, options(t, file, ws, state))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Flushed || r.Threshold != 6000 || r.CompactionCount != 0 || r.RegionMessages == 0 {
		t.Fatalf("first flush: %+v", r)
	}
	mem := read(t, memoryFile(ws))
	for _, p := range plantedRegion {
		if strings.Count(mem, p) != 1 {
			t.Errorf("memory file holds %q %d times, want once:\n%s", p, strings.Count(mem, p), mem)
		}
	}
	if strings.Contains(mem, "p99 latency") {
		t.Errorf("the kept tail's fact was flushed; only the region about to be compacted is:\n%s", mem)
	}
	if !strings.HasPrefix(mem, "# 2026-03-01\n\n## Pre-compaction memory flush — sess-s, ") {
		t.Errorf("memory file starts %q", mem[:min(80, len(mem))])
	}

	// Same cycle: nothing written.
	r, err = memflush.Run(ctx, options(t, file, ws, state))
	if err != nil {
		t.Fatal(err)
	}
	if r.Flushed || !strings.Contains(r.Reason, "already flushed in this compaction cycle") || read(t, memoryFile(ws)) != mem {
		t.Fatalf("second flush in the cycle: %+v", r)
	}

	// A real compaction by ctxtool, then new history with new facts.
	if _, err := compaction.CompactFile(ctx, file, compaction.Options{Settings: compaction.Settings{KeepRecentTokens: 2000, Force: true, ContextWindow: window},
		Summarizer: compaction.Extractive{}}); err != nil {
		t.Fatal(err)
	}
	appendTurns(t, file, plantedLater, 8)
	r, err = memflush.Run(ctx, options(t, file, ws, state))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Flushed || r.CompactionCount != 1 || *r.LastFlushCompactionCount != 0 || len(r.Entries) == 0 {
		t.Fatalf("flush after a compaction: %+v", r)
	}
	after := read(t, memoryFile(ws))
	if !strings.HasPrefix(after, mem) {
		t.Fatal("the memory file was rewritten, not appended to")
	}
	for _, p := range append(plantedLater, plantedRegion...) {
		if strings.Count(after, p) != 1 {
			t.Errorf("after the second cycle %q occurs %d times, want once", p, strings.Count(after, p))
		}
	}
	if r, _ := memflush.Run(ctx, options(t, file, ws, state)); r.Flushed {
		t.Fatalf("third flush in cycle 1 wrote: %+v", r)
	}
}

// TestFlushConcurrent: two flushes of one session at once write once; two
// sessions with the same facts flushing into one memory file at once write
// each fact once.
func TestFlushConcurrent(t *testing.T) {
	dir, ws, state := flushDirs(t)
	a := buildSession(t, dir, "a.jsonl")
	b := buildSession(t, dir, "b.jsonl")
	ctx := context.Background()
	run := func(files ...string) []*memflush.Result {
		var wg sync.WaitGroup
		out := make([]*memflush.Result, len(files))
		for i, f := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := memflush.Run(ctx, options(t, f, ws, state))
				if err != nil {
					t.Error(err)
				}
				out[i] = r
			}()
		}
		wg.Wait()
		return out
	}
	rs := run(a, a)
	if rs[0] == nil || rs[1] == nil || rs[0].Flushed == rs[1].Flushed {
		t.Fatalf("same session twice at once: exactly one must flush: %+v / %+v", rs[0], rs[1])
	}
	os.Remove(memoryFile(ws))
	os.RemoveAll(state)
	rs = run(a, b)
	mem := read(t, memoryFile(ws))
	for _, p := range plantedRegion {
		if n := strings.Count(mem, p); n != 1 {
			t.Errorf("two sessions at once: %q written %d times", p, n)
		}
	}
	if !rs[0].Flushed || !rs[1].Flushed || rs[0].Duplicates+rs[1].Duplicates == 0 {
		t.Fatalf("both flush, the later one finds the notes already there: %+v / %+v", rs[0], rs[1])
	}
}

// TestFlushSessionsJSON: a session listed in OpenClaw's store takes its
// compaction count from there and records the flush there, as OpenClaw.
func TestFlushSessionsJSON(t *testing.T) {
	dir, ws, state := flushDirs(t)
	file := buildSession(t, dir, "sid-1.jsonl")
	store := filepath.Join(dir, sessionstore.FileName)
	os.WriteFile(store, []byte(`{"agent:main:main": {"sessionId": "sid-1", "compactionCount": 4, "memoryFlushCompactionCount": 3, "updatedAt": 1}}`), 0o600)
	ctx := context.Background()
	r, err := memflush.Run(ctx, options(t, file, ws, state))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Flushed || r.SessionKey != "agent:main:main" || r.CompactionCount != 4 || *r.LastFlushCompactionCount != 3 || r.SessionsJSON != store {
		t.Fatalf("flush: %+v", r)
	}
	ref, _ := sessionstore.Find(file)
	if ref.Entry.MemoryFlushCompactionCount == nil || *ref.Entry.MemoryFlushCompactionCount != 4 {
		t.Fatalf("store entry after the flush: %+v", ref.Entry)
	}
	if r, _ := memflush.Run(ctx, options(t, file, ws, state)); r.Flushed {
		t.Fatal("flushed twice at compactionCount 4")
	}
	// OpenClaw compacts (its count moves on): due again.
	if _, err := sessionstore.RecordCompaction(ctx, file, 0, 0); err != nil {
		t.Fatal(err)
	}
	if r, _ := memflush.Run(ctx, options(t, file, ws, state)); !r.Flushed || r.CompactionCount != 5 {
		t.Fatalf("after OpenClaw's compaction: %+v", r)
	}
}

// TestFlushBelowThresholdAndForce: below window − floor − soft nothing
// happens unless forced (compact --memory-flush).
func TestFlushBelowThresholdAndForce(t *testing.T) {
	dir, ws, state := flushDirs(t)
	file := buildSession(t, dir, "s.jsonl")
	o := options(t, file, ws, state)
	o.Size = inWindow(200000)
	r, err := memflush.Run(context.Background(), o)
	if err != nil || r.Flushed || !strings.HasPrefix(r.Reason, "below the flush threshold") {
		t.Fatalf("below threshold: %+v %v", r, err)
	}
	if _, err := os.Stat(memoryFile(ws)); err == nil {
		t.Fatal("memory file written below the threshold")
	}
	o.Force, o.DryRun = true, true
	r, err = memflush.Run(context.Background(), o)
	if err != nil || !r.Flushed || len(r.Entries) < len(plantedRegion) {
		t.Fatalf("forced dry run: %+v %v", r, err)
	}
	if _, err := os.Stat(memoryFile(ws)); err == nil {
		t.Fatal("dry run wrote the memory file")
	}
}

// OpenClaw's second trigger: a session file of forceFlushTranscriptBytes
// or more is due although its tokens are below the threshold (token counts
// can be stale or pinned); one byte short, it is not; still once per cycle.
func TestFlushDueBySize(t *testing.T) {
	dir, ws, state := flushDirs(t)
	file := buildSession(t, dir, "s.jsonl")
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	o := options(t, file, ws, state)
	o.Size = inWindow(200000)
	o.ForceFlushTranscriptBytes = st.Size() + 1
	r, err := memflush.Run(context.Background(), o)
	if err != nil || r.Flushed || r.DueBySize || r.TranscriptBytes != st.Size() || !strings.HasPrefix(r.Reason, "below the flush threshold") {
		t.Fatalf("one byte below the size trigger: %+v %v", r, err)
	}
	o.ForceFlushTranscriptBytes = st.Size()
	r, err = memflush.Run(context.Background(), o)
	if err != nil || !r.Flushed || !r.DueBySize || len(r.Entries) < len(plantedRegion) {
		t.Fatalf("at the size trigger: %+v %v", r, err)
	}
	if !strings.Contains(read(t, memoryFile(ws)), r.Entries[0]) {
		t.Fatalf("memory file lacks %q", r.Entries[0])
	}
	r, err = memflush.Run(context.Background(), o)
	if err != nil || r.Flushed || r.DueBySize || !strings.HasPrefix(r.Reason, "already flushed") {
		t.Fatalf("second run in the same cycle: %+v %v", r, err)
	}
}

// TestFlushWithModel: the flush prompts reach the model; its bullets are
// appended; NO_REPLY writes nothing but closes the cycle.
func TestFlushWithModel(t *testing.T) {
	for _, reply := range []string{"- The cache is SQLite.\n- Never log api_secret.\n\n- The cache is SQLite.", "NO_REPLY"} {
		dir, ws, state := flushDirs(t)
		file := buildSession(t, dir, "s.jsonl")
		srv := llmtest.New()
		defer srv.Close()
		srv.Reply = func(llmtest.Request) string { return reply }
		c, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), Model: "m", APIKey: "k", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		o := options(t, file, ws, state)
		o.Model = c
		r, err := memflush.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].Messages[0].Content != memflush.DefaultSystemPrompt || !strings.Contains(reqs[0].Messages[1].Content, memflush.DefaultPrompt) ||
			!strings.Contains(reqs[0].Messages[1].Content, plantedRegion[0]) {
			t.Fatalf("request: %+v", reqs)
		}
		if reply == "NO_REPLY" {
			if !r.Flushed || !r.NoReply || len(r.Entries) != 0 {
				t.Fatalf("NO_REPLY: %+v", r)
			}
			if _, err := os.Stat(memoryFile(ws)); err == nil {
				t.Fatal("NO_REPLY wrote a memory file")
			}
			if r2, _ := memflush.Run(context.Background(), o); r2.Flushed {
				t.Fatal("NO_REPLY did not close the cycle")
			}
			continue
		}
		mem := read(t, memoryFile(ws))
		if !r.Flushed || r.Source != "llm" || len(r.Entries) != 2 || strings.Count(mem, "- The cache is SQLite.") != 1 || !strings.Contains(mem, "- Never log api_secret.") {
			t.Fatalf("model notes: %+v\n%s", r, mem)
		}
	}
}
