// Package sources knows where the agents keep their sessions under a home
// directory, and which agent and project a session file belongs to, so that
// commands run with no paths (prune; later `ctxtool sources`) find every
// store and group what they find the way a user thinks of it: per agent,
// per project.
//
// Find only names directories; which files in them are sessions is
// pkg/walk's job. Inventory (`ctxtool sources`) walks them and reads each
// session's first bytes to say what ctxtool reads and what it cannot.
package sources

import (
	"os"
	"path/filepath"
	"strings"
)

// Agent names the program that wrote a session.
type Agent string

const (
	Pi         Agent = "pi"
	OpenClaw   Agent = "openclaw"
	ClaudeCode Agent = "claude-code"
	Codex      Agent = "codex"
	// Unknown is a session found outside every known layout.
	Unknown Agent = "other"
)

// Store is one directory an agent keeps sessions in.
type Store struct {
	Agent Agent
	// Dir is the directory (pi: ~/.pi/agent/sessions, OpenClaw: one
	// agent's sessions directory, Claude Code: ~/.claude/projects, Codex:
	// ~/.codex/sessions).
	Dir string
	// Database is OpenClaw's SQLite session store of this agent, when it
	// has one: read-only for ctxtool.
	Database string
}

// Looked names the places Find looks, for the message a command gives when
// it finds none.
const Looked = "~/.pi/agent/sessions, ~/.openclaw/agents, ~/.claude/projects, ~/.codex/sessions"

// Find lists the session stores that exist under home, in a fixed order
// (pi, OpenClaw agents by id, Claude Code, Codex). A missing store is not an
// error: most machines run one or two of the agents.
func Find(home string) []Store {
	var out []Store
	add := func(a Agent, dir string) {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			out = append(out, Store{Agent: a, Dir: dir})
		}
	}
	add(Pi, filepath.Join(home, ".pi", "agent", "sessions"))
	agents, _ := filepath.Glob(filepath.Join(home, ".openclaw", "agents", "*"))
	for _, a := range agents {
		dir := filepath.Join(a, "sessions")
		dbs, _ := filepath.Glob(filepath.Join(a, "agent", "*.sqlite"))
		st, err := os.Stat(dir)
		if (err != nil || !st.IsDir()) && len(dbs) == 0 {
			continue
		}
		s := Store{Agent: OpenClaw, Dir: dir}
		if len(dbs) > 0 {
			s.Database = dbs[0]
		}
		out = append(out, s)
	}
	add(ClaudeCode, filepath.Join(home, ".claude", "projects"))
	add(Codex, filepath.Join(home, ".codex", "sessions"))
	return out
}

// Paths are the directories and databases of stores, for pkg/walk.
func Paths(stores []Store) []string {
	var out []string
	for _, s := range stores {
		if st, err := os.Stat(s.Dir); err == nil && st.IsDir() {
			out = append(out, s.Dir)
		}
		if s.Database != "" {
			out = append(out, s.Database)
		}
	}
	return out
}

// Classify names the agent and project of a session file from its path
// alone: pi's project is its --<cwd>-- directory, OpenClaw's the agent id,
// Claude Code's its projects/<dir> (subagent transcripts belong to their
// parent's project), Codex keeps no project in its layout, so all its
// rollouts are one project, "sessions". Any other file is Unknown with its
// directory as project.
func Classify(path string) (Agent, string) {
	p := filepath.ToSlash(path)
	parts := strings.Split(p, "/")
	find := func(seq ...string) int {
		for i := 0; i+len(seq) <= len(parts); i++ {
			ok := true
			for j, s := range seq {
				if s != "*" && parts[i+j] != s {
					ok = false
					break
				}
			}
			if ok {
				return i
			}
		}
		return -1
	}
	if i := find(".openclaw", "agents", "*"); i >= 0 && i+3 < len(parts) {
		return OpenClaw, parts[i+2]
	}
	if i := find(".pi", "agent", "sessions"); i >= 0 && i+4 < len(parts) {
		return Pi, parts[i+3]
	}
	if i := find(".claude", "projects"); i >= 0 && i+3 < len(parts) {
		return ClaudeCode, parts[i+2]
	}
	if i := find(".codex", "sessions"); i >= 0 && i+2 < len(parts) {
		return Codex, "sessions"
	}
	dir := filepath.Dir(path)
	base := filepath.Base(dir)
	// Layouts copied elsewhere keep their shape: …/agents/<id>/sessions/x.jsonl.
	if base == "sessions" {
		if up := filepath.Dir(dir); filepath.Base(filepath.Dir(up)) == "agents" {
			return OpenClaw, filepath.Base(up)
		}
	}
	if strings.HasPrefix(base, "--") && strings.HasSuffix(base, "--") && len(base) > 4 {
		return Pi, base
	}
	return Unknown, dir
}

// Root is the store directory a session file lies in: pi's sessions
// directory, the OpenClaw agent's sessions directory, Claude Code's
// projects directory, Codex's sessions directory; for a file outside
// every known layout, its own directory.
func Root(path string) string {
	p := filepath.Clean(path)
	parts := strings.Split(filepath.ToSlash(p), "/")
	for i := len(parts) - 1; i >= 2; i-- {
		a, b, c := parts[i-2], parts[i-1], parts[i]
		switch {
		case a == ".pi" && b == "agent" && c == "sessions",
			b == "agents" && c != "" && i+1 < len(parts) && parts[i+1] == "sessions",
			b == ".claude" && c == "projects",
			b == ".codex" && c == "sessions":
			end := i
			if b == "agents" {
				end = i + 1
			}
			if end < len(parts)-1 {
				return filepath.FromSlash(strings.Join(parts[:end+1], "/"))
			}
		}
	}
	return filepath.Dir(p)
}
