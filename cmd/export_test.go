package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// export -o - writes the session to standard output, as no -o does; it
// used to create a file named "-" in the working directory.
func TestExportDashIsStandardOutput(t *testing.T) {
	cleanEnv(t)
	src, err := filepath.Abs(filepath.Join("..", "testdata", "sample-v3.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	plain, _ := runOK(t, "--state-dir", filepath.Join(dir, "state"), "export", src, "--to", "pi")
	dash, _ := runOK(t, "--state-dir", filepath.Join(dir, "state"), "export", src, "--to", "pi", "-o", "-")
	if dash == "" || dash != plain {
		t.Errorf("export -o - wrote %d bytes to stdout; without -o: %d", len(dash), len(plain))
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`export -o - created a file named "-"`)
	}
	if _, stderr, code := runCLI(t, "export", src, "--to", "pi", "-o", "-", "--json"); code != 2 || !strings.Contains(stderr, "--json needs -o FILE") {
		t.Errorf("export -o - --json: exit %d %q", code, stderr)
	}
}
