// Package agentkit runs the real agents offline for end-to-end tests: pi
// 1.6.0 under Node 24, installed once, pinned, by install-pi.sh into a
// cache directory, driven over its RPC mode against a fake model server
// on 127.0.0.1 (internal/testkit/llmtest).
package agentkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// PiInstall is an installed pi: the Node 24 binary and pi's dist/cli.js.
type PiInstall struct {
	Node, CLI string
}

// installScript is install-pi.sh's path.
func installScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "install-pi.sh")
}

// FindPi returns the pinned pi, installing it with install-pi.sh when
// install is true; otherwise it only looks in the cache (a test outside CI
// does not download 200 MB). The error says how to get it.
func FindPi(install bool) (*PiInstall, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("node is not installed (install-pi.sh needs node and npm to fetch node@%s and pi %s)", Pin("NODE_VERSION"), Pin("PI_VERSION"))
	}
	if !install {
		dir := os.Getenv("CTXTOOL_AGENTS")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "ctxtool-agents")
		}
		p := &PiInstall{Node: filepath.Join(dir, "node24/node_modules/node/bin/node"),
			CLI: filepath.Join(dir, "pi/node_modules/@earendil-works/pi-coding-agent/dist/cli.js")}
		for _, f := range []string{p.Node, p.CLI} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("pi %s is not installed in %s: run %s (or .ci/run; CI=true installs it)", Pin("PI_VERSION"), dir, installScript())
			}
		}
		if err := checkVersion("pi", filepath.Join(filepath.Dir(filepath.Dir(p.CLI)), "package.json"), "PI_VERSION", installScript()); err != nil {
			return nil, err
		}
		if err := checkVersion("node", filepath.Join(dir, "node24/node_modules/node/package.json"), "NODE_VERSION", installScript()); err != nil {
			return nil, err
		}
		return p, nil
	}
	var stderr bytes.Buffer
	cmd := exec.Command(installScript())
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", installScript(), err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("%s printed %q, want the node and cli.js paths", installScript(), out)
	}
	return &PiInstall{Node: lines[0], CLI: lines[1]}, nil
}

// PiConfig sets up one pi run.
type PiConfig struct {
	// AgentDir is PI_CODING_AGENT_DIR (models.json, settings.json,
	// extensions/); SessionDir is --session-dir; Home is $HOME.
	AgentDir, SessionDir, Home string
	// Env adds environment variables (KEY=VALUE).
	Env []string
	// Tools keeps pi's built-in tools (read, bash, edit, write); by
	// default pi runs with --no-tools.
	Tools bool
	// ExtensionTools keeps the extensions' tools only (--no-builtin-tools).
	ExtensionTools bool
}

// WriteAgentDir writes models.json (provider "fake" at baseURL, model
// "fake-model" with the given window) and settings.json (compaction
// settings) into dir.
func WriteAgentDir(dir, baseURL string, contextWindow int, compaction map[string]any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	models := map[string]any{"providers": map[string]any{"fake": map[string]any{
		"baseUrl": baseURL, "api": "openai-completions", "apiKey": "fake-key",
		"models": []any{map[string]any{"id": "fake-model", "name": "Fake", "contextWindow": contextWindow, "maxTokens": 1024,
			"input": []string{"text"}, "reasoning": false}},
	}}}
	settings := map[string]any{"compaction": compaction}
	for name, v := range map[string]any{"models.json": models, "settings.json": settings} {
		data, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Pi is a running pi in RPC mode.
type Pi struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer

	mu     sync.Mutex
	events []map[string]any
	notify chan struct{}
	done   chan struct{}
	seq    int
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartPi starts pi in RPC mode with the fake provider, no tools.
func StartPi(in *PiInstall, c PiConfig) (*Pi, error) {
	args := []string{in.CLI, "--mode", "rpc", "--provider", "fake", "--model", "fake-model", "--session-dir", c.SessionDir}
	switch {
	case c.ExtensionTools:
		args = append(args, "--no-builtin-tools")
	case !c.Tools:
		args = append(args, "--no-tools")
	}
	cmd := exec.Command(in.Node, args...)
	cmd.Dir = c.Home
	env := []string{"PATH=" + filepath.Dir(in.Node) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + c.Home, "PI_CODING_AGENT_DIR=" + c.AgentDir, "PI_OFFLINE=1", "NO_COLOR=1"}
	cmd.Env = append(env, c.Env...)
	p := &Pi{cmd: cmd, stderr: &lockedBuffer{}, notify: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.done)
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var ev map[string]any
				if json.Unmarshal(line, &ev) == nil {
					p.mu.Lock()
					p.events = append(p.events, ev)
					p.mu.Unlock()
					select {
					case p.notify <- struct{}{}:
					default:
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return p, nil
}

// Stderr is what pi wrote on stderr so far.
func (p *Pi) Stderr() string { return p.stderr.String() }

// Events returns the records pi wrote on stdout so far.
func (p *Pi) Events() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]any(nil), p.events...)
}

// wait waits until match accepts a record at index >= from.
func (p *Pi) wait(from int, timeout time.Duration, what string, match func(map[string]any) bool) (map[string]any, error) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for i := from; i < len(p.events); i++ {
			if match(p.events[i]) {
				ev := p.events[i]
				p.mu.Unlock()
				return ev, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-p.done:
			return nil, fmt.Errorf("pi exited while waiting for %s; stderr:\n%s", what, p.Stderr())
		case <-deadline:
			return nil, fmt.Errorf("no %s from pi within %v; stderr:\n%s", what, timeout, p.Stderr())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Command sends one RPC command and waits for its response.
func (p *Pi) Command(cmd map[string]any, timeout time.Duration) (map[string]any, error) {
	p.mu.Lock()
	p.seq++
	id := fmt.Sprintf("t%d", p.seq)
	from := len(p.events)
	p.mu.Unlock()
	cmd["id"] = id
	data, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(data, '\n')); err != nil {
		return nil, err
	}
	resp, err := p.wait(from, timeout, fmt.Sprintf("response to %s", data), func(ev map[string]any) bool {
		return ev["type"] == "response" && ev["id"] == id
	})
	if err != nil {
		return nil, err
	}
	if ok, _ := resp["success"].(bool); !ok {
		return resp, fmt.Errorf("pi refused %s: %v", data, resp["error"])
	}
	return resp, nil
}

// Prompt sends a prompt and waits until pi has settled (the turn and any
// compaction it triggered are over).
func (p *Pi) Prompt(text string, timeout time.Duration) error {
	p.mu.Lock()
	from := len(p.events)
	p.mu.Unlock()
	if _, err := p.Command(map[string]any{"type": "prompt", "message": text}, timeout); err != nil {
		return err
	}
	_, err := p.wait(from, timeout, "agent_settled", func(ev map[string]any) bool { return ev["type"] == "agent_settled" })
	return err
}

// Close ends pi (stdin closed, then a kill after a grace period).
func (p *Pi) Close() error {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
	}
	return p.cmd.Wait()
}

// SessionFile is the one session file pi wrote under dir.
func SessionFile(dir string) (string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			found = append(found, path)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if len(found) != 1 {
		return "", fmt.Errorf("want one session file under %s, found %v", dir, found)
	}
	return found[0], nil
}

// Entries reads a pi JSONL file's lines as objects.
func Entries(file string) ([]map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e map[string]any
		if err := json.Unmarshal(l, &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}
