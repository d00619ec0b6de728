package codex

import (
	"os"
	"path/filepath"
	"testing"
)

// A fork's parent is looked up in a cache of its tree's rollouts: a tree
// is walked once for any number of forks, and again only for a thread it
// did not hold (a rollout written since) or whose file moved (archived);
// a plain rollout is preferred to a .zst, whichever tree holds them.
func TestFindRolloutWalksATreeOnce(t *testing.T) {
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "11", "30")
	archived := filepath.Join(home, "archived_sessions")
	const (
		a = "0199aaaa-0000-7000-8000-00000000000a"
		b = "0199aaaa-0000-7000-8000-00000000000b"
		c = "0199aaaa-0000-7000-8000-00000000000c"
		d = "0199aaaa-0000-7000-8000-00000000000d"
	)
	write := func(dir, name string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	name := func(id, ext string) string { return "rollout-2026-11-30T10-00-00-" + id + ext }
	pa := write(day, name(a, ".jsonl"))
	pb := write(day, name(b, ".jsonl"))
	write(day, name(c, ".jsonl.zst"))
	pcPlain := write(archived, name(c, ".jsonl"))
	fork := write(day, name("0199ffff-0000-7000-8000-0000000000ff", ".jsonl"))

	find := func(id, want string, walks int64) {
		t.Helper()
		before := rolloutWalks.Load()
		got, _ := findRollout(fork, id)
		if got != want {
			t.Errorf("findRollout(%s) = %q, want %q", id, got, want)
		}
		if n := rolloutWalks.Load() - before; n != walks {
			t.Errorf("findRollout(%s) walked %d trees, want %d", id, n, walks)
		}
	}
	find(a, pa, 1)      // sessions walked once, for the first fork
	find(b, pb, 0)      // the next forks' parents come from the cache
	find(a, pa, 0)      //
	find(c, pcPlain, 1) // the .zst in sessions; the plain one in archived_sessions wins
	pd := write(day, name(d, ".jsonl"))
	find(d, pd, 1) // written since the walk: sessions is walked again
	moved := filepath.Join(archived, filepath.Base(pb))
	if err := os.Rename(pb, moved); err != nil {
		t.Fatal(err)
	}
	find(b, moved, 2) // its cached file is gone: both trees walked again, found archived
	find("0199aaaa-0000-7000-8000-0000000000ee", "", 2)
	// A name without the time, as the old lookup (a suffix after a dash)
	// found it.
	bare := write(archived, "rollout-"+d[:8]+".jsonl")
	find(d[:8], bare, 2)
}
