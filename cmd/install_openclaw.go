package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/agentlink"
)

const installOpenClawHelp = `'install openclaw' writes ctxtool's OpenClaw plugin to
<state dir>/ctxtool-plugin ($OPENCLAW_STATE_DIR, else ~/.openclaw) and, with
one 'openclaw config patch' (OpenClaw's CLI on the PATH), sets
plugins.load.paths, plugins.entries.ctxtool and
agents.defaults.compaction.provider = "ctxtool"; every other key stays as it
is (OpenClaw's CLI rewrites the file and keeps openclaw.json.bak). From the
Gateway's next start every compaction's summary is ctxtool's, and before
each compaction ctxtool flushes memory/YYYY-MM-DD.md and takes a checkpoint.
When ctxtool fails or takes longer than 120 s (CTXTOOL_OPENCLAW_TIMEOUT_MS),
OpenClaw summarises by itself and logs one "[ctxtool]" line. With agent.window
on in ctxtool's config, install also sets plugins.slots.contextEngine =
"ctxtool": the plugin's context engine keeps every request under
compaction.rolling.targetUtilization of the window and its recall tool finds
what was left out (install again after turning agent.window on or off).`

// resolveOpenClaw finds OpenClaw's state directory, config file and CLI.
func (o *InstallOptions) resolveOpenClaw() error {
	state, err := agentlink.OpenClawStateDir()
	if err != nil {
		return err
	}
	o.OpenClaw = agentlink.OpenClawSetup{StateDir: state, ConfigPath: agentlink.OpenClawConfigPath(state), DryRun: o.DryRun}
	if cli, err := exec.LookPath("openclaw"); err == nil {
		o.OpenClaw.CLI = func(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
			c := exec.CommandContext(ctx, cli, args...)
			if stdin != nil {
				c.Stdin = bytes.NewReader(stdin)
			}
			var stderr bytes.Buffer
			c.Stderr = &stderr
			out, err := c.Output()
			if err != nil {
				msg := strings.TrimSpace(stderr.String())
				if msg == "" {
					msg = strings.TrimSpace(string(out))
				}
				return out, fmt.Errorf("%w: %s", err, msg)
			}
			return out, nil
		}
	}
	return nil
}

func runInstallOpenClaw(ctx context.Context, o *InstallOptions) error {
	if o.Check {
		node, _ := exec.LookPath("node")
		lines, ok := agentlink.CheckOpenClaw(ctx, o.OpenClaw, node)
		return printCheck(o, lines, ok, "OpenClaw's ctxtool plugin")
	}
	var res *agentlink.OpenClawResult
	var err error
	if o.Remove {
		res, err = agentlink.UninstallOpenClaw(ctx, o.OpenClaw)
	} else {
		res, err = agentlink.InstallOpenClaw(ctx, o.OpenClaw)
	}
	if res != nil {
		printOpenClawResult(o, res)
	}
	if err != nil {
		return err
	}
	changed := len(res.Keys) > 0
	for _, a := range res.Files {
		changed = changed || a.Change != "unchanged"
	}
	if !o.DryRun && !o.Remove && changed && !o.JSON {
		fmt.Fprintln(o.IO.ErrOut, "OpenClaw loads the plugin at the Gateway's next start; 'ctxtool install openclaw --check' tries it now")
	}
	return nil
}

func printOpenClawResult(o *InstallOptions, res *agentlink.OpenClawResult) {
	if o.JSON {
		data, _ := json.Marshal(struct {
			*agentlink.OpenClawResult
			DryRun bool `json:"dryRun"`
		}{res, o.DryRun})
		fmt.Fprintf(o.IO.Out, "%s\n", data)
		return
	}
	would := ""
	if o.DryRun {
		would = "would "
	}
	for _, a := range res.Files {
		switch a.Change {
		case "unchanged":
			fmt.Fprintf(o.IO.Out, "unchanged %s\n", a.Path)
		case "remove":
			fmt.Fprintf(o.IO.Out, "%sremove %s\n", would, a.Path)
		default:
			if a.Binary != "" {
				fmt.Fprintf(o.IO.Out, "%s%s %s (runs %s)\n", would, a.Change, a.Path, a.Binary)
			} else {
				fmt.Fprintf(o.IO.Out, "%s%s %s\n", would, a.Change, a.Path)
			}
		}
	}
	if len(res.Keys) == 0 {
		if o.Remove {
			fmt.Fprintf(o.IO.Out, "unchanged %s (no key of ctxtool's in it)\n", res.Config)
		} else {
			fmt.Fprintf(o.IO.Out, "unchanged %s (its keys are already set)\n", res.Config)
		}
		return
	}
	for _, k := range res.Keys {
		if k.Value == nil {
			fmt.Fprintf(o.IO.Out, "%sunset %s in %s\n", would, k.Key, res.Config)
			continue
		}
		v, _ := json.Marshal(k.Value)
		fmt.Fprintf(o.IO.Out, "%sset %s = %s in %s\n", would, k.Key, v, res.Config)
	}
}
