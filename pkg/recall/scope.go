package recall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// Scope. Every indexed file records where it comes from: its agent and its
// project. The agent is the program that wrote it — "pi", "claude-code",
// "codex", or "openclaw/<agent id>" for a session under an OpenClaw
// agents/<id>/ directory — and the project is the working directory its
// session header names (pi's and OpenClaw's cwd, Claude Code's and Codex's
// cwd as pkg/formats translates it; "" when it has none). A search can be
// narrowed to an agent, a project, a session and a time span; budget's
// semantic history narrows its search to the session's own agent and
// project, so one user's sessions never fill another's context (roll's note
// points the agent at its session and its project).

// Scope narrows a search. The zero Scope is every indexed session.
type Scope struct {
	// Agent: "pi", "claude-code", "codex", "openclaw/<id>", or "openclaw"
	// for every OpenClaw agent.
	Agent string
	// Project: sessions whose working directory is this directory or one
	// below it.
	Project string
	// Session: only this session file.
	Session string
	// Since and Until bound the chunks' timestamps (a chunk's time is its
	// first entry's; chunks without one are left out when either is set).
	Since, Until time.Time
}

// Empty reports whether the scope is every session.
func (s Scope) Empty() bool { return s == Scope{} }

// Origin is where a session comes from, as the index records it.
type Origin struct {
	Agent   string `json:"agent"`
	Project string `json:"project"`
}

// OriginOf is the origin of the session file path, read from its location
// and its first lines (the current session of budget and roll, which may
// not be indexed yet). A file it cannot read has no project.
func OriginOf(path string) Origin {
	abs, err := absPath(path)
	if err != nil {
		abs = path
	}
	src, err := openSource(abs)
	if err != nil {
		return Origin{Agent: agentOf(abs, formats.Pi)}
	}
	defer src.f.Close()
	return Origin{Agent: agentOf(abs, src.format), Project: cleanProject(scanCwd(src))}
}

// scanCwd reads the first lines of src for a working directory: a pi
// header's cwd (as scanLines reads it), or in another format the first
// "cwd" key with a string value (Claude Code writes it on every line,
// Codex in its session_meta).
func scanCwd(src source) string {
	br := bufio.NewReaderSize(io.NewSectionReader(src.f, 0, 1<<62), 64<<10)
	find := cwdValue
	if src.format == formats.Pi {
		find = headerCwd
	}
	for no := 1; no <= 64; no++ {
		l, err := br.ReadSlice('\n')
		if err != nil && err != io.EOF {
			return "" // a line longer than the buffer: not a header
		}
		if cwd, ok := find(l); ok {
			return cwd
		}
		if err == io.EOF {
			return ""
		}
	}
	return ""
}

// cwdValue is the string value of the first "cwd" key of a JSON line.
func cwdValue(l []byte) (string, bool) {
	i := bytes.Index(l, []byte(`"cwd":`))
	if i < 0 {
		return "", false
	}
	v := bytes.TrimLeft(l[i+len(`"cwd":`):], " ")
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	for j := 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			var s string
			if json.Unmarshal(v[:j+1], &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// agentOf names the agent of a session file at abs in format.
func agentOf(abs string, format formats.Format) string {
	// ~/.openclaw/agents/<id>/sessions/x.jsonl, …/agents/<id>/agent/x.sqlite#key
	p := filepath.ToSlash(sourceFile(abs))
	if i := strings.LastIndex(p, "/agents/"); i >= 0 {
		rest := p[i+len("/agents/"):]
		if j := strings.IndexByte(rest, '/'); j > 0 {
			if next := rest[j+1:]; strings.HasPrefix(next, "sessions/") || strings.HasPrefix(next, "agent/") {
				return "openclaw/" + rest[:j]
			}
		}
	}
	if a := format.Agent(); a != "" {
		return a
	}
	if format == formats.OpenClawSQLite {
		return "openclaw"
	}
	return "pi"
}

// cleanProject is a header's cwd as a project ("" stays "").
func cleanProject(cwd string) string {
	if cwd == "" {
		return ""
	}
	return filepath.Clean(cwd)
}

// headerCwd is the cwd of a session header line (ok=false when l is not
// one). Only the first lines of a file are asked.
func headerCwd(l []byte) (string, bool) {
	l = bytes.TrimSpace(l)
	if len(l) == 0 || l[0] != '{' || !bytes.Contains(l, []byte(`"type":"session"`)) && !bytes.Contains(l, []byte(`"type": "session"`)) {
		return "", false
	}
	// The cwd of a header as pi writes it, without a decoder's
	// allocations (this runs for every file indexed); anything else
	// (escapes, spacing) is decoded.
	if i := bytes.Index(l, []byte(`"cwd":"`)); i >= 0 {
		v := l[i+len(`"cwd":"`):]
		if j := bytes.IndexByte(v, '"'); j >= 0 && bytes.IndexByte(v[:j], '\\') < 0 {
			return string(v[:j]), true
		}
	}
	var h struct{ Type, Cwd string }
	if json.Unmarshal(l, &h) != nil || h.Type != "session" {
		return "", false
	}
	return h.Cwd, true
}

// filter is a Scope as the backends apply it.
type filter struct {
	fileID         int64 // -1: every file
	agent, project string
	since, until   int64 // unix ms, 0: unbounded
}

var noFilter = filter{fileID: -1}

// filter resolves a scope (the session to its file id).
func (ix *Index) filter(ctx context.Context, s Scope) (filter, error) {
	f := noFilter
	id, err := ix.sessionFileID(ctx, s.Session)
	if err != nil {
		return f, err
	}
	f.fileID = id
	f.agent = s.Agent
	if s.Project != "" {
		f.project = filepath.Clean(s.Project)
	}
	if !s.Since.IsZero() {
		f.since = s.Since.UnixMilli()
	}
	if !s.Until.IsZero() {
		f.until = s.Until.UnixMilli()
	}
	return f, nil
}

// empty reports whether f keeps every chunk.
func (f filter) empty() bool { return f == noFilter }

// conds are f's SQL conditions on chunks aliased c, with files table
// files; arg adds an argument and returns its placeholder.
func (f filter) conds(files string, arg func(any) string) []string {
	var out []string
	if f.fileID >= 0 {
		out = append(out, "c.file_id = "+arg(f.fileID))
	}
	var fc []string
	if f.agent != "" {
		fc = append(fc, "(agent = "+arg(f.agent)+" OR agent LIKE "+arg(likeEscape(f.agent)+"/%")+` ESCAPE '\')`)
	}
	if f.project != "" {
		prefix := strings.TrimSuffix(f.project, "/") + "/"
		fc = append(fc, "(project = "+arg(f.project)+" OR project LIKE "+arg(likeEscape(prefix)+"%")+` ESCAPE '\')`)
	}
	if len(fc) > 0 {
		out = append(out, "c.file_id IN (SELECT id FROM "+files+" WHERE "+strings.Join(fc, " AND ")+")")
	}
	if f.since > 0 {
		out = append(out, "c.ts >= "+arg(f.since))
	}
	if f.until > 0 {
		out = append(out, "c.ts > 0 AND c.ts < "+arg(f.until))
	}
	return out
}
