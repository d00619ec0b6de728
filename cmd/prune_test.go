package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/prune"
)

type fileState struct {
	sum   string
	mtime time.Time
}

func stateOf(t *testing.T, path string) (fileState, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return fileState{}, false
	}
	st, _ := os.Stat(path)
	s := sha256.Sum256(data)
	return fileState{hex.EncodeToString(s[:]), st.ModTime()}, true
}

func pruneJSON(t *testing.T, args ...string) (*prune.Report, string, int) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"prune", "--json"}, args...)...)
	var rep prune.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("prune %v: exit %d, not JSON: %v\n%s\n%s", args, code, err, out, errOut)
	}
	return &rep, errOut, code
}

// On a home holding every agent's stores: the dry run writes nothing and
// plans what the policy says; --apply archives exactly the old sessions
// (leaving live, newest, current, locked, foreign and store sessions
// byte-for-byte alone); every reading command, index and search still find
// every session's content; unarchive restores byte-identical files with
// their mtimes; --delete removes only archives, printing their sha256.
func TestPruneGeneratedHome(t *testing.T) {
	cleanEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CTXTOOL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	h := prunehome.Build(t, home, 1)
	before := map[string]fileState{}
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Store {
			continue
		}
		st, _ := stateOf(t, s.Path)
		before[s.Path] = st
	}

	// Dry run: the plan, and nothing written.
	rep, _, code := pruneJSON(t, prunehome.Policy...)
	if code != 0 {
		t.Fatalf("dry run: exit %d", code)
	}
	actions := map[string]*prune.Session{}
	for _, s := range rep.Sessions {
		actions[s.File] = s
	}
	var toArchive int
	for _, s := range h.Sessions {
		got := actions[s.Path]
		if s.Kind == prunehome.Store {
			db := strings.SplitN(s.Path, "#", 2)[0]
			if got = actions[db]; got == nil || got.Action != prune.Skipped || !strings.Contains(got.Reason, "read-only") {
				t.Errorf("store %s: %+v, want skipped as read-only", db, got)
			}
			continue
		}
		if got == nil {
			t.Fatalf("%s: not in the report", s.Path)
		}
		want := prune.Keep
		if s.Kind == prunehome.Archived {
			want = prune.ToArchive
			toArchive++
			if !got.Estimated || got.Reclaimed <= 0 {
				t.Errorf("%s: no reclaim estimate: %+v", s.Path, got)
			}
		}
		if got.Action != want {
			t.Errorf("%s (kind %d): %s (%s), want %s", s.Path, s.Kind, got.Action, got.Reason, want)
		}
	}
	if len(rep.Groups) < 6 || rep.Totals.Archive != toArchive {
		t.Errorf("groups %d, totals %+v; want ≥ 6 groups, %d to archive", len(rep.Groups), rep.Totals, toArchive)
	}
	for p, st := range before {
		if now, _ := stateOf(t, p); now != st {
			t.Errorf("dry run changed %s", p)
		}
	}
	out, _, code := runCLI(t, append([]string{"prune"}, prunehome.Policy...)...)
	if code != 0 || !strings.Contains(out, "would archive") || !strings.Contains(out, "claude-code") || !strings.Contains(out, "dry run") {
		t.Errorf("table: exit %d\n%s", code, out)
	}

	stores := []string{filepath.Join(home, ".pi"), filepath.Join(home, ".openclaw"), filepath.Join(home, ".claude"), filepath.Join(home, ".codex")}
	runOK(t, append([]string{"index"}, stores...)...) // indexed before: the next index must follow the archives

	// A locked session is skipped and reported (exit 4); the others go.
	var locked string
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Archived && s.Agent == "openclaw" {
			locked = s.Path
		}
	}
	lk, err := filelock.Acquire(context.Background(), locked, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, _, code = pruneJSON(t, append([]string{"--apply"}, prunehome.Policy...)...)
	lk.Release()
	if code != 4 || rep.Totals.Locked != 1 {
		t.Fatalf("apply with a locked session: exit %d, totals %+v", code, rep.Totals)
	}
	var reclaimed int64
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Store {
			continue
		}
		_, origExists := stateOf(t, s.Path)
		arch := s.Path + prune.Suffix
		_, archExists := os.Stat(arch)
		if s.Kind == prunehome.Archived && s.Path != locked {
			if origExists || archExists != nil {
				t.Errorf("%s: original still there (%v) or no archive (%v)", s.Path, origExists, archExists)
			}
			continue
		}
		if now, _ := stateOf(t, s.Path); now != before[s.Path] || archExists == nil {
			t.Errorf("%s (kind %d) was touched", s.Path, s.Kind)
		}
	}
	for _, s := range rep.Sessions {
		if s.Done {
			reclaimed += s.Reclaimed
		}
	}
	t.Logf("archived %d sessions, reclaimed %d bytes of %d", rep.Totals.Archive, reclaimed, rep.Totals.Bytes)

	// The locked one goes on the next run, once free.
	rep, _, code = pruneJSON(t, append([]string{"--apply"}, prunehome.Policy...)...)
	if code != 0 || rep.Totals.Archive != 1 {
		t.Fatalf("second apply: exit %d, totals %+v, want the formerly locked session archived", code, rep.Totals)
	}
	if m, err := os.ReadFile(filepath.Join(filepath.Dir(locked), prune.ManifestName)); err != nil || !strings.Contains(string(m), before[locked].sum) {
		t.Errorf("manifest beside %s lacks its sha256: %v\n%s", locked, err, m)
	}

	// Every reading command reads every session, archived or not.
	var paths []string
	for _, s := range h.Sessions {
		p := s.Path
		if s.Kind == prunehome.Archived {
			p += prune.Suffix
		}
		paths = append(paths, p)
		if s.Kind == prunehome.Store {
			continue
		}
		out, errOut, code := runCLI(t, "estimate", "--json", p)
		if code != 0 || !strings.Contains(out, `"contextMessages"`) {
			t.Errorf("estimate %s: exit %d\n%s%s", p, code, out, errOut)
		}
		if _, errOut, code := runCLI(t, "lint", "--fail-on", "never", p); code != 0 {
			t.Errorf("lint %s: exit %d\n%s", p, code, errOut)
		}
		if _, errOut, code := runCLI(t, "checkpoint", "--dry-run", p); code != 0 {
			t.Errorf("checkpoint %s: exit %d\n%s", p, code, errOut)
		}
		exported := filepath.Join(t.TempDir(), "x.jsonl")
		if _, errOut, code := runCLI(t, "export", p, "--to", "pi", "-o", exported); code != 0 {
			t.Errorf("export %s: exit %d\n%s", p, code, errOut)
		} else if data, _ := os.ReadFile(exported); !strings.Contains(string(data), s.Fact) {
			t.Errorf("export %s lost the session's content (%q)", p, s.Fact)
		}
	}
	runOK(t, append([]string{"index"}, stores...)...)
	for i, s := range h.Sessions {
		out, errOut, code := runCLI(t, "search", "--json", "--min-score", "0", s.Fact)
		if code != 0 || !strings.Contains(out, filepath.Base(strings.SplitN(paths[i], "#", 2)[0])) ||
			s.Kind == prunehome.Archived && strings.Contains(out, filepath.Base(s.Path)+`"`) {
			t.Errorf("search %s (in %s): exit %d\n%s%s", s.Fact, paths[i], code, out, errOut)
		}
	}

	// unarchive restores every archived session byte for byte, mtime too.
	out, errOut, code := runCLI(t, append([]string{"unarchive"}, stores...)...)
	if code != 0 {
		t.Fatalf("unarchive: exit %d\n%s%s", code, out, errOut)
	}
	for p, st := range before {
		now, ok := stateOf(t, p)
		if !ok || now.sum != st.sum || !now.mtime.Equal(st.mtime) {
			t.Errorf("%s after unarchive: %v %+v, want %+v", p, ok, now, st)
		}
	}
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Archived {
			if _, err := os.Stat(s.Path + prune.Suffix); err == nil {
				t.Errorf("%s: archive left after unarchive", s.Path)
			}
		}
	}

	// --delete: archive again, then delete the archives (older than 0s
	// after a second), each sha256 printed before.
	if _, _, code := pruneJSON(t, append([]string{"--apply"}, prunehome.Policy...)...); code != 0 {
		t.Fatalf("re-archive: exit %d", code)
	}
	if rep, _, _ := pruneJSON(t, append([]string{"--delete", "--delete-after", "1h"}, prunehome.Policy...)...); rep.Totals.Delete != 0 {
		t.Errorf("--delete-after 1h deletes fresh archives: %+v", rep.Totals)
	}
	time.Sleep(1100 * time.Millisecond)
	rep, errOut, code = pruneJSON(t, append([]string{"--apply", "--delete", "--delete-after", "1s"}, prunehome.Policy...)...)
	if code != 0 || rep.Totals.Delete != toArchive {
		t.Fatalf("delete: exit %d, totals %+v, want %d deleted\n%s", code, rep.Totals, toArchive, errOut)
	}
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Archived {
			if !strings.Contains(errOut, before[s.Path].sum) {
				t.Errorf("the sha256 of %s's archive was not printed before deletion", s.Path)
			}
			if _, err := os.Stat(s.Path + prune.Suffix); err == nil {
				t.Errorf("%s: archive not deleted", s.Path)
			}
		} else if s.Kind != prunehome.Store {
			if _, ok := stateOf(t, s.Path); !ok {
				t.Errorf("%s (kind %d) deleted", s.Path, s.Kind)
			}
		}
	}
}

// --archive-dir puts archives under <dir>/<agent>/<project>/, and
// unarchive brings them back to where they were.
func TestPruneArchiveDir(t *testing.T) {
	cleanEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	h := prunehome.Build(t, home, 1)
	dir := filepath.Join(t.TempDir(), "archive")
	rep, _, code := pruneJSON(t, append([]string{"--apply", "--archive-dir", dir}, prunehome.Policy...)...)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range rep.Sessions {
		if s.Done && !strings.HasPrefix(s.Archive, filepath.Join(dir, string(s.Agent))+string(filepath.Separator)) {
			t.Errorf("%s archived to %s", s.File, s.Archive)
		}
	}
	for _, s := range h.Sessions {
		if _, err := os.Stat(strings.SplitN(s.Path, "#", 2)[0]); (err == nil) == (s.Kind == prunehome.Archived) {
			t.Errorf("%s (kind %d): exists %v", s.Path, s.Kind, err == nil)
		}
	}
	runOK(t, "unarchive", dir)
	for _, s := range h.Sessions {
		if _, err := os.Stat(strings.SplitN(s.Path, "#", 2)[0]); err != nil {
			t.Errorf("%s not restored: %v", s.Path, err)
		}
	}
}

func TestPruneUsageErrors(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		{"prune", "--older-than", "soon"},
		{"prune", "--max-total", "lots"},
		{"prune", "--delete", "--delete-after", "0"},
		{"unarchive", "--to", "x", "a.zst", "b.zst"},
	} {
		if _, errOut, code := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
	t.Setenv("HOME", t.TempDir())
	if _, errOut, code := runCLI(t, "prune"); code != 2 || !strings.Contains(errOut, "no session store") {
		t.Errorf("empty home: exit %d\n%s", code, errOut)
	}
}

// --dedupe on the generated home: the pi and OpenClaw archives keep one
// copy of the shared screenshot in ctxtool-blobs/ per directory, Claude
// Code and Codex are archived whole (reported), every archive still reads,
// and unarchive restores every file byte for byte. Logs the bytes
// reclaimed by archiving alone and with dedupe (the same home twice).
func TestPruneDedupe(t *testing.T) {
	cleanEnv(t)
	measure := func(dedupe bool) (*prune.Report, *prunehome.Home) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		h := prunehome.Build(t, home, 1)
		args := append([]string{"--apply"}, prunehome.Policy...)
		if dedupe {
			args = append(args, "--dedupe")
		}
		rep, errOut, code := pruneJSON(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		return rep, h
	}
	plain, _ := measure(false)
	rep, h := measure(true)
	var sessions int64
	for _, s := range rep.Sessions {
		sessions += s.Bytes
		if !s.Done {
			continue
		}
		switch s.Format {
		case "pi":
			if s.Deduped == 0 {
				t.Errorf("%s: no image deduplicated", s.File)
			}
		default:
			if s.Deduped != 0 || !strings.Contains(s.Reason, "images not deduplicated") {
				t.Errorf("%s (%s): deduped %d, reason %q", s.File, s.Format, s.Deduped, s.Reason)
			}
		}
	}
	if rep.Totals.Deduped == 0 || rep.Totals.BlobsAdded >= rep.Totals.Deduped || rep.Totals.Reclaimed <= plain.Totals.Reclaimed {
		t.Fatalf("dedupe: totals %+v, without dedupe %+v", rep.Totals, plain.Totals)
	}
	t.Logf("home of %d bytes in %d sessions: archiving alone reclaims %d bytes; with --dedupe %d (%d image bytes replaced by references, %d stored once): dedupe adds %d",
		sessions, len(rep.Sessions), plain.Totals.Reclaimed, rep.Totals.Reclaimed, rep.Totals.Deduped, rep.Totals.BlobsAdded, rep.Totals.Reclaimed-plain.Totals.Reclaimed)
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Archived {
			if out, errOut, code := runCLI(t, "estimate", "--json", s.Path+prune.Suffix); code != 0 || !strings.Contains(out, `"contextMessages"`) {
				t.Errorf("estimate %s: exit %d\n%s", s.Path, code, errOut)
			}
		}
	}
	before := map[string]string{}
	for _, s := range h.Sessions {
		if s.Kind != prunehome.Store {
			before[s.Path] = ""
		}
	}
	runOK(t, "unarchive", h.Dir+"/.pi", h.Dir+"/.openclaw", h.Dir+"/.claude", h.Dir+"/.codex")
	for p := range before {
		if _, ok := stateOf(t, p); !ok {
			t.Errorf("%s not restored", p)
		}
	}
}
