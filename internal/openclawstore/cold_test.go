// Package openclawstore_test checks ctxtool against OpenClaw cold archives
// that the real openclaw package writes (cold.sh beside this file).
package openclawstore_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/walk"
	_ "modernc.org/sqlite" // to make a backup's copy of a store
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
		s := testkit.Load(t, f)
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
	res := sessiongen.Write(t, gen, sessiongen.Options{Seed: 14, Turns: 24, Compactions: 2,
		ToolResultBytes: 6000, Facts: 3})
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
	t.Run("store", func(t *testing.T) { coldStore(t, bin, archives) })
}

// coldStore: the store whose sessions went cold reads each of them, by
// session id, as the session it was made from (its rows are gone from
// transcript_events: the history is the archive), also from a backup copy
// that keeps the archives inside the database; a missing or altered archive
// is an error, never a shorter history; and a walk of the agent's
// directory lists each cold history once (the store session, not also its
// archive file).
func coldStore(t *testing.T, bin string, archives map[string]string) {
	var agentDir string
	ids := map[string]string{}
	for src, a := range archives {
		agentDir = filepath.Dir(filepath.Dir(filepath.Dir(a))) // <agent>/sessions/cold/<name>
		s := testkit.Load(t, src)
		ids[src] = s.Header.ID
		s.Close()
	}
	dbs, _ := filepath.Glob(filepath.Join(agentDir, "agent", "*.sqlite"))
	if len(dbs) != 1 {
		t.Fatalf("stores in %s: %v", agentDir, dbs)
	}
	db := dbs[0]
	for src, id := range ids {
		if want, got := estimate(t, bin, src), estimate(t, bin, db+"#"+id); got != want {
			t.Errorf("%s: the cold store session estimates %+v, the JSONL %+v", filepath.Base(src), got, want)
		}
	}

	files, err := walk.Walk([]string{agentDir}, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}})
	if err != nil {
		t.Fatal(err)
	}
	var stores int
	for _, f := range files {
		if strings.Contains(f.Path, string(filepath.Separator)+"cold"+string(filepath.Separator)) {
			t.Errorf("walk lists the cold archive %s beside the store session that reads it", f.Path)
		}
		if f.Format == formats.OpenClawSQLite {
			stores++
		}
	}
	if stores != len(ids) {
		t.Errorf("walk lists %d store sessions, want %d: %+v", stores, len(ids), files)
	}

	// A copy of the store alone: the archive files are missing.
	lone := copyStore(t, db)
	for _, id := range ids {
		_, stderr, code := run(t, bin, "estimate", lone+"#"+id)
		if code != 1 || !strings.Contains(stderr, "cold storage") || !strings.Contains(stderr, "missing") {
			t.Errorf("store without its cold/ files: exit %d, stderr %q; want exit 1 naming the missing archive", code, stderr)
		}
	}

	// A backup's copy: each archive inside its row (storage "sqlite").
	backup := copyStore(t, db)
	conn, err := sql.Open("sqlite", backup)
	if err != nil {
		t.Fatal(err)
	}
	for src, id := range ids {
		blob := testkit.ReadFile(t, archives[src])
		if _, err := conn.Exec(`UPDATE session_transcript_cold_archives SET storage = 'sqlite', archive_blob = ?
			WHERE session_id = ?`, blob, id); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	for src, id := range ids {
		if want, got := estimate(t, bin, src), estimate(t, bin, backup+"#"+id); got != want {
			t.Errorf("%s: the backup's session estimates %+v, the JSONL %+v", filepath.Base(src), got, want)
		}
	}

	// An archive file that is not the one recorded.
	altered := copyStore(t, db)
	for src, id := range ids {
		a := archives[src]
		b, _ := os.ReadFile(a)
		dst := filepath.Join(filepath.Dir(filepath.Dir(altered)), "sessions", "cold", filepath.Base(a))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		testkit.WriteFile(t, dst, append(b, 0), 0o644)
		_, stderr, code := run(t, bin, "estimate", altered+"#"+id)
		if code != 1 || !strings.Contains(stderr, "does not match") {
			t.Errorf("altered archive: exit %d, stderr %q; want exit 1 saying it does not match", code, stderr)
		}
	}
}

// copyStore copies a store (with its WAL) to <tmp>/agents/main/agent/.
func copyStore(t *testing.T, db string) string {
	dir := filepath.Join(t.TempDir(), "agents", "main", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(db + suffix)
		if err != nil {
			if suffix != "" && os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		testkit.WriteFile(t, filepath.Join(dir, filepath.Base(db)+suffix), b, 0o644)
	}
	return filepath.Join(dir, filepath.Base(db))
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

// refuseWrites: checkpoint reads the archive (its state goes to the state
// directory), and the write commands refuse it with exit 1, as any
// read-only transcript — compact, roll (it writes only primary
// transcripts), restore --append — and leave it byte-identical, with
// nothing written beside it.
func refuseWrites(t *testing.T, bin, archive string) {
	before := testkit.ReadFile(t, archive)
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"checkpoint", "--force"}, 0, ""},
		{[]string{"restore", "--append"}, 1, "does not write"},
		{[]string{"compact"}, 1, "does not write"},
		{[]string{"compact", "--truncate"}, 1, "does not write"},
		{[]string{"roll", "--trigger", "0.0000001", "--target-utilization", "0.00000001", "--min-keep-messages", "1"}, 1, "not rolled (archived transcript)"},
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
