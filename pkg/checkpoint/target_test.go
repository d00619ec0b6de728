package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// restore's argument is a session file or a session key, by one rule: an
// existing file is a file, a missing argument shaped like a path is an
// error (a typo must not become a key that has no checkpoints), and
// anything else — keys, a directory, a store session — is a key.
func TestResolveTarget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(file, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "openclaw-agent.sqlite")
	if err := os.WriteFile(store, []byte("SQLite format 3\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg, keyFlag string
		want         Target
		missing      bool
	}{
		{arg: file, want: Target{Key: KeyFromFile(file), File: file}},
		{arg: file, keyFlag: "agent:main:main", want: Target{Key: "agent:main:main", File: file}},
		{arg: "agent:main:main", want: Target{Key: "agent:main:main"}},
		{arg: "telegram:user123", keyFlag: "k", want: Target{Key: "k"}},
		{arg: dir, want: Target{Key: dir}},
		// A store session is its store key, as checkpoint takes it (issue 35:
		// the whole path was the key here, another one there).
		{arg: store + "#agent:main:main", want: Target{Key: "agent:main:main", File: store + "#agent:main:main"}},
		{arg: filepath.Join(dir, "typo.jsonl"), missing: true},
		{arg: "typo.jsonl", missing: true},
		{arg: "./typo", missing: true},
		{arg: "../typo", missing: true},
		{arg: "~/typo", missing: true},
	} {
		got, err := ResolveTarget(c.arg, c.keyFlag)
		if c.missing {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%q: %+v, %v; want a missing file", c.arg, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q (--session-key %q): %+v, %v; want %+v", c.arg, c.keyFlag, got, err, c.want)
		}
	}
}
