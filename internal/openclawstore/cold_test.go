// Package openclawstore_test checks ctxtool against OpenClaw cold archives
// that the real openclaw package writes (cold.sh beside this file).
package openclawstore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// coldArchives runs cold.sh (one Gateway run for all files) and returns
// the archive of each source file, matched by the session id in its
// header. It skips where npm, python3, faketime or ../shared are missing,
// and fails under CI=true.
func coldArchives(t *testing.T, files ...string) map[string]string {
	t.Helper()
	script := filepath.Join(oracle.ModuleRoot(), "internal", "openclawstore", "cold.sh")
	genStore := filepath.Join(oracle.ModuleRoot(), "..", "shared", "tools", "openclaw-store", "gen-store.sh")
	var missing []string
	if _, err := os.Stat(genStore); err != nil {
		missing = append(missing, genStore+" (../shared beside the repository)")
	}
	for _, bin := range []string{"npm", "python3", "faketime"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		msg := "real OpenClaw cold archives need " + strings.Join(missing, ", ") +
			": install npm, python3 and faketime (apt-get install faketime) to run this"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command("bash", append([]string{script, t.TempDir()}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cold.sh: %v\n%s", err, stderr.String())
	}
	byID := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, path, _ := strings.Cut(l, "\t")
		byID[id] = path
	}
	archives := map[string]string{}
	for _, f := range files {
		s, err := transcript.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		id := s.Header.ID
		s.Close()
		if byID[id] == "" {
			t.Fatalf("no archive of %s (session %s) in %s", f, id, out)
		}
		archives[f] = byID[id]
	}
	return archives
}

// run runs the ctxtool binary; it returns stdout, stderr and the exit code.
func run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestRealColdArchive: cold archives that OpenClaw's Gateway writes (from a
// generated pi session whose large tool results make zstd rows in the store,
// and from a real OpenClaw session) read as the sessions they were made
// from: same heuristic estimate, the same lint findings (cited by seq =
// line − 1), a planted phrase found by index+search with a citation of its
// row, and write commands refuse them (exit 1, the file unchanged).
func TestRealColdArchive(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.jsonl")
	res, err := sessiongen.GenerateFile(gen, sessiongen.Options{Seed: 14, Turns: 24, Compactions: 2,
		ToolResultBytes: 6000, Facts: 3})
	if err != nil {
		t.Fatal(err)
	}
	wild := filepath.Join(oracle.WildDir(t), "openclaw", "rs-anuo-0139686e-2compactions.jsonl")
	archives := coldArchives(t, gen, wild)
	bin := filepath.Join(dir, "ctxtool")
	if out, err := exec.Command("go", "build", "-o", bin, oracle.ModuleRoot()).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Run("estimate", func(t *testing.T) {
		for src, a := range archives {
			want, got := estimate(t, bin, src), estimate(t, bin, a)
			if got != want {
				t.Errorf("%s: archive estimates %+v, the JSONL %+v", filepath.Base(src), got, want)
			}
		}
	})
	t.Run("lint", func(t *testing.T) {
		for src, a := range archives {
			want, got := lint(t, bin, src, 1), lint(t, bin, a, 0)
			if got != want {
				t.Errorf("%s: archive lint\n%s\nthe JSONL's\n%s", filepath.Base(src), got, want)
			}
		}
	})
	t.Run("search", func(t *testing.T) { searchPlanted(t, bin, archives[gen], res.Facts[0]) })
	t.Run("writes refused", func(t *testing.T) {
		for _, a := range archives {
			refuseWrites(t, bin, a)
		}
	})
}

type estimateFigures struct {
	Entries         int            `json:"entries"`
	ContextMessages int            `json:"contextMessages"`
	Compactions     int            `json:"compactions"`
	LeafID          string         `json:"leafId"`
	Tokens          int            `json:"tokens"`
	ByRole          map[string]int `json:"byRole"`
	MalformedLines  []any          `json:"malformedLines"`
}

// estimate is `estimate --tokenizer heuristic --json` on one file, the
// figures that do not name the file or a line; byRole as text so that the
// struct compares with ==.
func estimate(t *testing.T, bin, file string) string {
	out, stderr, code := run(t, bin, "estimate", "--tokenizer", "heuristic", "--json", file)
	if code != 0 {
		t.Fatalf("estimate %s: exit %d: %s", file, code, stderr)
	}
	var f estimateFigures
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("estimate %s: %v: %s", file, err, out)
	}
	if f.Tokens == 0 || f.Entries == 0 {
		t.Errorf("estimate %s: nothing read: %s", file, out)
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// lint is `lint --json` on one file: its findings with the line shifted by
// shift (an archive cites seq, its JSONL line − 1) and without the file.
func lint(t *testing.T, bin, file string, shift int) string {
	out, stderr, code := run(t, bin, "lint", "--json", file)
	if code != 0 {
		t.Fatalf("lint %s: exit %d: %s", file, code, stderr)
	}
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue // a file without findings prints nothing
		}
		var f struct {
			Line     int    `json:"line"`
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("lint %s: %v: %s", file, err, l)
		}
		fmt.Fprintf(&b, "%d %s %s\n", f.Line-shift, f.Severity, f.Rule)
	}
	return b.String()
}

// searchPlanted indexes the archive and searches for a fact planted in its
// source: a hit must cite the archive and the fact's row (seq = line − 1).
func searchPlanted(t *testing.T, bin, archive string, fact sessiongen.PlantedFact) {
	state := t.TempDir()
	if _, stderr, code := run(t, bin, "--state-dir", state, "index", archive); code != 0 {
		t.Fatalf("index: exit %d: %s", code, stderr)
	}
	out, stderr, code := run(t, bin, "--state-dir", state, "--json", "search", "--max-results", "20", fact.Value)
	if code != 0 {
		t.Fatalf("search %q: exit %d: %s", fact.Value, code, stderr)
	}
	seq := fact.Line - 1
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var h struct {
			Path      string `json:"path"`
			StartLine int    `json:"startLine"`
			EndLine   int    `json:"endLine"`
		}
		if json.Unmarshal([]byte(l), &h) == nil && h.Path == archive && h.StartLine <= seq && seq <= h.EndLine {
			return
		}
	}
	t.Errorf("search %q: no hit citing seq %d of %s in\n%s", fact.Value, seq, archive, out)
}

// refuseWrites: the write commands refuse the archive — compact with exit
// 1 as for any read-only format, roll with exit 2 as for any archive (it
// writes only primary transcripts) — and leave it byte-identical, with
// nothing written beside it. (restore --append needs a checkpoint first,
// and checkpoint fails on every *.jsonl.zst: it hashes the compressed file
// at offsets of the decompressed one.)
func refuseWrites(t *testing.T, bin, archive string) {
	before, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"compact"}, 1, "does not write"},
		{[]string{"compact", "--truncate"}, 1, "does not write"},
		{[]string{"roll", "--trigger", "0.0000001", "--target-utilization", "0.00000001", "--min-keep-messages", "1"}, 2, "is not rolled"},
	} {
		out, stderr, code := run(t, bin, append(append([]string{"--state-dir", state}, c.args...), archive)...)
		if code != c.code || !strings.Contains(out+stderr, c.says) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, stderr, c.code, c.says)
		}
	}
	after, _ := os.ReadFile(archive)
	if !bytes.Equal(before, after) {
		t.Errorf("%s changed", archive)
	}
	if beside, _ := filepath.Glob(archive + ".*"); len(beside) > 0 {
		t.Errorf("files written beside %s: %v", archive, beside)
	}
}
