package agentkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Agents are the installed Claude Code and Codex launchers.
type Agents struct {
	Claude, Codex string
}

func ccScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "install-cc-codex.sh")
}

// FindAgents returns the pinned claude and codex (pins.env),
// installing them with install-cc-codex.sh when install is true; otherwise
// it only looks in the cache. The error says how to get them.
func FindAgents(install bool) (*Agents, error) {
	if !install {
		dir := os.Getenv("CTXTOOL_AGENTS")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "ctxtool-agents")
		}
		a := &Agents{Claude: filepath.Join(dir, "claude/node_modules/.bin/claude"), Codex: filepath.Join(dir, "codex/node_modules/.bin/codex")}
		for _, f := range []string{a.Claude, a.Codex} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("claude %s / codex %s are not installed in %s: run %s (or .ci/run; CI=true installs them)", Pin("CLAUDE_VERSION"), Pin("CODEX_VERSION"), dir, ccScript())
			}
		}
		if err := checkVersion("claude", filepath.Join(dir, "claude/node_modules/@anthropic-ai/claude-code/package.json"), "CLAUDE_VERSION", ccScript()); err != nil {
			return nil, err
		}
		if err := checkVersion("codex", filepath.Join(dir, "codex/node_modules/@openai/codex/package.json"), "CODEX_VERSION", ccScript()); err != nil {
			return nil, err
		}
		return a, nil
	}
	var stderr bytes.Buffer
	cmd := exec.Command(ccScript())
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", ccScript(), err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("%s printed %q, want the claude and codex paths", ccScript(), out)
	}
	return &Agents{Claude: lines[0], Codex: lines[1]}, nil
}

// Run is one run of an agent's CLI.
type Run struct {
	Stdout, Stderr string
	Err            error
	Took           time.Duration
}

// RunAgent runs bin with args in dir under home (HOME, and the agent's
// offline environment), with a time limit.
func RunAgent(ctx context.Context, bin, home, dir string, env []string, limit time.Duration, args ...string) Run {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "NO_COLOR=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}, env...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	return Run{Stdout: out.String(), Stderr: errb.String(), Err: err, Took: time.Since(start)}
}
