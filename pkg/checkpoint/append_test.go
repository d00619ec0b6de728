package checkpoint

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/models"
)

// TestAppendedResumeIsLastMessageInPi appends the resume text to copies of
// the fixtures (v1) and of a generated v3 session, then asks pi's own loader
// what the next request would carry: the resume text, as the last message.
func TestAppendedResumeIsLastMessageInPi(t *testing.T) {
	oracle.Require(t)
	dir := t.TempDir()
	files := []string{}
	for _, f := range oracle.Fixtures(t) {
		files = append(files, testkit.CopyToTemp(t, f))
	}
	v3 := filepath.Join(dir, "generated-v3.jsonl")
	sessiongen.Write(t, v3, sessiongen.Options{Seed: 7, Turns: 30, Compactions: 1})
	files = append(files, v3)

	before := oracle.Check(t, false, false, files...)
	texts := map[string]string{}
	for _, f := range files {
		cp, _, _ := takeLatest(t, TakeOptions{File: f, Store: &Store{StateDir: filepath.Join(dir, "state")}, Force: true})
		text := Render(cp, RenderOptions{})
		texts[f] = text
		a, err := AppendResume(context.Background(), f, cp, text, time.Second, func() time.Time { return goldenNow })
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// Our own loader agrees: the last context message is this entry.
		s := testkit.Load(t, f)
		ctx := s.Context()
		last := ctx.Messages[len(ctx.Messages)-1]
		m, _ := s.Message(last.Entry)
		if last.Role != "custom" || last.Entry.CustomType() != CustomType || last.Entry.Line != a.Line || m.Text() != text {
			t.Errorf("%s: ctxtool sees last message %s/%s line %d (appended line %d)", f, last.Role, last.Entry.CustomType(), last.Entry.Line, a.Line)
		}
		s.Close()
	}
	after := oracle.Check(t, false, true, files...)
	for i, r := range after {
		f := files[i]
		if !r.Loads || r.LastRole != "custom" || r.ContextMessages != before[i].ContextMessages+1 || r.BrokenParents != 0 {
			t.Errorf("%s: pi sees loads=%v last=%s messages %d→%d brokenParents=%d", filepath.Base(f), r.Loads, r.LastRole, before[i].ContextMessages, r.ContextMessages, r.BrokenParents)
		}
		if !strings.HasSuffix(strings.TrimSpace(r.ContextText), strings.TrimSpace(texts[f])) {
			t.Errorf("%s: pi's context does not end with the resume text", filepath.Base(f))
		}
		if len(r.MalformedLines) != len(before[i].MalformedLines) {
			t.Errorf("%s: malformed lines %v → %v", filepath.Base(f), before[i].MalformedLines, r.MalformedLines)
		}
	}
}

// TestTakeGateAndDedupe exercises the 80% gate, the dedupe rule and --force
// on a real fixture, and the bundling/reset of the state files.
func TestTakeGateAndDedupe(t *testing.T) {
	f := oracle.Fixture("pi-v1-session-d5dde00.jsonl")
	st := &Store{StateDir: t.TempDir()}
	now := func() time.Time { return goldenNow }
	take := func(o TakeOptions) *TakeResult {
		t.Helper()
		o.File, o.Store, o.Now = f, st, now
		r, err := Take(o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// 16% of 200k (chars/4 of the compacted context + the overhead the
	// last usage record measured): auto-80pct does not write.
	r := take(TakeOptions{Trigger: TriggerAuto80})
	if r.Written || !strings.Contains(r.Reason, "below the 80% threshold") {
		t.Fatalf("gate: %+v", r)
	}
	// A 38k window makes it 85%: written.
	r = take(TakeOptions{Trigger: TriggerAuto80, Size: estimate.Options{Window: models.Settings{ContextWindow: 38000}}})
	if !r.Written || r.CheckpointID != "cp_001" || r.Gauge != "[Context: 85.6% | 33k/38k tokens | Checkpoint saved]" {
		t.Fatalf("auto write: %+v", r)
	}
	// Same tokens again: deduplicated.
	_ = st.UpdateState(r.SessionKey, func(s *State) error { s.OpenItems = append(s.OpenItems, "recorded item"); return nil })
	r = take(TakeOptions{})
	if r.Written || !strings.Contains(r.Reason, "changed by 0.0% since cp_001") {
		t.Fatalf("dedupe: %+v", r)
	}
	// State survives a skipped checkpoint, is bundled by the forced one, then reset.
	r = take(TakeOptions{Force: true, Trigger: TriggerCompaction})
	if !r.Written || r.CheckpointID != "cp_002" || r.Previous != "cp_001" {
		t.Fatalf("force: %+v", r)
	}
	cp, _, _ := st.Latest(r.SessionKey)
	if cp.OpenItems[0] != "recorded item" || cp.Meta.Trigger != TriggerCompaction {
		t.Fatalf("state not bundled: %q", cp.OpenItems)
	}
	if s, _ := st.ReadState(r.SessionKey); len(s.OpenItems) != 0 {
		t.Fatalf("state not reset: %q", s.OpenItems)
	}
	if _, err := Take(TakeOptions{File: f, Store: st, Trigger: "sometimes"}); err == nil {
		t.Fatal("bad trigger accepted")
	}
}

// TestCompactionCountWarning reads compactionCount from OpenClaw's
// sessions.json next to the transcript and warns above 3.
func TestCompactionCountWarning(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "abc123.jsonl")
	sessiongen.Write(t, file, sessiongen.Options{Seed: 3, Turns: 6})
	store := `{"agent:main:telegram:dm:42":{"sessionId":"abc123","compactionCount":5,"updatedAt":1}}`
	testkit.WriteFile(t, filepath.Join(dir, "sessions.json"), []byte(store), 0o600)
	st := &Store{StateDir: t.TempDir()}
	r, err := Take(TakeOptions{File: file, Store: st, Now: func() time.Time { return goldenNow }})
	if err != nil {
		t.Fatal(err)
	}
	if r.SessionKey != "agent:main:telegram:dm:42" || r.CompactionCount != 5 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "compacted 5 times") {
		t.Fatalf("%+v", r)
	}
	cp, _, _ := st.Latest(r.SessionKey)
	if cp.Meta.Channel != "telegram" || cp.Meta.AgentID != "main" || !strings.Contains(Render(cp, RenderOptions{}), "compacted 5 times") {
		t.Fatalf("meta %+v", cp.Meta)
	}
	if filepath.Base(st.Dir(r.SessionKey)) != "agent_main_telegram_dm_42" {
		t.Fatalf("dir %s", st.Dir(r.SessionKey))
	}
}

// TestStdinIgnoresSessionsJSONInWorkingDirectory: a session read from
// stdin has no directory, so a sessions.json in the working directory (an
// unrelated OpenClaw store) must not lend it a compactionCount.
func TestStdinIgnoresSessionsJSONInWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "piped.jsonl")
	sessiongen.Write(t, file, sessiongen.Options{Seed: 3, Turns: 6})
	cwd := t.TempDir()
	store := `{"agent:main:telegram:dm:42":{"sessionId":"other","compactionCount":5,"updatedAt":1}}`
	testkit.WriteFile(t, filepath.Join(cwd, "sessions.json"), []byte(store), 0o600)
	t.Chdir(cwd)
	testkit.Stdin(t, file)
	r, err := Take(TakeOptions{File: "-", SessionKey: "agent:main:telegram:dm:42", Store: &Store{StateDir: t.TempDir()},
		Now: func() time.Time { return goldenNow }})
	if err != nil {
		t.Fatal(err)
	}
	if r.CompactionCount != 0 || len(r.Warnings) != 0 {
		t.Fatalf("stdin session took compactionCount %d from ./sessions.json: %+v", r.CompactionCount, r)
	}
}
