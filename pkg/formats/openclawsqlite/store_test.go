package openclawsqlite_test

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/transcript"
	"github.com/ctxtool/ctxtool/pkg/walk"
)

// realStore builds a real OpenClaw store with the openclaw npm package
// (../shared/tools/openclaw-store/gen-store.sh: Node 24 from npm, then
// `openclaw doctor --session-sqlite import`). It skips where npm is
// missing, and fails under CI=true.
func realStore(t *testing.T, files ...string) string {
	t.Helper()
	script := filepath.Join(oracle.ModuleRoot(), "..", "shared", "tools", "openclaw-store", "gen-store.sh")
	_, errScript := os.Stat(script)
	_, errNpm := exec.LookPath("npm")
	if errScript != nil || errNpm != nil {
		msg := "real OpenClaw stores need npm and " + script + " (../shared beside the repository); install npm to run this"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	home := t.TempDir()
	cmd := exec.Command("bash", append([]string{script, home}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gen-store.sh: %v\n%s", err, stderr.String())
	}
	db := strings.TrimSpace(string(out))
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("gen-store.sh made no store: %v (%s)", err, out)
	}
	return db
}

func fileHash(t *testing.T, p string) [32]byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A real store, built by OpenClaw from pi sessions, reads back as exactly
// those sessions: same entries, context, heuristic and usage estimates,
// each entry citing its row (seq = line − 1); zstd rows included; the
// database file is left unchanged.
func TestRealOpenClawStore(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.jsonl")
	// Large tool results make OpenClaw store rows zstd-compressed.
	if _, err := sessiongen.GenerateFile(gen, sessiongen.Options{Seed: 14, Turns: 24, Compactions: 2,
		ToolResultBytes: 6000, Facts: 3}); err != nil {
		t.Fatal(err)
	}
	wild := filepath.Join(oracle.WildDir(t), "openclaw", "rs-anuo-0139686e-2compactions.jsonl")
	originals := []string{gen, wild}
	db := realStore(t, originals...)
	before := fileHash(t, db)

	sessions, err := formats.ListStore(db)
	if err != nil || len(sessions) != 2 {
		t.Fatalf("sessions %+v, %v; want 2", sessions, err)
	}
	var zrows int
	raw, _ := sql.Open("sqlite", "file:"+db+"?mode=ro")
	raw.QueryRow(`SELECT count(*) FROM transcript_events WHERE event_zstd IS NOT NULL`).Scan(&zrows)
	raw.Close()
	if zrows == 0 {
		t.Errorf("no zstd rows in the store: the event_zstd path is not exercised")
	}
	for i, orig := range originals {
		want, err := transcript.Load(orig)
		if err != nil {
			t.Fatal(err)
		}
		key := sessions[0].Key
		for _, s := range sessions {
			if s.SessionID == want.Header.ID {
				key = s.Key
			}
		}
		got, err := transcript.Load(formats.StorePath(db, key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if got.Format() != formats.OpenClawSQLite || !got.ReadOnly() {
			t.Errorf("%s: format %s", key, got.Format())
		}
		wc, gc := want.Context(), got.Context()
		if len(got.Entries) != len(want.Entries) || len(gc.Messages) != len(wc.Messages) ||
			gc.HeuristicTokens() != wc.HeuristicTokens() || gc.EstimateContextTokens() != wc.EstimateContextTokens() ||
			got.Leaf().ID() != want.Leaf().ID() {
			t.Errorf("file %d (%s): store gives %d entries, %d messages, %d tokens, usage %+v; the JSONL %d, %d, %d, %+v",
				i, key, len(got.Entries), len(gc.Messages), gc.HeuristicTokens(), gc.EstimateContextTokens(),
				len(want.Entries), len(wc.Messages), wc.HeuristicTokens(), wc.EstimateContextTokens())
		}
		for j, e := range got.Entries {
			if j < len(want.Entries) && e.Line != want.Entries[j].Line-1 {
				t.Errorf("%s: entry %s cites seq %d, want %d (line %d)", key, e.ID(), e.Line, want.Entries[j].Line-1, want.Entries[j].Line)
				break
			}
		}
		got.Close()
		want.Close()
	}
	// A store with several sessions needs a key, and the error lists them.
	if _, err := transcript.Load(db); err == nil || !strings.Contains(err.Error(), "agent:main:main") {
		t.Errorf("store without key: %v", err)
	}
	// Writes are refused; the walk finds both sessions in the agent home.
	var ro *formats.ReadOnlyError
	if err := transcript.CheckWritable(formats.StorePath(db, sessions[0].Key)); !errors.As(err, &ro) ||
		!strings.Contains(err.Error(), "Gateway") {
		t.Errorf("write check: %v", err)
	}
	home := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(db)))) // <home>/.openclaw
	found, err := walk.Walk([]string{filepath.Join(home, "agents")}, walk.Options{Kinds: []walk.Kind{walk.Transcript, walk.Archive}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range found {
		if f.Format == formats.OpenClawSQLite {
			n++
		}
	}
	if n != 2 {
		t.Errorf("walk found %d store sessions in %v", n, found)
	}
	if fileHash(t, db) != before {
		t.Errorf("reading the store changed the database file")
	}
}
