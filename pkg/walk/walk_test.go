package walk

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

func TestClassify(t *testing.T) {
	cases := map[string]Kind{
		"abc.jsonl":          Transcript,
		"abc-topic-42.jsonl": Transcript,
		"2025-12-09T00-52-54-397Z_d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl": Transcript,
		"abc.jsonl.reset.2026-03-08T13-03-27.008Z":                            Archive,
		"abc.jsonl.deleted.2026-03-08T13-03-27Z":                              Archive,
		"abc.jsonl.bak.2026-03-08T13-03-27.008Z":                              Backup,
		"abc.jsonl.reset.yesterday":                                           Other,
		"sessions.json":                                                       Store,
		"sessions.json.bak.1712345678":                                        Backup,
		"abc.jsonl.lock":                                                      Lock,
		"abc.jsonl.truncate-tmp":                                              Temp,
		".abc.jsonl.ctxtool-tmp-123":                                          Temp,
		"abc.checkpoint.0b6f3c1e-5a47-4d0e-9c1a-2f8e7d6c5b4a.jsonl":           Checkpoint,
		"abc.trajectory.jsonl":                                                Trajectory,
		"abc.trajectory-path.json":                                            Trajectory,
		"notes.md":                                                            Other,
		// The last ".<reason>." wins: a reset archive of a file whose name
		// contains ".bak." is still a reset archive.
		"x.bak.y.jsonl.reset.2026-03-08T13-03-27.008Z": Archive,
	}
	for name, want := range cases {
		if got := classify(filepath.Join("/s", name)); got != want {
			t.Errorf("classify(%q) = %v, want %v", name, got, want)
		}
	}
}

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, p, []byte("{}\n"), 0o644)
}

func TestWalkBothLayouts(t *testing.T) {
	root := t.TempDir()
	want := []string{
		"pi/sessions/--home-u-proj--/2025-12-09T00-52-54-397Z_d9.jsonl",
		"openclaw/agents/main/sessions/abc.jsonl",
		"openclaw/agents/main/sessions/abc-topic-7.jsonl",
		"openclaw/agents/work/sessions/def.jsonl",
	}
	skip := []string{
		"openclaw/agents/main/sessions/abc.jsonl.lock",
		"openclaw/agents/main/sessions/abc.jsonl.reset.2026-03-08T13-03-27.008Z",
		"openclaw/agents/main/sessions/abc.jsonl.bak.2026-03-08T13-03-27.008Z",
		"openclaw/agents/main/sessions/sessions.json",
		"openclaw/agents/main/sessions/abc.checkpoint.0b6f3c1e-5a47-4d0e-9c1a-2f8e7d6c5b4a.jsonl",
		"openclaw/agents/main/sessions/.hidden/x.jsonl",
		"pi/sessions/--home-u-proj--/x.jsonl.truncate-tmp",
	}
	for _, p := range append(append([]string{}, want...), skip...) {
		touch(t, filepath.Join(root, p))
	}
	files, err := Walk([]string{filepath.Join(root, "pi"), filepath.Join(root, "openclaw"), root}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.Path)
		got[rel] = true
		if f.Kind != Transcript || f.Size != 3 || time.Since(f.ModTime) > time.Hour {
			t.Errorf("%s: %+v", rel, f)
		}
	}
	if len(files) != len(want) {
		t.Errorf("got %d files (duplicates?) %v, want %v", len(files), got, want)
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing %s", w)
		}
	}

	arch, err := Walk([]string{root}, Options{Kinds: []Kind{Transcript, Archive}})
	if err != nil {
		t.Fatal(err)
	}
	if len(arch) != len(want)+1 {
		t.Errorf("with archives: %d files, want %d", len(arch), len(want)+1)
	}
}

func TestWalkExplicitFiles(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "odd-name.txt")
	touch(t, p)
	files, err := Walk([]string{p}, Options{})
	if err != nil || len(files) != 1 || !files[0].Explicit {
		t.Fatalf("explicit file: %v %v", files, err)
	}
	lock := filepath.Join(root, "a.jsonl.lock")
	touch(t, lock)
	if _, err := Walk([]string{lock}, Options{}); err == nil {
		t.Fatal("a lock file named explicitly must be refused")
	}
	if _, err := Walk([]string{filepath.Join(root, "missing")}, Options{}); err == nil {
		t.Fatal("missing path must be an error")
	}
}
