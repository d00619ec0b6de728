package agentkit

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// OpenClaw and its Node 24, pinned in pins.env and installed by
// install-openclaw.sh (which .ci/run calls; ../shared/tools/openclaw-store/
// gen-store.sh uses the same directory): the Gateway and its CLI, run
// offline against a fake chat-completions server.

// OpenClawInstall is an installed OpenClaw: Node 24 and openclaw.mjs.
type OpenClawInstall struct {
	Node, Entry string
}

// FindOpenClaw looks for the pinned OpenClaw in ${OPENCLAW_TOOLS:-
// ~/.cache/ctxtool-openclaw}; the error says how to get it.
func FindOpenClaw() (*OpenClawInstall, error) {
	dir := os.Getenv("OPENCLAW_TOOLS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "ctxtool-openclaw")
	}
	in := &OpenClawInstall{Node: filepath.Join(dir, "node24/node_modules/.bin/node"),
		Entry: filepath.Join(dir, "oc/node_modules/openclaw/openclaw.mjs")}
	script := filepath.Join(filepath.Dir(installScript()), "install-openclaw.sh")
	for _, f := range []string{in.Node, in.Entry} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("openclaw %s is not installed in %s: run %s (or .ci/run)", Pin("OPENCLAW_VERSION"), dir, script)
		}
	}
	if err := checkVersion("openclaw", filepath.Join(filepath.Dir(in.Entry), "package.json"), "OPENCLAW_VERSION", script); err != nil {
		return nil, err
	}
	return in, nil
}

// WriteCLIWrapper writes an executable `openclaw` into dir that runs this
// install's CLI (for `ctxtool install openclaw`, which finds it on PATH).
func (in *OpenClawInstall) WriteCLIWrapper(dir string) error {
	script := fmt.Sprintf("#!/bin/sh\nexec %q %q \"$@\"\n", in.Node, in.Entry)
	return os.WriteFile(filepath.Join(dir, "openclaw"), []byte(script), 0o755)
}

// FreePort is a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Gateway is a running OpenClaw Gateway.
type Gateway struct {
	in   *OpenClawInstall
	cmd  *exec.Cmd
	out  *lockedBuffer
	env  []string
	dir  string
	done chan struct{}
}

// StartGateway runs `openclaw gateway run` with env (HOME=… and the
// rest) and waits until it listens.
func StartGateway(in *OpenClawInstall, dir string, port int, env []string, timeout time.Duration) (*Gateway, error) {
	g := &Gateway{in: in, out: &lockedBuffer{}, env: env, dir: dir, done: make(chan struct{})}
	g.cmd = exec.Command(in.Node, in.Entry, "gateway", "run", "--allow-unconfigured", "--port", fmt.Sprint(port))
	g.cmd.Dir = dir
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { g.cmd.Wait(); close(g.done) }()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(g.out.String(), "http server listening") {
		select {
		case <-g.done:
			return nil, fmt.Errorf("the Gateway exited while starting:\n%s", tail(g.out.String(), 3000))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			g.Stop()
			return nil, fmt.Errorf("the Gateway did not listen within %v:\n%s", timeout, tail(g.out.String(), 3000))
		}
	}
	return g, nil
}

// Log is what the Gateway printed so far.
func (g *Gateway) Log() string { return g.out.String() }

// CLI runs `openclaw args…` against the Gateway (same HOME), returning
// stdout; the error carries stderr.
func (g *Gateway) CLI(timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, g.in.Node, append([]string{g.in.Entry}, args...)...)
	c.Dir, c.Env = g.dir, g.env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("openclaw %s: %w: %s%s", strings.Join(args, " "), err, tail(stderr.String(), 2000), tail(string(out), 2000))
	}
	return out, nil
}

// Stop ends the Gateway and whatever it started (its process group).
func (g *Gateway) Stop() {
	syscall.Kill(-g.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-g.done
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
