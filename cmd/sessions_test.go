package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
	"github.com/ctxtool/ctxtool/pkg/sessionlist"
)

// discoveryHome is a temporary HOME holding every agent's stores (pi,
// OpenClaw JSONL and SQLite, Claude Code, Codex), with the state directory
// beside it.
func discoveryHome(t *testing.T) *prunehome.Home {
	t.Helper()
	cleanEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CTXTOOL_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	return prunehome.Build(t, home, 1)
}

// A new user's first commands name no path: estimate, lint, sessions and
// search find every agent's sessions under the home directory, say on
// stderr what they read, and cover every session the home holds.
func TestDiscoveryBareCommands(t *testing.T) {
	h := discoveryHome(t)
	want := map[string]string{} // file → agent
	for _, s := range h.Sessions {
		if s.Kind == prunehome.Foreign || s.Kind == prunehome.Store {
			continue // compared by agent counts below
		}
		want[s.Path] = s.Agent
	}

	out, errOut := runOK(t, "estimate", "--json", "--tokenizer", "heuristic")
	if !strings.HasPrefix(errOut, "reading ") || !strings.Contains(errOut, "found under ~") {
		t.Fatalf("bare estimate: no notice of what it read on stderr:\n%s", errOut)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r EstimateReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("estimate --json line %q: %v", line, err)
		}
		seen[r.File] = true
		if r.Error == "" && r.Tokens <= 0 {
			t.Errorf("%s: %d tokens", r.File, r.Tokens)
		}
	}
	for p := range want {
		if !seen[p] {
			t.Errorf("bare estimate did not read %s", p)
		}
	}
	for _, agent := range []string{"pi", "openclaw", "claude-code", "codex"} {
		if !strings.Contains(errOut, agent+" ") {
			t.Errorf("notice does not name %s: %s", agent, errOut)
		}
	}

	// sessions lists the same sessions, newest first, with their agent.
	out, _ = runOK(t, "sessions", "--json")
	var list []sessionlist.Session
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s sessionlist.Session
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("sessions --json line %q: %v", line, err)
		}
		list = append(list, s)
	}
	if len(list) != len(seen) {
		t.Errorf("sessions lists %d, estimate read %d", len(list), len(seen))
	}
	for i, s := range list {
		if i > 0 && s.LastActivity.After(list[i-1].LastActivity) {
			t.Errorf("sessions not newest first at %d: %v after %v", i, s.LastActivity, list[i-1].LastActivity)
		}
		if a, ok := want[s.File]; ok && a != s.Agent {
			t.Errorf("%s: agent %q, want %q", s.File, s.Agent, a)
		}
		if s.Error == "" && (s.Tokens <= 0 || s.Size <= 0) {
			t.Errorf("%s: tokens %d size %d", s.File, s.Tokens, s.Size)
		}
	}
	// Filters and sorts, like ls.
	out, _ = runOK(t, "sessions", "--json", "--agent", "pi", "--sort", "size")
	var prev int64 = -1
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s sessionlist.Session
		_ = json.Unmarshal([]byte(line), &s)
		if s.Agent != "pi" {
			t.Errorf("--agent pi listed %s (%s)", s.File, s.Agent)
		}
		if prev >= 0 && s.Size > prev {
			t.Errorf("--sort size: %d after %d", s.Size, prev)
		}
		prev = s.Size
		n++
	}
	wantPi := 0
	for _, a := range want {
		if a == "pi" {
			wantPi++
		}
	}
	if n != wantPi {
		t.Errorf("--agent pi: %d sessions, want %d", n, wantPi)
	}
	out, _ = runOK(t, "sessions", "--since", "3d", "--json")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s sessionlist.Session
		_ = json.Unmarshal([]byte(line), &s)
		for _, hs := range h.Sessions {
			if hs.Path == s.File && hs.Age > 3*24*60*60*1e9 {
				t.Errorf("--since 3d listed %s, %v old", s.File, hs.Age)
			}
		}
	}
	if _, errOut, code := runCLI(t, "sessions", "--sort", "name"); code != 2 || !strings.Contains(errOut, "time, size, tokens") {
		t.Errorf("--sort name: exit %d, %s", code, errOut)
	}
	// The human table: one row per session plus its header.
	out, _ = runOK(t, "sessions")
	if rows := strings.Count(out, "\n"); rows != len(list)+1 {
		t.Errorf("sessions table: %d lines for %d sessions:\n%s", rows, len(list), out)
	}

	// checkpoint --capture with no path captures every session found;
	// checkpoint without --capture still needs its one FILE.
	out, errOut = runOK(t, "checkpoint", "--capture", "--json")
	if got := strings.Count(out, "\n"); got != len(seen) || !strings.Contains(errOut, "found under ~") {
		t.Errorf("bare checkpoint --capture: %d lines for %d sessions\n%s", got, len(seen), errOut)
	}
	if _, errOut, code := runCLI(t, "checkpoint"); code != 2 || !strings.Contains(errOut, "needs a session FILE") {
		t.Errorf("bare checkpoint: exit %d, %s", code, errOut)
	}

	// lint and search with no path, and no index yet.
	if _, errOut := runOK(t, "lint", "--fail-on", "never"); !strings.Contains(errOut, "found under ~") {
		t.Errorf("bare lint: no notice: %s", errOut)
	}
	for _, s := range h.Sessions {
		if s.Agent != "claude-code" || s.Fact == "" {
			continue
		}
		out, errOut := runOK(t, "search", "--json", s.Fact)
		if !strings.Contains(out, s.Fact) || !strings.Contains(errOut, "no recall index") {
			t.Errorf("bare search %s: did not index and find it\nstdout: %s\nstderr: %s", s.Fact, out, errOut)
		}
		break
	}
}

// Every command that reads session files one by one accepts a directory,
// walking it as lint does; a directory with no session is exit 2; compact
// walks one only with --dry-run; a home with no store is exit 2 naming
// where it looked.
func TestDiscoveryDirectories(t *testing.T) {
	h := discoveryHome(t)
	dir := filepath.Join(h.Dir, ".pi", "agent", "sessions", "--home-dev-acme--")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	out, _ := runOK(t, "estimate", "--json", dir)
	if got := strings.Count(out, "\n"); got != len(files) {
		t.Errorf("estimate DIR: %d reports for %d files", got, len(files))
	}
	out, _, _ = runCLI(t, "compact", "--dry-run", "--json", "--summarizer", "extractive", dir)
	if got := strings.Count(out, "\n"); got != len(files) {
		t.Errorf("compact --dry-run DIR: %d reports for %d files:\n%s", got, len(files), out)
	}
	if _, errOut, code := runCLI(t, "compact", "--summarizer", "extractive", dir); code != 2 || !strings.Contains(errOut, "--dry-run") {
		t.Errorf("compact DIR: exit %d, %s", code, errOut)
	}
	empty := t.TempDir()
	if _, errOut, code := runCLI(t, "estimate", empty); code != 2 || !strings.Contains(errOut, "no session files") {
		t.Errorf("estimate on an empty directory: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "budget", empty); code != 2 || !strings.Contains(errOut, "no session files") {
		t.Errorf("budget on an empty directory: exit %d, %s", code, errOut)
	}
	t.Setenv("HOME", t.TempDir())
	if _, errOut, code := runCLI(t, "estimate"); code != 2 || !strings.Contains(errOut, "~/.claude/projects") {
		t.Errorf("estimate in an empty home: exit %d, %s", code, errOut)
	}
}
