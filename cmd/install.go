package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/agentlink"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/hooks"
)

// InstallOptions are the inputs of `ctxtool install` and `ctxtool uninstall`.
type InstallOptions struct {
	IO     *IOStreams
	JSON   bool
	Agent  string
	Remove bool // uninstall
	DryRun bool
	Check  bool
	// Binary is the ctxtool binary the shim runs (default: this one).
	Binary string
	// AgentDir is pi's agent directory ($PI_CODING_AGENT_DIR or ~/.pi/agent).
	AgentDir string
	// OpenClaw is where OpenClaw is, for `install openclaw`.
	OpenClaw agentlink.OpenClawSetup
}

func (o *InstallOptions) readsNoConfig() {}

func newInstallCmd(f *Factory, runF func(*InstallOptions) error) *cobra.Command {
	return command(f, &InstallOptions{IO: f.IO}, runF, runInstall, &cobra.Command{
		Use:   "install pi|openclaw|claude-code|codex",
		Short: "Make an agent work with ctxtool: pi's extension, OpenClaw's plugin; Claude Code's and Codex's hooks, MCP server and gauge",
		Long: `Write ctxtool's pi extension to <pi agent dir>/extensions/ctxtool.ts (the agent
dir is $PI_CODING_AGENT_DIR, else ~/.pi/agent). From pi's next start, every
compaction — /compact, the threshold, an overflow — runs 'ctxtool agent
compact' with pi's preparation and stores ctxtool's summary in pi's session
(a compaction entry with fromHook: true). When ctxtool fails or takes longer
than 120 s (CTXTOOL_PI_TIMEOUT_MS), pi makes its own compaction and one line
starting "[ctxtool]" goes to pi's stderr.

The extension records this binary's absolute path (--binary to choose
another). Installing again changes nothing unless the binary changed; no
other file of pi's is read or written. --check changes nothing: it runs a
tiny compaction through the installed extension (with node, when found) and
through the binary it names, and says what works (exit 1 if something does
not).

claude-code and codex: write ctxtool's hooks (PreCompact, SessionStart,
PostCompact, UserPromptSubmit, Stop: 'ctxtool hook') into Claude Code's
~/.claude/settings.json or Codex's ~/.codex/hooks.json, its MCP server
('ctxtool mcp') into ~/.claude.json mcpServers or config.toml
[mcp_servers.ctxtool], and for Claude Code the statusLine ('ctxtool
statusline') when there is none. The files are edited as text: every other
key keeps its bytes, and uninstall gives back the file as it was.

` + installOpenClawHelp,
		Example: `  ctxtool install pi --dry-run
  ctxtool install pi
  ctxtool install pi --check
  ctxtool install claude-code --dry-run
  ctxtool install codex --check
  ctxtool install openclaw --dry-run
  ctxtool uninstall pi`,
		Args: cobra.ExactArgs(1),
	})
}

func newUninstallCmd(f *Factory, runF func(*InstallOptions) error) *cobra.Command {
	return command(f, &InstallOptions{IO: f.IO, Remove: true}, runF, runInstall, &cobra.Command{
		Use:     "uninstall pi|openclaw|claude-code|codex",
		Short:   "Remove what 'ctxtool install' wrote for pi, OpenClaw, Claude Code or Codex",
		Long:    `Remove <pi agent dir>/extensions/ctxtool.ts if ctxtool wrote it; pi compacts by itself again from its next start. For openclaw, remove the plugin's entry, load path and provider key, then its folder. For claude-code and codex, remove ctxtool's hooks, MCP server and statusLine, and nothing else.`,
		Example: `  ctxtool uninstall pi --dry-run`,
		Args:    cobra.ExactArgs(1),
	})
}

func (o *InstallOptions) flags(c *cobra.Command) {
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would change; change nothing")
	if !o.Remove {
		c.Flags().BoolVar(&o.Check, "check", false, "change nothing: run a tiny compaction through the installed extension and say what works")
		c.Flags().StringVar(&o.Binary, "binary", "", "the ctxtool binary the extension runs (default: this one)")
	}
}

func (o *InstallOptions) resolve(f *Factory, _ *config.Config, _ *cobra.Command, args []string) error {
	o.JSON = f.JSON
	o.Agent = args[0]
	if o.Check && o.DryRun {
		return fmt.Errorf("--check changes nothing already: leave out --dry-run")
	}
	var err error
	switch o.Agent {
	case "pi":
		if o.AgentDir, err = agentlink.PiAgentDir(); err != nil {
			return err
		}
	case "openclaw":
		if err := o.resolveOpenClaw(); err != nil {
			return err
		}
		if !o.Remove {
			// the rolling window is OpenClaw's context engine slot (the
			// configuration is read here only: pi's install needs none)
			cfg, err := f.Config()
			if err != nil {
				return fmt.Errorf("reading agent.window from ctxtool's configuration: %w", err)
			}
			o.OpenClaw.Window = cfg.Bool(nil, "agent.window")
		}
	case hooks.ClaudeCode, hooks.Codex:
	default:
		return fmt.Errorf("agent %q: ctxtool installs into pi, openclaw, claude-code or codex", o.Agent)
	}
	if o.Remove {
		return nil
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this binary's path (pass --binary): %w", err)
		}
	}
	if o.Binary, err = filepath.Abs(o.Binary); err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(o.Binary); err == nil {
		o.Binary = real
	}
	if st, err := os.Stat(o.Binary); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("--binary %s: not an executable file", o.Binary)
	}
	o.OpenClaw.Binary = o.Binary
	return nil
}

func runInstall(ctx context.Context, o *InstallOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Agent == hooks.ClaudeCode || o.Agent == hooks.Codex {
		return runInstallHooks(ctx, o)
	}
	if o.Agent == "openclaw" {
		return runInstallOpenClaw(ctx, o)
	}
	if o.Check {
		node, _ := exec.LookPath("node")
		lines, ok := agentlink.CheckPi(ctx, o.AgentDir, o.Binary, node)
		return printCheck(o, lines, ok, "pi's ctxtool extension")
	}
	var a agentlink.Action
	var err error
	if o.Remove {
		a, err = agentlink.UninstallPi(o.AgentDir, o.DryRun)
	} else {
		a, err = agentlink.InstallPi(o.AgentDir, o.Binary, o.DryRun)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		data, _ := json.Marshal(struct {
			agentlink.Action
			DryRun bool `json:"dryRun"`
		}{a, o.DryRun})
		fmt.Fprintf(o.IO.Out, "%s\n", data)
		return nil
	}
	would := ""
	if o.DryRun && a.Change != "unchanged" {
		would = "would "
	}
	switch a.Change {
	case "unchanged":
		if o.Remove {
			fmt.Fprintf(o.IO.Out, "unchanged %s (not installed)\n", a.Path)
		} else {
			fmt.Fprintf(o.IO.Out, "unchanged %s (runs %s)\n", a.Path, a.Binary)
		}
	case "remove":
		fmt.Fprintf(o.IO.Out, "%sremove %s\n", would, a.Path)
	default:
		fmt.Fprintf(o.IO.Out, "%s%s %s (runs %s)\n", would, a.Change, a.Path, a.Binary)
	}
	if !o.DryRun && !o.Remove && a.Change != "unchanged" {
		fmt.Fprintln(o.IO.ErrOut, "pi loads it at its next start; 'ctxtool install pi --check' tries it now")
	}
	return nil
}

// printCheck prints the lines of an install --check; a check that failed
// is exit 1, naming what.
func printCheck(o *InstallOptions, lines []agentlink.CheckLine, ok bool, what string) error {
	for _, l := range lines {
		if o.JSON {
			data, _ := json.Marshal(l)
			fmt.Fprintf(o.IO.Out, "%s\n", data)
			continue
		}
		fmt.Fprintf(o.IO.Out, "%-9s %-4s %s\n", l.What, l.Status, l.Detail)
	}
	if !ok {
		return exitcode.New(exitcode.Runtime, fmt.Errorf("%s does not work yet (see above)", what))
	}
	return nil
}
