package compaction

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

	"github.com/ctxtool/ctxtool/internal/factgen"
	"github.com/ctxtool/ctxtool/internal/testkit"
)

func execSession(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	factgen.Write(t, path, factgen.Options{Seed: 11, Turns: 24})
	orig, _ := os.ReadFile(path)
	return path, orig
}

// logs collects Logf lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func TestExecSummarizerGetsThePreparation(t *testing.T) {
	path, _ := execSession(t)
	in := filepath.Join(t.TempDir(), "in.json")
	script := fmt.Sprintf(`cat > %q; printf '## Goal\n- summary by the exec command\n'`, in)
	res, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 6000},
		Summarizer: &ExecSummarizer{Command: script, Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var got ExecInput
	raw, err := os.ReadFile(in)
	if err != nil || json.Unmarshal(raw, &got) != nil {
		t.Fatalf("the command's stdin was not the preparation: %v %.200s", err, raw)
	}
	p := got.Preparation
	if got.Type != "compaction" || got.SessionFile != path || p.FirstKeptEntryID != res.FirstKeptEntryID ||
		len(p.MessagesToSummarize)+len(p.TurnPrefixMessages) != res.SummarizedMessages || len(got.Entries) != res.SummarizedMessages ||
		p.Settings.KeepRecentTokens != 6000 || p.Settings.ReserveTokens != DefaultReserveTokens || got.Transcript == "" {
		t.Fatalf("preparation: type %q, file %q, first kept %q (want %q), %d+%d messages / %d entries (want %d), settings %+v",
			got.Type, got.SessionFile, p.FirstKeptEntryID, res.FirstKeptEntryID, len(p.MessagesToSummarize), len(p.TurnPrefixMessages),
			len(got.Entries), res.SummarizedMessages, p.Settings)
	}
	var first struct {
		Role string `json:"role"`
	}
	if json.Unmarshal(p.MessagesToSummarize[0], &first) != nil || first.Role != "user" || got.Entries[0].Line != res.SummarizedFromLine {
		t.Fatalf("first message %s (line %d, summarised from %d)", p.MessagesToSummarize[0], got.Entries[0].Line, res.SummarizedFromLine)
	}
	if len(p.FileOps.Read) == 0 {
		t.Errorf("no read files in fileOps")
	}
	s := testkit.Load(t, path)
	defer s.Close()
	m, _ := s.Message(s.Leaf())
	if !strings.HasPrefix(m.Summary, "## Goal\n- summary by the exec command") || !strings.Contains(m.Summary, "<read-files>") {
		t.Fatalf("written summary: %.300s", m.Summary)
	}
	if res.Summarizer != "exec" || res.Audit == nil || res.Audit.Facts == 0 || len(res.Audit.Dropped) == 0 {
		t.Fatalf("summarizer %q, audit %+v: a two-line summary must drop facts", res.Summarizer, res.Audit)
	}
}

func TestExecSummarizerFailureWritesNothing(t *testing.T) {
	for name, script := range map[string]string{
		"exit 2":    `cat >/dev/null; echo "no model configured" >&2; exit 2`,
		"no output": `cat >/dev/null`,
		"too slow":  `cat >/dev/null; sleep 20; echo late`,
	} {
		t.Run(name, func(t *testing.T) {
			path, orig := execSession(t)
			start := time.Now()
			_, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 6000},
				Summarizer: &ExecSummarizer{Command: script, Timeout: 500 * time.Millisecond}})
			if err == nil || !strings.Contains(err.Error(), "--summarizer exec") {
				t.Fatalf("err %v", err)
			}
			if name == "exit 2" && !strings.Contains(err.Error(), "no model configured") {
				t.Errorf("the command's stderr is not in the error: %v", err)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s: the command was not killed at its timeout", time.Since(start))
			}
			if now, _ := os.ReadFile(path); string(now) != string(orig) {
				t.Fatal("the session changed")
			}
		})
	}
}

func TestHooksReceiveEventsAndNeverStopACompaction(t *testing.T) {
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json")
	path, _ := execSession(t)
	var lg logs
	res, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 6000}, Summarizer: Extractive{},
		Hooks: Hooks{BeforeCompaction: fmt.Sprintf("cat > %q", before), AfterCompaction: fmt.Sprintf("cat > %q; echo after-done", after)},
		Logf:  lg.logf})
	if err != nil || !res.Compacted {
		t.Fatal(err, res.Reason)
	}
	var b BeforeEvent
	var a AfterEvent
	if raw, err := os.ReadFile(before); err != nil || json.Unmarshal(raw, &b) != nil {
		t.Fatalf("before hook: %v %s", err, raw)
	}
	if raw, err := os.ReadFile(after); err != nil || json.Unmarshal(raw, &a) != nil {
		t.Fatalf("after hook: %v %s", err, raw)
	}
	if b.Hook != HookBefore || b.MessageCount != res.SummarizedMessages+res.KeptMessages || b.TokenCount != res.TokensBefore || b.SessionFile != path {
		t.Errorf("before event %+v; result: %d summarised + %d kept, %d tokens", b, res.SummarizedMessages, res.KeptMessages, res.TokensBefore)
	}
	if a.Hook != HookAfter || a.MessageCount != res.KeptMessages+1 || a.TokenCount != res.TokensAfter || a.CompactedCount != res.SummarizedMessages {
		t.Errorf("after event %+v; result %+v", a, res)
	}
	if !strings.Contains(lg.text(), "afterCompaction: after-done") {
		t.Errorf("the hook's output is not logged: %s", lg.text())
	}

	for name, hook := range map[string]string{
		"hangs": "sleep 30; echo never",
		"fails": "echo boom >&2; exit 7",
	} {
		t.Run(name, func(t *testing.T) {
			path, orig := execSession(t)
			var lg logs
			start := time.Now()
			res, err := CompactFile(context.Background(), path, Options{Settings: Settings{Force: true, KeepRecentTokens: 6000}, Summarizer: Extractive{},
				Hooks: Hooks{BeforeCompaction: hook, AfterCompaction: hook, Timeout: 400 * time.Millisecond}, Logf: lg.logf})
			if err != nil || !res.Compacted {
				t.Fatalf("a %s hook stopped the compaction: %v", name, err)
			}
			if now, _ := os.ReadFile(path); !strings.HasPrefix(string(now), string(orig)) || len(now) == len(orig) {
				t.Fatal("the compaction was not appended")
			}
			log := lg.text()
			for _, kind := range []string{"beforeCompaction", "afterCompaction"} {
				want := "compaction.hooks." + kind
				if !strings.Contains(log, want) {
					t.Errorf("no log line for %s: %s", kind, log)
				}
			}
			switch name {
			case "hangs":
				if !strings.Contains(log, "did not finish within 400ms and was killed") {
					t.Errorf("log: %s", log)
				}
				if time.Since(start) > 15*time.Second {
					t.Errorf("took %s: the hanging hook was waited for", time.Since(start))
				}
			case "fails":
				if !strings.Contains(log, "boom") || !strings.Contains(log, "exit status 7") {
					t.Errorf("log: %s", log)
				}
			}
		})
	}
}
