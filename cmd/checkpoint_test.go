package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
)

var cpNow = func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

func genSession(t *testing.T, dir, name string, turns int) string {
	t.Helper()
	f := filepath.Join(dir, name)
	sessiongen.Write(t, f, sessiongen.Options{Seed: 11, Turns: turns})
	return f
}

func runCP(t *testing.T, opts *CheckpointOptions) (checkpoint.TakeResult, string) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	opts.IO, opts.JSON, opts.Now = io, true, cpNow
	if opts.Trigger == "" {
		opts.Trigger = checkpoint.TriggerManual
	}
	if err := runCheckpoint(opts); err != nil {
		t.Fatalf("checkpoint: %v (stderr %s)", err, errOut)
	}
	var r checkpoint.TakeResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
	return r, errOut.String()
}

func TestCheckpointCommandJSONFields(t *testing.T) {
	dir := t.TempDir()
	f := genSession(t, dir, "s1.jsonl", 12)
	state := filepath.Join(dir, "state")
	io, _, out, _ := iostreams.Test()
	opts := &CheckpointOptions{IO: io, File: f, StateDir: state, JSON: true, Trigger: "manual", Now: cpNow}
	if err := runCheckpoint(opts); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"file", "written", "checkpointId", "path", "utilization", "resumeTokens", "inputTokens"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out)
		}
	}
	key := checkpoint.KeyFromFile(f) // the session's own id
	if raw["written"] != true || raw["checkpointId"] != "cp_001" || raw["sessionKey"] != key {
		t.Errorf("%s", out)
	}
	if _, err := os.Stat(filepath.Join(state, "context", "checkpoints", key, "cp_001.yaml")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(state, "context", "checkpoints", key, "_latest.json")); err != nil {
		t.Error(err)
	}
	// Dedupe, then --force; seven forced writes leave five.
	r, _ := runCP(t, &CheckpointOptions{File: f, StateDir: state})
	if r.Written || !strings.Contains(r.Reason, "since cp_001") {
		t.Fatalf("dedupe: %+v", r)
	}
	for i := 0; i < 6; i++ {
		r, _ = runCP(t, &CheckpointOptions{File: f, StateDir: state, Force: true, Keep: 5})
	}
	if r.CheckpointID != "cp_007" || strings.Join(r.Pruned, ",") != "cp_002" {
		t.Fatalf("retention: %+v", r)
	}
	ents, _ := filepath.Glob(filepath.Join(state, "context", "checkpoints", key, "cp_*.yaml"))
	if len(ents) != 5 {
		t.Fatalf("%d checkpoint files", len(ents))
	}
}

func TestCheckpointCommandUsageErrors(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	for _, o := range []*CheckpointOptions{
		{IO: io, File: "x.jsonl", Trigger: "often"},
		{IO: io, File: "-", Trigger: "manual"},
	} {
		if err := runCheckpoint(o); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if err := runCheckpoint(&CheckpointOptions{IO: io, File: "/nonexistent.jsonl", Trigger: "manual", StateDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Errorf("missing file: %v", err)
	}
}

// Through the cobra root: flags, config keys and the auto-80pct gate.
func TestCheckpointAndRestoreThroughRoot(t *testing.T) {
	dir := t.TempDir()
	f := genSession(t, dir, "s2.jsonl", 10)
	state := filepath.Join(dir, "state")
	run := func(args ...string) (string, string, error) {
		io, _, out, errOut := iostreams.Test()
		root, _ := NewRootCmd(io)
		root.SetArgs(append([]string{"--state-dir", state}, args...))
		err := root.Execute()
		return out.String(), errOut.String(), err
	}
	out, _, err := run("checkpoint", "--trigger", "auto-80pct", f)
	if err != nil || !strings.Contains(out, "no checkpoint written: utilization") {
		t.Fatalf("gate: %v %s", err, out)
	}
	out, _, err = run("checkpoint", "--trigger", "auto-80pct", "--context-window", "1000", "--session-key", "telegram:user1", f)
	if err != nil || !strings.Contains(out, "cp_001 written") || !strings.Contains(out, "Checkpoint saved]") {
		t.Fatalf("auto write: %v %s", err, out)
	}
	// restore by key: text, yaml, json, list.
	out, _, err = run("restore", "telegram:user1")
	if err != nil || !strings.HasPrefix(out, "[Post-compaction checkpoint restore: cp_001]") {
		t.Fatalf("restore text: %v %s", err, out)
	}
	out, _, err = run("restore", "--format", "yaml", "--session-key", "telegram:user1", f)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := checkpoint.Unmarshal([]byte(out)); err != nil || cp.Meta.SessionKey != "telegram:user1" || cp.Meta.Channel != "telegram" {
		t.Fatalf("restore yaml: %v %s", err, out)
	}
	out, _, err = run("restore", "--format", "json", "--id", "cp_001", "telegram:user1")
	var cpj checkpoint.Checkpoint
	if err != nil || json.Unmarshal([]byte(out), &cpj) != nil || cpj.Meta.CheckpointID != "cp_001" {
		t.Fatalf("restore json: %v %s", err, out)
	}
	out, _, err = run("restore", "--list", "telegram:user1")
	if err != nil || !strings.Contains(out, "cp_001") || !strings.Contains(out, "ok (latest)") {
		t.Fatalf("list: %v %s", err, out)
	}
	// Usage errors: exit 2.
	for _, args := range [][]string{
		{"restore", "--format", "xml", "telegram:user1"},
		{"restore", "--id", "../x", "telegram:user1"},
		{"restore", "--id", "cp_1234567890", "telegram:user1"}, // more digits than a checkpoint id has
		{"restore", "--append", "telegram:user1"},
		{"checkpoint", "--trigger", "hourly", f},
	} {
		if _, _, err := run(args...); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%v: exit %d (%v)", args, exitcode.Code(err), err)
		}
	}
	// Unknown key: runtime error naming the key and what to do.
	if _, _, err := run("restore", "nobody"); err == nil || !strings.Contains(err.Error(), "ctxtool checkpoint") {
		t.Errorf("unknown key: %v", err)
	}
	// Config key checkpoint.keep via the environment.
	t.Setenv("CTXTOOL_CHECKPOINT_KEEP", "2")
	for i := 0; i < 3; i++ {
		if _, _, err := run("checkpoint", "--force", f); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := filepath.Glob(filepath.Join(state, "context", "checkpoints", checkpoint.KeyFromFile(f), "cp_*.yaml"))
	if len(ents) != 2 {
		t.Fatalf("checkpoint.keep=2 left %d files", len(ents))
	}
}

func TestRestoreAppendAndCorruptFallback(t *testing.T) {
	dir := t.TempDir()
	f := genSession(t, dir, "s3.jsonl", 8)
	state := filepath.Join(dir, "state")
	runCP(t, &CheckpointOptions{File: f, StateDir: state})
	runCP(t, &CheckpointOptions{File: f, StateDir: state, Force: true})
	// Corrupt the latest: restore falls back to cp_001 with a warning.
	latest := filepath.Join(state, "context", "checkpoints", checkpoint.KeyFromFile(f), "cp_002.yaml")
	testkit.WriteFile(t, latest, []byte("schema: \"openclaw/checkpoint\"\nschema_version: 1\nmeta: [oops\n"), 0o600)
	io, _, out, errOut := iostreams.Test()
	err := runRestore(&RestoreOptions{IO: io, Target: f, Format: "text", Append: true, StateDir: state, JSON: true, Now: cpNow, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warning: checkpoint cp_002 is unreadable") || !strings.Contains(errOut.String(), "falling back to cp_001") {
		t.Errorf("stderr %q", errOut)
	}
	var rep checkpoint.RestoreReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || !rep.Appended || rep.CheckpointID != "cp_001" || rep.EntryID == "" {
		t.Fatalf("%v %s", err, out)
	}
	s := testkit.Load(t, f)
	defer s.Close()
	leaf := s.Leaf()
	if leaf.Type() != "custom_message" || leaf.CustomType() != checkpoint.CustomType || leaf.ID() != rep.EntryID || leaf.Line != rep.Line {
		t.Fatalf("leaf %+v", leaf)
	}
	if _, err := os.Stat(filelock.Path(f)); !os.IsNotExist(err) {
		t.Errorf("lock left behind: %v", err)
	}
}

// checkpoint --capture from "cron" over a real session that grows: JSON
// fields, only new lines read, a torn line waits; then a checkpoint bundles
// the captured state into the YAML and resets the state files.
func TestCheckpointCaptureCommand(t *testing.T) {
	var fx string
	for _, f := range oracle.Fixtures(t) {
		if strings.Contains(f, "session-d5dde00") {
			fx = f
		}
	}
	if fx == "" {
		t.Skip("session-d5dde00 fixture missing")
	}
	data := testkit.ReadFile(t, fx)
	lines := bytes.SplitAfter(data, []byte("\n"))
	dir := t.TempDir()
	f := filepath.Join(dir, "s.jsonl")
	state := filepath.Join(dir, "state")
	run := func(args ...string) (map[string]any, string) {
		t.Helper()
		io, _, out, errOut := iostreams.Test()
		root, _ := NewRootCmd(io)
		root.SetArgs(append([]string{"--state-dir", state, "--json", "checkpoint"}, args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v (%s)", args, err, errOut)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("bad JSON %q", out)
		}
		return m, errOut.String()
	}
	// 200 lines and half of the 201st.
	half := lines[200][:len(lines[200])/2]
	testkit.WriteFile(t, f, append(bytes.Join(lines[:200], nil), half...), 0o600)
	m, _ := run("--capture", f)
	for _, k := range []string{"file", "captured", "newLines", "decisions", "toolResults"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %v", k, m)
		}
	}
	if m["captured"] != true || m["newLines"] != 200.0 || m["toolResults"].(float64) == 0 {
		t.Fatalf("first capture: %v", m)
	}
	m, _ = run("--capture", f)
	if m["captured"] != false || m["newLines"] != 0.0 || !strings.Contains(m["reason"].(string), "write in progress") {
		t.Fatalf("torn: %v", m)
	}
	fa, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	rest := bytes.Join(lines[201:], nil)
	fa.Write(lines[200][len(half):])
	fa.Write(rest)
	fa.Close()
	m, stderr := run("--capture", f)
	if m["captured"] != true || m["fromLine"] != 201.0 || m["newLines"] != float64(len(lines)-1-200) {
		t.Fatalf("growth: %v", m)
	}
	if m["malformed"] != 1.0 || !strings.Contains(stderr, f+":440: malformed line") { // line 440
		t.Errorf("malformed line 440: %v %q", m, stderr)
	}
	st := &checkpoint.Store{StateDir: state}
	captured, warns := st.ReadState(checkpoint.KeyFromFile(f))
	if len(warns) > 0 || len(captured.Resources.ToolsUsed) == 0 || len(captured.Thread.Errors) == 0 {
		t.Fatalf("state %+v %v", captured, warns)
	}
	// Plant a recorded item the transcript cannot give, to see it bundled.
	if err := st.UpdateState(checkpoint.KeyFromFile(f), func(s *checkpoint.State) error {
		s.OpenItems = append(s.OpenItems, "recorded by the capture hook")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m, _ = run(f)
	if m["written"] != true {
		t.Fatalf("checkpoint: %v", m)
	}
	cpData := testkit.ReadFile(t, m["path"].(string))
	cp, err := checkpoint.Unmarshal(cpData)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cp.OpenItems, "\n"), "recorded by the capture hook") {
		t.Errorf("state not bundled: %v", cp.OpenItems)
	}
	for _, tool := range captured.Resources.ToolsUsed {
		if !strings.Contains(strings.Join(cp.Resources.ToolsUsed, ","), tool) {
			t.Errorf("tool %q missing from the checkpoint", tool)
		}
	}
	after, _ := st.ReadState(checkpoint.KeyFromFile(f))
	if len(after.OpenItems)+len(after.Resources.ToolsUsed)+len(after.Thread.Errors)+len(after.Decisions) != 0 || after.Thread.Topic != "" {
		t.Errorf("state not reset: %+v", after)
	}
	// Text output; usage errors.
	io, _, out, _ := iostreams.Test()
	if err := runCheckpoint(&CheckpointOptions{IO: io, File: f, StateDir: state, Capture: true}); err != nil || !strings.HasPrefix(out.String(), f+": nothing captured: no new complete lines") {
		t.Errorf("text: %v %q", err, out)
	}
	for _, o := range []*CheckpointOptions{
		{IO: io, File: "-", SessionKey: "k", Trigger: "manual", Capture: true},
		{IO: io, File: f, Trigger: "manual", Capture: true, Force: true},
	} {
		if err := runCheckpoint(o); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// A checkpoint runs at checkpointGCPercent, not GOGC's default that let
// its pass's garbage double the heap, unless the user set GOGC; the
// setting is restored afterwards.
func TestCheckpointBoundsGarbage(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	t.Setenv("GOGC", "")
	restore := setGCPercent(checkpointGCPercent)
	if got := debug.SetGCPercent(checkpointGCPercent); got != checkpointGCPercent {
		t.Errorf("GOGC during a checkpoint is %d, want %d", got, checkpointGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC after a checkpoint is %d, want the 100 it was", got)
	}
	t.Setenv("GOGC", "200")
	restore = setGCPercent(checkpointGCPercent)
	got := debug.SetGCPercent(100)
	restore()
	if got != 100 {
		t.Errorf("with GOGC set, a checkpoint changed GOGC to %d", got)
	}
}
