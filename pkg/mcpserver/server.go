// Package mcpserver is ctxtool's MCP server (stdio, on the official Go
// SDK): an agent's tools for its own memory — search every past session
// (the recall index), scoped to the current project by default, with
// citations; read a cited message; this session's context size against
// its auto-compact point; this session's checkpoint. Claude Code and Codex
// run it through 'ctxtool install'; pi and OpenClaw can run `ctxtool mcp`
// as any MCP server.
//
// Every argument is untrusted: the query is capped, read only opens a
// file a search of this server cited, and a session id is a plain id.
package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/hooks"
	"github.com/ctxtool/ctxtool/pkg/pins"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// Limits on the tools' inputs and outputs.
const (
	MaxQuery   = 1000
	MaxResults = 50
	MaxRead    = 16 << 10
)

// Searcher is the recall index (recall.Index).
type Searcher interface {
	Search(ctx context.Context, query string, opts recall.SearchOptions) (*recall.Result, error)
}

// Options configure the server.
type Options struct {
	// Open opens the recall index (on the first search; nil: no search).
	Open func() (Searcher, error)
	// Cwd is the project the agent runs in (the server's working dir).
	Cwd      string
	StateDir string
	Home     string
	Version  string
	// AllProjects lets a search ask for every project (all_projects). The
	// agent's arguments are untrusted: only the user widens the scope
	// (config mcp.allProjects), never what the agent read.
	AllProjects bool
}

// Server holds what the tools share.
type Server struct {
	o     Options
	mu    sync.Mutex
	ix    Searcher
	cited map[string]bool // files a search cited (read opens only these)
	cwds  map[string]string
}

// New builds the MCP server with its four tools.
func New(o Options) (*mcp.Server, *Server) {
	s := &Server{o: o, cited: map[string]bool{}, cwds: map[string]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ctxtool", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "ctxtool remembers every past agent session. Use search to find what was said or decided before (it cites agent, project, session and line); read to see a cited message; context_size before a long task; checkpoint to recall this session's state after a compaction.",
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "Search past agent sessions (Claude Code, Codex, pi, OpenClaw) for what was said, decided or found. Scoped to the current project (all_projects: every project, where the user allowed it). Each hit cites agent, project, session file and line; pass them to read."}, s.search)
	mcp.AddTool(srv, &mcp.Tool{Name: "read", Description: "Read the message at a session file's line, as cited by search."}, s.read)
	mcp.AddTool(srv, &mcp.Tool{Name: "context_size", Description: "This session's context size against the point where the agent compacts by itself."}, s.contextSize)
	mcp.AddTool(srv, &mcp.Tool{Name: "checkpoint", Description: "This session's latest ctxtool checkpoint as resume text (what it was working on, decisions, files)."}, s.checkpoint)
	return srv, s
}

// SearchIn is the search tool's input.
type SearchIn struct {
	Query       string `json:"query" jsonschema:"words to look for"`
	AllProjects bool   `json:"all_projects,omitempty" jsonschema:"search every project, not only the current one (only where the user's config allows it)"`
	MaxResults  int    `json:"max_results,omitempty" jsonschema:"at most this many hits (default 8, at most 50)"`
}

// Citation says where a hit is.
type Citation struct {
	Agent   string `json:"agent"`
	Project string `json:"project"`
	Session string `json:"session"`
	Path    string `json:"path"`
	Line    int    `json:"line"`
	EndLine int    `json:"endLine"`
}

// SearchHit is one hit.
type SearchHit struct {
	Citation
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
	Cite    string  `json:"cite"`
}

// SearchOut is the search tool's output.
type SearchOut struct {
	Hits    []SearchHit `json:"hits"`
	Project string      `json:"project,omitempty"`
	Note    string      `json:"note,omitempty"`
}

func textResult(v any) *mcp.CallToolResult {
	data, _ := json.MarshalIndent(v, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}
}

func (s *Server) index() (Searcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil {
		return s.ix, nil
	}
	if s.o.Open == nil {
		return nil, errors.New("no recall index configured")
	}
	ix, err := s.o.Open()
	if err != nil {
		return nil, err
	}
	s.ix = ix
	return ix, nil
}

func (s *Server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchIn) (*mcp.CallToolResult, SearchOut, error) {
	q := strings.TrimSpace(in.Query)
	switch {
	case q == "":
		return nil, SearchOut{}, errors.New("query is empty")
	case len(q) > MaxQuery:
		return nil, SearchOut{}, fmt.Errorf("query is %d bytes; at most %d", len(q), MaxQuery)
	}
	n := in.MaxResults
	if n <= 0 {
		n = 8
	}
	n = min(n, MaxResults)
	ix, err := s.index()
	if err != nil {
		return nil, SearchOut{}, fmt.Errorf("recall index: %w (run 'ctxtool index ~/.claude/projects ~/.codex/sessions' first)", err)
	}
	project := ""
	if in.AllProjects && !s.o.AllProjects {
		return nil, SearchOut{}, errors.New("all_projects is off: searches stay in the current project unless the user sets mcp.allProjects: true in ctxtool's config")
	}
	if !in.AllProjects && s.o.Cwd != "" {
		project = pins.Root(s.o.Cwd)
	}
	res, err := ix.Search(ctx, q, recall.SearchOptions{MaxResults: n, Scope: recall.Scope{Project: project}})
	if err != nil {
		return nil, SearchOut{}, err
	}
	out := SearchOut{Project: project}
	for _, h := range res.Hits {
		c := s.cite(h)
		out.Hits = append(out.Hits, SearchHit{Citation: c, Score: h.Score, Snippet: h.Snippet,
			Cite: fmt.Sprintf("%s %s %s:%d", c.Agent, c.Project, c.Session, c.Line)})
		s.mu.Lock()
		s.cited[h.Path] = true
		s.mu.Unlock()
		if len(out.Hits) == n {
			break
		}
	}
	if len(out.Hits) == 0 {
		out.Note = "no hits"
		if project != "" {
			out.Note += " in " + project + " (all_projects: true searches every project)"
		}
	}
	if n := res.StaleNote(); n != "" {
		out.Note = strings.TrimPrefix(out.Note+"; "+n, "; ")
	}
	return textResult(out), out, nil
}

// cite names a hit's agent, project and session.
func (s *Server) cite(h recall.Hit) Citation {
	c := Citation{Path: h.Path, Line: h.StartLine, EndLine: h.EndLine, Session: strings.TrimSuffix(filepath.Base(h.Path), ".jsonl")}
	switch p := filepath.ToSlash(h.Path); {
	case strings.Contains(p, "/.claude/projects/"):
		c.Agent = hooks.ClaudeCode
	case strings.Contains(p, "/.codex/"):
		c.Agent = hooks.Codex
	case strings.Contains(p, "/.openclaw/"):
		c.Agent = "openclaw"
	default:
		c.Agent = "pi"
	}
	if cwd := s.sessionCwd(h.Path); cwd != "" {
		c.Project = pins.Root(cwd)
	}
	return c
}

// sessionCwd is the working directory a session recorded (the first
// "cwd" of its first lines: pi's header, Codex's session_meta, every
// Claude Code line), cached per file.
func (s *Server) sessionCwd(path string) string {
	s.mu.Lock()
	cwd, ok := s.cwds[path]
	s.mu.Unlock()
	if ok {
		return cwd
	}
	if f, err := os.Open(path); err == nil {
		r := bufio.NewReaderSize(f, 64<<10)
		for i := 0; i < 20 && cwd == ""; i++ {
			line, err := r.ReadSlice('\n')
			var l struct {
				Cwd     string `json:"cwd"`
				Payload struct {
					Cwd string `json:"cwd"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &l) == nil {
				cwd = l.Cwd
				if cwd == "" {
					cwd = l.Payload.Cwd
				}
			}
			if err != nil && err != bufio.ErrBufferFull {
				break
			}
		}
		f.Close()
	}
	s.mu.Lock()
	s.cwds[path] = cwd
	s.mu.Unlock()
	return cwd
}

// ReadIn is the read tool's input.
type ReadIn struct {
	Path string `json:"path" jsonschema:"a session file a search hit cited"`
	Line int    `json:"line" jsonschema:"the cited line (1-based)"`
}

// ReadOut is the message at a line.
type ReadOut struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

func (s *Server) read(_ context.Context, _ *mcp.CallToolRequest, in ReadIn) (*mcp.CallToolResult, ReadOut, error) {
	s.mu.Lock()
	ok := s.cited[in.Path]
	s.mu.Unlock()
	if !ok {
		return nil, ReadOut{}, fmt.Errorf("%q was not cited by a search of this server: search first, then read a hit's path and line", in.Path)
	}
	if in.Line < 1 {
		return nil, ReadOut{}, fmt.Errorf("line %d: lines start at 1", in.Line)
	}
	f, err := os.Open(in.Path)
	if err != nil {
		return nil, ReadOut{}, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	var line []byte
	for n := 1; ; n++ {
		l, err := r.ReadBytes('\n')
		if n == in.Line {
			line = l
			break
		}
		if err == io.EOF {
			return nil, ReadOut{}, fmt.Errorf("%s has %d lines, not %d", in.Path, n, in.Line)
		}
		if err != nil {
			return nil, ReadOut{}, err
		}
	}
	out := ReadOut{Path: in.Path, Line: in.Line, Text: secrets.Redact(hooks.LineText(line))}
	if len(out.Text) > MaxRead {
		out.Text, out.Truncated = out.Text[:MaxRead], true
	}
	return textResult(out), out, nil
}

// SessionIn names a session (default: the newest of the current project).
type SessionIn struct {
	Agent     string `json:"agent,omitempty" jsonschema:"claude-code or codex (default: the current project's newest Claude Code session, else Codex's)"`
	SessionID string `json:"session_id,omitempty" jsonschema:"the session (default: the newest session of the current project)"`
}

// currentSession finds the session's transcript: by id, or the newest
// transcript of the project. Claude Code keeps a project's sessions in
// ~/.claude/projects/<cwd with every non-alphanumeric as '-'>; Codex keeps
// all rollouts under ~/.codex/sessions/YYYY/MM/DD, each naming its cwd in
// its first line and its thread id at the end of its name.
func (s *Server) currentSession(in SessionIn) (agent, id, path string, err error) {
	if in.SessionID != "" && (strings.ContainsAny(in.SessionID, `/\`) || strings.Trim(in.SessionID, ".") == "") {
		return "", "", "", fmt.Errorf("session_id %q is not a plain id", in.SessionID)
	}
	switch in.Agent {
	case "", hooks.ClaudeCode:
		id, path, err = s.claudeSession(in.SessionID)
		if err == nil || in.Agent != "" {
			return hooks.ClaudeCode, id, path, err
		}
		if id2, path2, err2 := s.codexSession(in.SessionID); err2 == nil {
			return hooks.Codex, id2, path2, nil
		}
		return "", "", "", err
	case hooks.Codex:
		id, path, err = s.codexSession(in.SessionID)
		return hooks.Codex, id, path, err
	}
	return "", "", "", fmt.Errorf("agent %q: want claude-code or codex", in.Agent)
}

func (s *Server) claudeSession(want string) (id, path string, err error) {
	dir := filepath.Join(hooks.Roots(hooks.ClaudeCode, s.o.Home, nil)[0], claudeProjectDir(s.o.Cwd))
	if want != "" {
		return want, filepath.Join(dir, want+".jsonl"), nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", "", fmt.Errorf("no Claude Code sessions for %s (%w)", s.o.Cwd, err)
	}
	var best string
	var bestMod int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") && info.ModTime().UnixNano() > bestMod {
			best, bestMod = e.Name(), info.ModTime().UnixNano()
		}
	}
	if best == "" {
		return "", "", fmt.Errorf("no Claude Code sessions in %s", dir)
	}
	return strings.TrimSuffix(best, ".jsonl"), filepath.Join(dir, best), nil
}

// codexSession finds a rollout by thread id, or the newest one whose
// recorded cwd is in the current project.
func (s *Server) codexSession(want string) (id, path string, err error) {
	root := hooks.Roots(hooks.Codex, s.o.Home, nil)[0]
	project := pins.Root(s.o.Cwd)
	var bestMod int64
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		if want != "" {
			if strings.HasSuffix(name, want) {
				path, id = p, want
				return filepath.SkipAll
			}
			return nil
		}
		info, err := d.Info()
		if err != nil || info.ModTime().UnixNano() <= bestMod {
			return nil
		}
		if cwd := s.sessionCwd(p); cwd != "" && pins.Root(cwd) == project {
			path, bestMod = p, info.ModTime().UnixNano()
			id = name
			if len(name) >= 36 {
				id = name[len(name)-36:] // the thread id (a UUID)
			}
		}
		return nil
	})
	if path == "" {
		return "", "", fmt.Errorf("no Codex session of %s under %s", project, root)
	}
	return id, path, nil
}

func claudeProjectDir(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func (s *Server) contextSize(_ context.Context, _ *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, hooks.Gauge, error) {
	agent, id, path, err := s.currentSession(in)
	if err != nil {
		return nil, hooks.Gauge{}, err
	}
	h := &hooks.Handler{StateDir: s.o.StateDir, Home: s.o.Home}
	g, err := h.Status(&hooks.StatusInput{SessionID: id, TranscriptPath: path}, agent)
	if err != nil {
		return nil, hooks.Gauge{}, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: g.String()}}}, *g, nil
}

// CheckpointOut is the checkpoint tool's output.
type CheckpointOut struct {
	Session string `json:"session"`
	ID      string `json:"checkpointId,omitempty"`
	Text    string `json:"text"`
}

func (s *Server) checkpoint(_ context.Context, _ *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, CheckpointOut, error) {
	agent, id, _, err := s.currentSession(in)
	if err != nil {
		return nil, CheckpointOut{}, err
	}
	store := &checkpoint.Store{StateDir: s.o.StateDir}
	cp, _, err := store.Latest(hooks.SessionKey(agent, id))
	if err != nil {
		return nil, CheckpointOut{}, fmt.Errorf("no checkpoint of session %s yet (one is taken at each compaction; 'ctxtool checkpoint FILE' takes one now): %w", id, err)
	}
	out := CheckpointOut{Session: id, ID: cp.Meta.CheckpointID, Text: checkpoint.Render(cp, checkpoint.RenderOptions{})}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Text}}}, out, nil
}
