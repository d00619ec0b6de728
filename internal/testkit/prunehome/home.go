// Package prunehome builds a home directory holding every agent's session
// stores — pi, OpenClaw (JSONL and its SQLite store), Claude Code, Codex
// (with one of Codex's own .zst rollouts) — with sessions of mixed ages and
// sizes, the pi and OpenClaw ones carrying the same screenshots, for the
// tests of `ctxtool prune`. Each session knows its age, whether prune must
// leave it alone, and a string only it contains.
package prunehome

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

// Kind says what prune must do with a session under Policy (older than
// 30 days, keep the newest 1 per project, idle 1 hour).
type Kind int

const (
	// Archived: old enough, not the newest of its project.
	Archived Kind = iota
	// Kept: the newest of its project, or younger than 30 days.
	Kept
	// Live: written minutes ago (within the idle time).
	Live
	// Current: old, but OpenClaw's sessions.json names it current.
	Current
	// Foreign: Codex's own .zst rollout, left as it is.
	Foreign
	// Store: a session of OpenClaw's SQLite store, read-only.
	Store
)

// Session is one generated session.
type Session struct {
	Path  string
	Agent string
	Age   time.Duration
	Kind  Kind
	// Fact is a string that occurs in this session only (in a user
	// message), for search.
	Fact string
}

// Home is a generated home directory.
type Home struct {
	Dir      string
	Sessions []Session
}

// Policy is the prune flags the Kinds assume.
var Policy = []string{"--older-than", "30d", "--keep-last", "1", "--idle", "1h"}

const day = 24 * time.Hour

// Build writes the home into dir. scale multiplies the number of turns of
// the generated sessions (1 = small, a few hundred kB in all).
func Build(t testing.TB, dir string, scale int) *Home {
	t.Helper()
	if scale < 1 {
		scale = 1
	}
	h := &Home{Dir: dir}
	n := 0
	fact := func(agent string) string {
		n++
		return fmt.Sprintf("prunefact%s%03dzq", agent, n)
	}
	pi := func(project, name string, age time.Duration, k Kind, seed uint64, turns int) {
		p := filepath.Join(dir, ".pi", "agent", "sessions", project, name)
		h.piSession(t, p, "pi", fact("pi"), age, k, seed, turns*scale)
	}
	pi("--home-dev-acme--", "2026-01-01T10-00-00-000Z_a1.jsonl", 90*day, Archived, 1, 12)
	pi("--home-dev-acme--", "2026-02-01T10-00-00-000Z_a2.jsonl", 60*day, Archived, 2, 30)
	pi("--home-dev-acme--", "2026-03-01T10-00-00-000Z_a3.jsonl", 40*day, Archived, 3, 8)
	pi("--home-dev-acme--", "2026-04-01T10-00-00-000Z_a4.jsonl", 2*day, Kept, 4, 10)
	pi("--home-dev-web--", "2026-02-11T10-00-00-000Z_w1.jsonl", 45*day, Archived, 5, 14)
	pi("--home-dev-web--", "2026-04-11T10-00-00-000Z_w2.jsonl", 10*time.Minute, Live, 6, 6)
	oc := func(agent, name string, age time.Duration, k Kind, seed uint64, turns int) string {
		p := filepath.Join(dir, ".openclaw", "agents", agent, "sessions", name)
		h.piSession(t, p, "openclaw", fact("oc"), age, k, seed, turns*scale)
		return p
	}
	oc("main", "0a1b2c3d-1111-4aaa-8bbb-000000000001.jsonl", 100*day, Archived, 11, 20)
	cur := oc("main", "0a1b2c3d-1111-4aaa-8bbb-000000000002.jsonl", 50*day, Current, 12, 10)
	oc("main", "0a1b2c3d-1111-4aaa-8bbb-000000000003.jsonl", 1*day, Kept, 13, 8)
	oc("ops", "0a1b2c3d-2222-4aaa-8bbb-000000000004.jsonl", 35*day, Kept, 14, 6)
	writeSessionsJSON(t, filepath.Join(filepath.Dir(cur), "sessions.json"), cur)
	h.store(t, filepath.Join(dir, ".openclaw", "agents", "ops", "agent", "openclaw-agent.sqlite"), fact("store"))

	agent := func(name, p string, age time.Duration, k Kind, seed uint64, turns int,
		gen func(io.Writer, sessiongen.AgentOptions) (*sessiongen.AgentResult, error)) {
		f := fact(name)
		var b bytes.Buffer
		if _, err := gen(&b, sessiongen.AgentOptions{Seed: seed, Turns: turns * scale, Compactions: 1, Fact: f}); err != nil {
			t.Fatal(err)
		}
		h.write(t, p, b.Bytes(), name, f, age, k)
	}
	cc := filepath.Join(dir, ".claude", "projects", "-home-dev-acme")
	agent("claude-code", filepath.Join(cc, "3f2c9a1e-5b7d-4c1e-9f0a-2d6b8e4c7a01.jsonl"), 80*day, Archived, 21, 14, sessiongen.GenerateClaudeCode)
	agent("claude-code", filepath.Join(cc, "3f2c9a1e-5b7d-4c1e-9f0a-2d6b8e4c7a02.jsonl"), 31*day, Archived, 22, 8, sessiongen.GenerateClaudeCode)
	agent("claude-code", filepath.Join(cc, "3f2c9a1e-5b7d-4c1e-9f0a-2d6b8e4c7a03.jsonl"), 3*time.Hour, Kept, 23, 6, sessiongen.GenerateClaudeCode)
	cx := filepath.Join(dir, ".codex", "sessions", "2026")
	agent("codex", filepath.Join(cx, "01", "20", "rollout-2026-01-20T09-12-44-0195a7c2-4e1b-7d3f-9a60-5c2e8b1f4d01.jsonl"), 70*day, Archived, 31, 16, sessiongen.GenerateCodex)
	agent("codex", filepath.Join(cx, "01", "25", "rollout-2026-01-25T09-12-44-0195a7c2-4e1b-7d3f-9a60-5c2e8b1f4d02.jsonl"), 65*day, Archived, 32, 8, sessiongen.GenerateCodex)
	agent("codex", filepath.Join(cx, "03", "28", "rollout-2026-03-28T09-12-44-0195a7c2-4e1b-7d3f-9a60-5c2e8b1f4d03.jsonl"), 5*day, Kept, 33, 6, sessiongen.GenerateCodex)
	// Codex's own compressed rollout: read, never rewritten.
	f := fact("codexzst")
	var b bytes.Buffer
	if _, err := sessiongen.GenerateCodex(&b, sessiongen.AgentOptions{Seed: 34, Turns: 6, Fact: f}); err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	h.write(t, filepath.Join(cx, "01", "02", "rollout-2026-01-02T09-12-44-0195a7c2-4e1b-7d3f-9a60-5c2e8b1f4d00.jsonl.zst"),
		enc.EncodeAll(b.Bytes(), nil), "codex", f, 200*day, Foreign)
	return h
}

// piSession writes a generated pi session with two user screenshots and a
// read image (the same images in every session: variants follow the turn)
// and a user message holding fact.
func (h *Home) piSession(t testing.TB, path, agent, fact string, age time.Duration, k Kind, seed uint64, turns int) {
	t.Helper()
	var b bytes.Buffer
	if _, err := sessiongen.Generate(&b, sessiongen.Options{Seed: seed, Turns: turns, UserImages: 2, ToolImages: 1, Compactions: 1}); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	// A full-size screenshot (noise: no compressor shrinks it), the same
	// in every pi and OpenClaw session, as a pasted image is.
	shot := fmt.Sprintf(`{"type":"message","id":"g%07d","parentId":%q,"timestamp":"2026-04-01T09:59:00.000Z","message":{"role":"user","content":[{"type":"text","text":"this is what I see"},{"type":"image","data":%q,"mimeType":"image/png"}],"timestamp":1775037540000}}`+"\n", seed, lastID(data), Screenshot())
	data = append(data, shot...)
	last := lastID(data)
	line := fmt.Sprintf(`{"type":"message","id":"f%07d","parentId":%q,"timestamp":"2026-04-01T10:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"remember %s please"}],"timestamp":1775037600000}}`+"\n", seed, last, fact)
	h.write(t, path, append(data, line...), agent, fact, age, k)
}

// Screenshot is the base64 of a deterministic 160×120 PNG of noise
// (about 58 kB).
func Screenshot() string {
	screenshotOnce.Do(func() {
		img := image.NewNRGBA(image.Rect(0, 0, 160, 120))
		r := rand.New(rand.NewSource(42))
		for i := range img.Pix {
			img.Pix[i] = byte(r.Intn(256))
			if i%4 == 3 {
				img.Pix[i] = 0xff
			}
		}
		var b bytes.Buffer
		png.Encode(&b, img)
		screenshot = base64.StdEncoding.EncodeToString(b.Bytes())
	})
	return screenshot
}

var (
	screenshotOnce sync.Once
	screenshot     string
)

// lastID is the id of the last line of a pi session.
func lastID(data []byte) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	l := lines[len(lines)-1]
	i := bytes.Index(l, []byte(`"id":"`))
	if i < 0 {
		return ""
	}
	rest := l[i+6:]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

func (h *Home) write(t testing.TB, path string, data []byte, agent, fact string, age time.Duration, k Kind) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	SetAge(t, path, age)
	h.Sessions = append(h.Sessions, Session{Path: path, Agent: agent, Age: age, Kind: k, Fact: fact})
}

// SetAge sets a file's mtime to age ago.
func SetAge(t testing.TB, path string, age time.Duration) {
	t.Helper()
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// writeSessionsJSON names cur as the current transcript of agent:main:main.
func writeSessionsJSON(t testing.TB, path, cur string) {
	t.Helper()
	id := filepath.Base(cur)
	id = id[:len(id)-len(".jsonl")]
	data := fmt.Sprintf(`{"agent:main:main":{"sessionId":%q,"updatedAt":1770000000000,"sessionFile":%q}}`+"\n", id, cur)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// store writes a minimal OpenClaw SQLite store (the tables pkg/formats
// reads) holding one session with fact.
func (h *Home) store(t testing.TB, path, fact string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := sessiongen.Generate(&b, sessiongen.Options{Seed: 41, Turns: 4}); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(b.Bytes(), "\n"), []byte("\n"))
	lines = append(lines, []byte(fmt.Sprintf(`{"type":"message","id":"f0000041","parentId":%q,"timestamp":"2026-04-01T10:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"remember %s please"}],"timestamp":1775037600000}}`, lastID(b.Bytes()), fact)))
	WriteStore(t, path, "agent:ops:main", "sess-store-1", lines)
	SetAge(t, path, 300*day)
	h.Sessions = append(h.Sessions, Session{Path: path + "#agent:ops:main", Agent: "openclaw", Age: 300 * day, Kind: Store, Fact: fact})
}

// WriteStore writes a minimal OpenClaw SQLite store at path (OpenClaw's
// two tables) holding one session, key → sessionID, whose rows are lines
// (seq from 0).
func WriteStore(t testing.TB, path, key, sessionID string, lines [][]byte) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string, args ...any) {
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE session_nodes (session_key TEXT PRIMARY KEY, current_session_id TEXT)`)
	exec(`CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, event_zstd BLOB, PRIMARY KEY (session_id, seq))`)
	exec(`INSERT INTO session_nodes VALUES (?, ?)`, key, sessionID)
	for i, l := range lines {
		exec(`INSERT INTO transcript_events VALUES (?, ?, ?, NULL)`, sessionID, i, string(l))
	}
}
