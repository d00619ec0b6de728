package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/hooks"
)

// runInstallHooks is install/uninstall/--check for Claude Code and Codex.
func runInstallHooks(ctx context.Context, o *InstallOptions) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	p, err := hooks.AgentPaths(o.Agent, home)
	if err != nil {
		return err
	}
	if o.Check {
		return checkHooks(ctx, o, p)
	}
	cs, err := hooks.Edit(o.Agent, p, o.Binary, o.Remove)
	if err != nil {
		return err
	}
	if !o.DryRun {
		if err := hooks.Apply(cs); err != nil {
			return err
		}
	}
	for _, c := range cs {
		if o.JSON {
			data, _ := json.Marshal(struct {
				hooks.Change
				DryRun bool `json:"dryRun"`
			}{c, o.DryRun})
			fmt.Fprintf(o.IO.Out, "%s\n", data)
			continue
		}
		would := ""
		if o.DryRun && c.Change != "unchanged" {
			would = "would "
		}
		line := fmt.Sprintf("%s%s %s (%s)", would, c.Change, c.Path, c.What)
		if c.Note != "" {
			line += ": " + c.Note
		}
		fmt.Fprintln(o.IO.Out, line)
	}
	if !o.DryRun && !o.Remove {
		fmt.Fprintf(o.IO.ErrOut, "%s reads them at its next start; 'ctxtool install %s --check' tries them now\n", o.Agent, o.Agent)
	}
	return nil
}

// checkHooks says whether the installed entries are current and whether
// the binary answers a hook and an MCP initialize.
func checkHooks(ctx context.Context, o *InstallOptions, p hooks.Paths) error {
	ok := true
	say := func(what string, good bool, detail string) {
		status := "ok"
		if !good {
			status, ok = "FAIL", false
		}
		if o.JSON {
			data, _ := json.Marshal(map[string]any{"what": what, "status": status, "detail": detail})
			fmt.Fprintf(o.IO.Out, "%s\n", data)
			return
		}
		fmt.Fprintf(o.IO.Out, "%-9s %-4s %s\n", what, status, detail)
	}
	cs, err := hooks.Edit(o.Agent, p, o.Binary, false)
	if err != nil {
		say("config", false, err.Error())
	} else {
		for _, c := range cs {
			say(c.What, c.Change == "unchanged", map[bool]string{true: c.Path + " is current", false: c.Path + " would " + c.Change + ": run ctxtool install " + o.Agent}[c.Change == "unchanged"])
		}
	}
	// A hook with a refused input must still exit 0 at once.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, o.Binary, "hook", "--agent", o.Agent)
	cmd.Stdin = strings.NewReader(`{"session_id":"ctxtool-check","hook_event_name":"Stop","transcript_path":"/nonexistent"}`)
	out, err := cmd.Output()
	say("hook", err == nil && len(out) == 0, fmt.Sprintf("%s hook answered a refused input with exit 0 and no output (err %v)", o.Binary, err))
	// The MCP server answers initialize (stdin stays open until it has).
	line, err := mcpInitialize(cctx, o.Binary)
	say("mcp", err == nil && strings.Contains(line, `"serverInfo"`), fmt.Sprintf("%s mcp answered initialize (err %v)", o.Binary, err))
	if !ok {
		return exitcode.New(exitcode.Runtime, fmt.Errorf("%s's ctxtool hooks do not work yet (see above)", o.Agent))
	}
	return nil
}

// mcpInitialize sends an MCP initialize to `binary mcp` and returns the
// first line it answers.
func mcpInitialize(ctx context.Context, binary string) (string, error) {
	cmd := exec.CommandContext(ctx, binary, "mcp")
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer cmd.Wait()
	defer in.Close()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ctxtool-check","version":"1"}}}`)
	line, err := bufio.NewReader(out).ReadString('\n')
	return line, err
}
