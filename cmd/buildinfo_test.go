package cmd

import (
	"os"
	"path/filepath"

	"bytes"
	"github.com/ctxtool/ctxtool/pkg/config"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLineNamesTheBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs.revision", Value: "167ff7f0123456789abcdef"},
		{Key: "vcs.time", Value: "2026-12-02T02:40:00Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	dirty := append(append([]debug.BuildSetting(nil), vcs[:2]...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	cases := []struct {
		name, release string
		info          *debug.BuildInfo
		want          string
	}{
		{"no build info", defaultVersion, nil, defaultVersion},
		{"git build", defaultVersion, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261202024000-167ff7f01234"}, Settings: vcs},
			defaultVersion + " (commit 167ff7f01234, committed 2026-12-02T02:40:00Z, go1.26.8)"},
		{"uncommitted changes", defaultVersion, &debug.BuildInfo{GoVersion: "go1.26.8", Settings: dirty},
			defaultVersion + " (commit 167ff7f01234+dirty, committed 2026-12-02T02:40:00Z, go1.26.8)"},
		{"go install @version", defaultVersion, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"}},
			"0.3.1 (go1.26.8)"},
		{"release set by ldflags wins", "1.0.0", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}, Settings: vcs},
			"1.0.0 (commit 167ff7f01234, committed 2026-12-02T02:40:00Z)"},
	}
	for _, c := range cases {
		if got := versionLine(c.release, c.info, c.info != nil); got != c.want {
			t.Errorf("%s: versionLine = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestVersionFlagPrintsTheBuild(t *testing.T) {
	var out bytes.Buffer
	root, _ := NewRootCmd(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "ctxtool version " + buildVersion() + "\n"; out.String() != want {
		t.Fatalf("--version printed %q, want %q", out.String(), want)
	}
	if !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version does not name the Go version of the build: %q", out.String())
	}
}

// The example config printed by the binary is the one the repository
// ships and it loads as a config file: a binary install is not left
// pointing at a file it does not have.
func TestConfigExampleIsTheShippedFile(t *testing.T) {
	var out bytes.Buffer
	root, _ := NewRootCmd(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	root.SetArgs([]string{"--config", "/nonexistent/broken.yaml", "config", "example"})
	if err := root.Execute(); err != nil {
		t.Fatalf("config example with a broken --config: %v", err)
	}
	shipped, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(shipped) {
		t.Fatalf("config example differs from config.example.yaml (%d vs %d bytes)", out.Len(), len(shipped))
	}
	file := filepath.Join(t.TempDir(), "ctxtool.yaml")
	if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(file, ""); err != nil {
		t.Fatalf("the printed example does not load: %v", err)
	}
}

// `man --dir` writes a page for the root and for every command, each
// carrying the command's own help text, so a binary install has man pages.
func TestManWritesAPagePerCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	var out bytes.Buffer
	root, _ := NewRootCmd(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	root.SetArgs([]string{"man", "--dir", dir})
	if err := root.Execute(); err != nil {
		t.Fatalf("man: %v", err)
	}
	page := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("no page %s: %v", name, err)
		}
		return string(b)
	}
	if p := page("ctxtool.1"); !strings.Contains(p, `.TH "CTXTOOL" "1"`) {
		t.Errorf("ctxtool.1 is not a section-1 man page:\n%.200s", p)
	}
	n := 0
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		n++
		p := page("ctxtool-" + c.Name() + ".1")
		if want := strings.Fields(c.Short)[0]; !strings.Contains(p, want) {
			t.Errorf("ctxtool-%s.1 lacks its help text (%q)", c.Name(), c.Short)
		}
	}
	if n < 12 {
		t.Fatalf("only %d commands found: the tree is not the one NewRootCmd builds", n)
	}
}
