package recall_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/recalltest"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// crashChild, when set, makes the test binary index a directory instead of
// running tests (the process the crash test kills).
const crashChild = "CTXTOOL_RECALL_CRASH_CHILD"

func init() {
	loc := os.Getenv(crashChild)
	if loc == "" {
		return
	}
	ix, err := recall.OpenURL(loc, recall.WithBatchBytes(48<<10))
	if err == nil {
		dirs := filepath.SplitList(os.Getenv(crashChild + "_DIR"))
		var files []string
		for _, dir := range dirs {
			fs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
			files = append(files, fs...)
		}
		err = ix.IndexFiles(context.Background(), files, func(st recall.Stats, ferr error) {
			if ferr != nil {
				fmt.Fprintln(os.Stderr, ferr)
				os.Exit(1)
			}
		})
		if err == nil && os.Getenv(crashChild+"_PRUNE") != "" {
			_, err = ix.PruneUnder(context.Background(), dirs)
		}
		ix.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runCrashChild starts a process indexing the *.jsonl files of dir (a
// list of directories separated by os.PathListSeparator) into loc.
// env adds variables (crashChild+"_PRUNE=1": prune the directories'
// removed files after indexing).
func runCrashChild(t *testing.T, loc, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChild+"="+loc, crashChild+"_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func dump(t *testing.T, loc string) map[string][]string {
	t.Helper()
	ix := openAt(t, loc)
	d, err := recall.Dump(ix)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	return d
}

// sameRows fails the test when indexes a and b (named na and nb in the
// message) hold different files or chunks.
func sameRows(t *testing.T, a, b *recall.Index, na, nb string) {
	t.Helper()
	da, err := recall.Dump(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := recall.Dump(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(da, db) {
		t.Fatalf("rows differ:\n%s %v\n%s %v", na, da, nb, db)
	}
}

// A kill -9 at any moment of an indexing run leaves every file either as a
// clean index has it or not indexed at all (never half a file), nothing that
// blocks the next run, and the next run completes the index to exactly the
// clean one (issue 16: "one chunk short of a clean index" after a kill).
func TestKillDuringIndex(t *testing.T) { eachBackend(t, testKillDuringIndex) }

func testKillDuringIndex(t *testing.T, k kit) {
	dir := t.TempDir()
	for i := 0; i < 4; i++ {
		recalltest.Write(t, filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i)),
			recalltest.Options{Seed: uint64(70 + i), Turns: 20 + 10*i, Facts: recalltest.DefaultFacts(uint64(70 + i))})
	}
	cleanLoc := k.location(t)
	start := time.Now()
	if err := runCrashChild(t, cleanLoc, dir).Wait(); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	took := time.Since(start)
	clean := dump(t, cleanLoc)
	if len(clean) != 4 {
		t.Fatalf("clean index has %d files", len(clean))
	}

	// 30 moments on SQLite, the embedded default; PostgreSQL's per-file
	// transactions are slower to set up again, so 10 unless
	// CTXTOOL_SOAK=1 asks for the long run.
	moments := 30
	if k.name == "postgres" && os.Getenv("CTXTOOL_SOAK") == "" {
		moments = 10
	}
	loc := k.location(t)
	killed := 0
	for i := 0; i < moments; i++ {
		if i > 0 {
			if err := recall.Rebuild(loc); err != nil {
				t.Fatal(err)
			}
		}
		// Kill moments spread over a whole run (process start, opening and
		// creating the index, reading, inserting, committing, exiting).
		at := took * time.Duration(i+1) / time.Duration(moments+1)
		cmd := runCrashChild(t, loc, dir)
		time.Sleep(at)
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			killed++
		}
		cmd.Wait()
		// Every file is all or nothing.
		after := dump(t, loc)
		for p, chunks := range after {
			if !reflect.DeepEqual(chunks, clean[p]) {
				t.Fatalf("kill at %v: %s is half indexed: %d chunks, clean %d", at, filepath.Base(p), len(chunks), len(clean[p]))
			}
		}
		// The next run completes it exactly.
		if err := runCrashChild(t, loc, dir).Wait(); err != nil {
			t.Fatalf("kill at %v: the next run failed: %v", at, err)
		}
		if got := dump(t, loc); !reflect.DeepEqual(got, clean) {
			t.Fatalf("kill at %v (%d of %d files survived): completed index differs from a clean one: %v vs %v",
				at, len(after), len(clean), recall.SortedKeys(got), recall.SortedKeys(clean))
		}
	}
	t.Logf("%d kills over a %v run", killed, took)
}

// Four indexer processes started together over overlapping directories (in
// different orders) end with exactly the rows of one sequential run: no
// file indexed twice, no chunk lost or duplicated.
func TestConcurrentIndexers(t *testing.T) { eachBackend(t, testConcurrentIndexers) }

func testConcurrentIndexers(t *testing.T, k kit) {
	root := t.TempDir()
	var dirs []string
	for d := 0; d < 3; d++ {
		dir := filepath.Join(root, fmt.Sprintf("d%d", d))
		os.MkdirAll(dir, 0o755)
		dirs = append(dirs, dir)
		for i := 0; i < 4; i++ {
			seed := uint64(100 + 10*d + i)
			recalltest.Write(t, filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i)),
				recalltest.Options{Seed: seed, Turns: 40 + 20*i, Facts: recalltest.DefaultFacts(seed)})
		}
	}
	list := func(ds ...string) string { return strings.Join(ds, string(os.PathListSeparator)) }
	seqLoc := k.location(t)
	if err := runCrashChild(t, seqLoc, list(dirs...)).Wait(); err != nil {
		t.Fatal(err)
	}
	want := dump(t, seqLoc)
	if len(want) != 12 {
		t.Fatalf("sequential run indexed %d files", len(want))
	}
	loc := k.location(t)
	sets := []string{list(dirs[0], dirs[1]), list(dirs[1], dirs[2]), list(dirs[2], dirs[0]), list(dirs[2], dirs[1], dirs[0])}
	var cmds []*exec.Cmd
	for _, s := range sets {
		cmds = append(cmds, runCrashChild(t, loc, s))
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("indexer %d: %v", i, err)
		}
	}
	got := dump(t, loc)
	if !reflect.DeepEqual(got, want) {
		for _, p := range recall.SortedKeys(want) {
			if !reflect.DeepEqual(got[p], want[p]) {
				t.Errorf("%s: %d chunks after 4 concurrent indexers, %d after one sequential run", filepath.Base(p), len(got[p]), len(want[p]))
			}
		}
		t.Fatalf("files: %v", recall.SortedKeys(got))
	}
}

// Many processes opening a SQLite index that does not exist yet (cron jobs
// starting together on a fresh machine) all succeed: creating the file and
// switching it to WAL is one process's job at a time. Before, one of them
// could fail with SQLITE_BUSY or an I/O error (a rollback journal deleted
// under it) — seen in TestConcurrentIndexers under load.
func TestConcurrentFirstOpen(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for r := 0; r < rounds; r++ {
		loc := filepath.Join(t.TempDir(), "recall", "index.sqlite")
		var cmds []*exec.Cmd
		for i := 0; i < 12; i++ {
			cmds = append(cmds, runCrashChild(t, loc, ""))
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("round %d: opener %d: %v", r, i, err)
			}
		}
	}
}
