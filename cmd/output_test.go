package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/iostreams"
	"github.com/ctxtool/ctxtool/pkg/models"
)

// Human output: paths under the working directory are shown relative,
// numbers are right-aligned, a table never overflows the terminal, and
// every gauge line names its file.
func TestEstimateHumanOutput(t *testing.T) {
	cleanEnv(t)
	src := testkit.ReadFile(t, "../testdata/sample-v3.jsonl")
	small := testkit.ReadFile(t, "../testdata/edge-cjk.jsonl")
	dir := t.TempDir()
	deep := filepath.Join(dir, "agents", "main", "sessions", strings.Repeat("very-long-session-name-", 4))
	os.MkdirAll(deep, 0o755)
	a, b := filepath.Join(deep, "a.jsonl"), filepath.Join(deep, "b.jsonl")
	os.WriteFile(a, src, 0o644)
	os.WriteFile(b, small, 0o644)
	t.Chdir(dir)

	io, _, out, _ := iostreams.Test()
	opts := &EstimateOptions{IO: io, Files: []string{a, b}, Size: estimate.Options{Method: "heuristic", Window: models.Settings{ContextWindow: 60000}}, Gauge: contextGauge}
	if err := runEstimate(opts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	rel := filepath.Join("agents", "main", "sessions", strings.Repeat("very-long-session-name-", 4), "a.jsonl")
	if !strings.HasPrefix(lines[1], rel+" ") || strings.Contains(out.String(), dir) {
		t.Fatalf("paths under the working directory must be relative:\n%s", out)
	}
	// TOKENS column: right-aligned, so the numbers end in the same column.
	hdr := lines[0]
	end := strings.Index(hdr, "TOKENS") + len("TOKENS")
	for _, l := range lines[1:3] {
		if l[end-1] < '0' || l[end-1] > '9' || l[end] != ' ' {
			t.Errorf("TOKENS not right-aligned at column %d:\n%s\n%s", end, hdr, l)
		}
	}
	// Gauge lines (≥ 70% of the window) name their file.
	var gauges int
	for _, l := range lines {
		if strings.Contains(l, "[Context:") {
			gauges++
			if !strings.HasPrefix(l, rel+": [Context:") {
				t.Errorf("gauge line without its file: %q", l)
			}
		}
	}
	if gauges != 1 {
		t.Errorf("want the one gauge of a.jsonl (105%%), got %d:\n%s", gauges, out)
	}

	// On an 80-column terminal no row is wider; the file name survives.
	io, _, out, _ = iostreams.Test()
	io.SetWidth(80)
	opts.IO = io
	if err := runEstimate(opts); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if strings.Contains(l, "[Context:") {
			continue
		}
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("row of %d columns on an 80-column terminal: %q", n, l)
		}
	}
	if !strings.Contains(out.String(), "…") || !strings.Contains(out.String(), "a.jsonl ") {
		t.Errorf("narrowed FILE column must keep the file name:\n%s", out)
	}
}

func TestDisplayPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for in, want := range map[string]string{
		filepath.Join(dir, "x", "s.jsonl"): filepath.Join("x", "s.jsonl"),
		"rel/s.jsonl":                      "rel/s.jsonl",
		"-":                                "-",
		"/elsewhere/s.jsonl":               "/elsewhere/s.jsonl",
	} {
		if got := displayPath(in); got != want {
			t.Errorf("displayPath(%q) = %q, want %q", in, got, want)
		}
	}
}
