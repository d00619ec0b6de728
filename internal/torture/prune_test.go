package torture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
	"github.com/ctxtool/ctxtool/pkg/prune"
)

// pruneCrashPoints are the safefile.CrashPoint names on prune's and
// unarchive's write paths ("temp-written": the manifest).
var pruneCrashPoints = []string{"prune-temp-written", "prune-archive-renamed", "prune-original-moved", "temp-written",
	"lock-payload", "lock-held"}

var unarchiveCrashPoints = []string{"unarchive-temp-written", "unarchive-linked"}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// pruneHome is a generated home and the sha256 of each of its session
// files.
type pruneHome struct {
	*prunehome.Home
	sums map[string]string
}

func newPruneHome(t *testing.T) pruneHome {
	t.Helper()
	h := pruneHome{Home: prunehome.Build(t, t.TempDir(), 1), sums: map[string]string{}}
	for _, s := range h.Sessions {
		if s.Kind != prunehome.Store {
			data, _ := os.ReadFile(s.Path)
			h.sums[s.Path] = sum(data)
		}
	}
	return h
}

func (h pruneHome) roots() []string {
	return []string{filepath.Join(h.Dir, ".pi", "agent", "sessions"), filepath.Join(h.Dir, ".openclaw", "agents"),
		filepath.Join(h.Dir, ".claude", "projects"), filepath.Join(h.Dir, ".codex", "sessions")}
}

func (h pruneHome) run(t *testing.T, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "HOME="+h.Dir), env...)
	return cmd
}

// readable checks that every session can be read: its original bytes at
// its path, or an archive there that decompresses to them. archived, when
// set, requires the archive (and no original) for the sessions prune
// archives.
func (h pruneHome) readable(t *testing.T, when string, archived bool) {
	t.Helper()
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	for p, want := range h.sums {
		orig, errOrig := os.ReadFile(p)
		arch, errArch := os.ReadFile(p + prune.Suffix)
		var fromArch []byte
		if errArch == nil {
			var err error
			if fromArch, err = dec.DecodeAll(arch, nil); err != nil {
				t.Fatalf("%s: %s.zst does not decompress: %v", when, p, err)
			}
		}
		switch {
		case errOrig == nil && sum(orig) == want:
			if archived && h.kind(p) == prunehome.Archived {
				t.Fatalf("%s: %s not archived", when, p)
			}
		case errOrig == nil:
			t.Fatalf("%s: %s changed", when, p)
		case errArch == nil && sum(fromArch) == want:
		case errArch == nil:
			t.Fatalf("%s: %s is gone and its archive holds other bytes", when, p)
		default:
			t.Fatalf("%s: %s is gone and has no archive: the session is lost", when, p)
		}
	}
}

func (h pruneHome) kind(p string) prunehome.Kind {
	for _, s := range h.Sessions {
		if s.Path == p {
			return s.Kind
		}
	}
	return -1
}

// noLeftover: nothing a killed run left remains once a run has finished.
func (h pruneHome) noLeftover(t *testing.T, when string) {
	t.Helper()
	filepath.WalkDir(h.Dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && (strings.Contains(e.Name(), "ctxtool-tmp") || strings.Contains(e.Name(), ".ctxtool-pruning-") || strings.HasSuffix(e.Name(), ".lock")) {
			t.Fatalf("%s: %s left behind", when, p)
		}
		return nil
	})
}

// kill -9 at every write step of prune --apply and unarchive, and at
// random moments of prune --apply: every session stays readable (its
// original, or a verified archive), the next run finishes the job with
// nothing left behind, and unarchive then restores every file.
func TestPruneKillNine(t *testing.T) {
	random := 22 * soak()
	args := append([]string{"prune", "--apply", "--json"}, prunehome.Policy...)
	// How long an uninterrupted run takes: the timed kills sweep it.
	probe := newPruneHome(t)
	start := time.Now()
	if out, err := probe.run(t, nil, args...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	span := time.Since(start)
	probe.readable(t, "uninterrupted run", true)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var hit []string
	trials := 0
	trial := func(point string, delay time.Duration, unarchive bool) {
		trials++
		h := newPruneHome(t)
		when := "kill at " + point
		if point == "" {
			when = "kill after " + delay.String()
		}
		cmdArgs := args
		if unarchive {
			if out, err := h.run(t, nil, args...).CombinedOutput(); err != nil {
				t.Fatalf("prune before unarchive: %v\n%s", err, out)
			}
			cmdArgs = append([]string{"unarchive"}, h.roots()...)
		}
		var env []string
		if point != "" {
			env = []string{"CTXTOOL_CRASH_AT=" + point}
		}
		cmd := h.run(t, env, cmdArgs...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if point == "" {
			time.Sleep(delay)
			cmd.Process.Signal(syscall.SIGKILL)
		}
		cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); point != "" && ok && ws.Signaled() {
			hit = append(hit, point)
		}
		h.readable(t, when, false)
		// The next run is not blocked and finishes the job.
		if out, err := h.run(t, nil, cmdArgs...).CombinedOutput(); err != nil {
			t.Fatalf("%s: the next run failed: %v\n%s", when, err, out)
		}
		if !unarchive {
			h.readable(t, when+", then a full run", true)
		}
		h.noLeftover(t, when+", then a full run")
		if !unarchive && trials%4 != 1 {
			return // unarchive after every fourth kill: the runs are slow on a loaded machine
		}
		if out, err := h.run(t, nil, append([]string{"unarchive"}, h.roots()...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: unarchive: %v\n%s", when, err, out)
		}
		for p, want := range h.sums {
			if data, err := os.ReadFile(p); err != nil || sum(data) != want {
				t.Fatalf("%s: %s not restored byte for byte (%v)", when, p, err)
			}
		}
	}
	for _, p := range pruneCrashPoints {
		trial(p, 0, false)
	}
	for _, p := range unarchiveCrashPoints {
		trial(p, 0, true)
	}
	for i := 0; i < random; i++ {
		trial("", time.Duration(rng.Int63n(int64(span))), false)
	}
	t.Logf("%d trials (%d timed kills over %v); crash points reached: %v", trials, random, span.Round(time.Millisecond), hit)
	if len(hit) < len(pruneCrashPoints)+len(unarchiveCrashPoints)-1 {
		t.Errorf("only %d of the crash points were reached: %v", len(hit), hit)
	}
}

// A writer appending to a session (pi's way: open by path, creating the
// file, append, close; no lock) while prune --apply runs over and over with
// no idle protection loses nothing: every line it wrote is, exactly once
// and whole, in the session file or in the archive of what the file held
// before the writer's next line.
func TestPruneWithAppendingWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".pi", "agent", "sessions", "--home-dev-acme--")
	os.MkdirAll(dir, 0o755)
	session := copyTo(t, fixture("sample-v3.jsonl"), dir, "s.jsonl")
	t.Setenv("CTXTOOL_TORTURE_CREATE", "1")
	t.Setenv("CTXTOOL_TORTURE_PAUSES", "1")
	stop := startWriter(t, session)
	outcomes := map[string]int{}
	for i := 0; i < 20*soak(); i++ {
		r := ctxtool(t, "prune", "--apply", "--json", "--idle", "0", "--older-than", "0", "--keep-last", "0", "--max-total", "1", filepath.Dir(dir))
		if r.code != 0 && r.code != 4 {
			if _, err := os.Stat(session); err != nil && strings.Contains(r.stderr, "no session") {
				continue // archived; the writer is making the file again
			}
			stop()
			t.Fatalf("run %d: exit %d: %s%s", i, r.code, r.stdout, r.stderr)
		}
		for _, k := range []string{"appended to while being archived: left alone", "restored, archive dropped", `"action":"archived"`} {
			if strings.Contains(r.stdout, k) {
				outcomes[k]++
			}
		}
		time.Sleep(time.Duration(i%4) * 5 * time.Millisecond)
	}
	ids := stop()
	var all []byte
	if a, err := os.ReadFile(session + prune.Suffix); err == nil {
		dec, _ := zstd.NewReader(nil)
		d, err := dec.DecodeAll(a, nil)
		dec.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, d...)
	}
	if d, err := os.ReadFile(session); err == nil {
		all = append(all, d...)
	}
	count := map[string]int{}
	for i, l := range bytes.Split(bytes.TrimRight(all, "\n"), []byte("\n")) {
		if len(l) == 0 || l[0] != '{' || l[len(l)-1] != '}' {
			t.Fatalf("line %d torn: %.100q", i+1, l)
		}
		if j := bytes.Index(l, []byte(`"id":"w`)); j >= 0 {
			count[string(l[j+6:j+14])]++
		}
	}
	for _, id := range ids {
		if count[id] != 1 {
			t.Fatalf("writer entry %s found %d times (of %d written); outcomes %v", id, count[id], len(ids), outcomes)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("left: %v", left)
	}
	t.Logf("%d entries written during the runs; outcomes %v", len(ids), outcomes)
}
