package scrub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/internal/testkit/secretkit"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

func secretSession(t *testing.T, samples []secretkit.Sample) string {
	t.Helper()
	var texts []string
	for _, s := range samples {
		texts = append(texts, s.Text)
	}
	blob := strings.Join(texts, "\n")
	var buf bytes.Buffer
	b := sessiongen.NewBuilder(&buf, sessiongen.Config{})
	b.UserText("deploy with:\n" + blob)
	id := b.ToolCallID()
	b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.Text("checking " + blob),
		sessiongen.ToolCall(id, "bash", sessiongen.Obj{{K: "command", V: "echo " + samples[0].Value}})}})
	b.ToolResultText(id, "bash", blob)
	b.AssistantText("done")
	if _, err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return testkit.WriteTemp(t, "s.jsonl", buf.Bytes())
}

// shape is what scrubbing must not change: the tree and the context.
type shape struct {
	IDs, Parents, Types []string
	Context             []string // the entries of the messages
	Lines               int
}

func shapeOf(t *testing.T, path string) shape {
	t.Helper()
	s, err := transcript.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var sh shape
	for _, e := range s.Entries {
		sh.IDs = append(sh.IDs, e.ID())
		sh.Parents = append(sh.Parents, e.ParentID())
		sh.Types = append(sh.Types, e.Type())
	}
	for _, m := range s.Context().Messages {
		sh.Context = append(sh.Context, m.Entry.ID())
	}
	sh.Lines = s.Lines
	if len(s.Malformed) > 0 {
		t.Fatalf("%s: malformed lines %+v", path, s.Malformed)
	}
	return sh
}

// scrub redacts every planted secret with lint's fingerprints, keeps the
// session's tree and context, keeps the original as a 0600 backup, and a
// second run finds nothing to do.
func TestScrubRedactsAndKeepsTheShape(t *testing.T) {
	samples := secretkit.Samples(5)
	path := secretSession(t, samples)
	orig := testkit.ReadFile(t, path)
	before := shapeOf(t, path)
	lint := secrets.Scan(bytes.NewReader(orig))

	dry, err := Run(context.Background(), path, Options{DryRun: true})
	if err != nil || dry.Scrubbed || len(dry.Secrets) != len(lint.Hits) || !bytes.Equal(testkit.ReadFile(t, path), orig) {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	res, err := Run(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Scrubbed || len(res.Secrets) != len(lint.Hits) || res.Lines != 3 {
		t.Fatalf("result %+v; lint finds %d", res, len(lint.Hits))
	}
	after := testkit.ReadFile(t, path)
	if leaks := secretkit.Leaks(after, samples); len(leaks) > 0 {
		t.Errorf("still in clear: %v", secretkit.Kinds(leaks))
	}
	if again := secrets.Scan(bytes.NewReader(after)); len(again.Hits) != 0 {
		t.Errorf("lint still finds %+v", again.Hits)
	}
	for _, h := range lint.Hits {
		if !bytes.Contains(after, []byte(secrets.Marker(h.Kind, h.Fingerprint))) {
			t.Errorf("no marker for lint's %s %s", h.Kind, h.Fingerprint)
		}
	}
	if got := shapeOf(t, path); !reflect.DeepEqual(got, before) {
		t.Errorf("shape changed:\n%+v\n%+v", got, before)
	}
	bak := testkit.ReadFile(t, res.Backup)
	if !bytes.Equal(bak, orig) {
		t.Error("the backup is not the original")
	}
	if st, _ := os.Stat(res.Backup); st.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v", st.Mode().Perm())
	}
	res2, err := Run(context.Background(), path, Options{})
	if err != nil || res2.Scrubbed || len(res2.Secrets) != 0 {
		t.Fatalf("second run: %+v %v", res2, err)
	}
	if baks, _ := filepath.Glob(path + ".bak.*"); len(baks) != 1 {
		t.Errorf("backups %v", baks)
	}
}

// Other agents' transcripts are refused, untouched, with the way to a
// scrubbed copy.
func TestScrubRefusesForeignFormats(t *testing.T) {
	var buf bytes.Buffer
	if _, err := sessiongen.GenerateClaudeCode(&buf, sessiongen.AgentOptions{Seed: 1, Turns: 3, Fact: secretkit.Samples(6)[6].Text}); err != nil {
		t.Fatal(err)
	}
	path := testkit.WriteTemp(t, "cc.jsonl", buf.Bytes())
	_, err := Run(context.Background(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), "ctxtool export") {
		t.Fatalf("err %v", err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), buf.Bytes()) {
		t.Fatal("the file changed")
	}
	if baks, _ := filepath.Glob(path + ".bak.*"); len(baks) != 0 {
		t.Fatalf("backups %v", baks)
	}
}

// A session locked by another writer is not scrubbed (exit 4 in the CLI).
func TestScrubRespectsTheLock(t *testing.T) {
	path := secretSession(t, secretkit.Samples(7))
	orig := testkit.ReadFile(t, path)
	lock, err := filelock.Acquire(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = Run(context.Background(), path, Options{})
	var l interface{ Locked() bool }
	if !errors.As(err, &l) || !l.Locked() {
		t.Fatalf("err %v", err)
	}
	if !bytes.Equal(testkit.ReadFile(t, path), orig) {
		t.Fatal("the file changed")
	}
}

// pi loads what scrub writes with the same context: the generated session
// and every real pi / OpenClaw session that holds a secret.
func TestPiLoadsScrubbedSessions(t *testing.T) {
	oracle.Require(t)
	piLoadsScrubbed(t, []string{secretSession(t, secretkit.Samples(8))})
	t.Run("wild", func(t *testing.T) {
		wild := oracle.WildDir(t)
		var files []string
		for _, sub := range []string{"pi", "openclaw"} {
			more, _ := filepath.Glob(filepath.Join(wild, sub, "*.jsonl"))
			for _, f := range more {
				data := testkit.ReadFile(t, f)
				if len(secrets.Scan(bytes.NewReader(data)).Hits) > 0 {
					files = append(files, testkit.WriteTemp(t, filepath.Base(f), data))
				}
			}
		}
		t.Logf("%d real sessions with secrets", len(files))
		piLoadsScrubbed(t, files)
	})
}

// piLoadsScrubbed scrubs files and checks pi's loader sees the same
// sessions before and after.
func piLoadsScrubbed(t *testing.T, files []string) {
	t.Helper()
	if len(files) == 0 {
		return
	}
	before := oracle.Check(t, false, false, files...)
	for _, f := range files {
		res, err := Run(context.Background(), f, Options{Idle: 0})
		if err != nil || !res.Scrubbed {
			t.Fatalf("%s: %+v %v", f, res, err)
		}
		if hits := secrets.Scan(bytes.NewReader(testkit.ReadFile(t, f))).Hits; len(hits) != 0 {
			t.Errorf("%s: lint still finds %d secrets", filepath.Base(f), len(hits))
		}
	}
	after := oracle.Check(t, false, false, files...)
	for i, f := range files {
		b, a := before[i], after[i]
		if !a.Loads || a.Entries != b.Entries || a.PathEntries != b.PathEntries || a.ContextMessages != b.ContextMessages ||
			a.LeafID != b.LeafID || !reflect.DeepEqual(a.Roles, b.Roles) || !reflect.DeepEqual(a.MalformedLines, b.MalformedLines) ||
			a.OrphanToolCalls != b.OrphanToolCalls || a.OrphanToolResults != b.OrphanToolResults {
			t.Errorf("%s: pi loads a different session after scrub:\nbefore %+v\nafter  %+v", filepath.Base(f), b, a)
		}
	}
}
