package agentlink

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

//go:embed shims/check-openclaw.mjs
var checkOpenClawDriver []byte

// checkOpenClawParams are the tiny summarize() params of a check: the
// messages of checkEvent, as OpenClaw hands them over.
func checkOpenClawParams() map[string]any {
	prep := checkEvent()["preparation"].(map[string]any)
	return map[string]any{"messages": prep["messagesToSummarize"],
		"summarizationInstructions": map[string]any{"identifierPolicy": "strict"}}
}

// CheckOpenClaw checks an installed OpenClaw plugin end to end, changing
// nothing: its folder is ctxtool's and current for binary, openclaw.json
// loads it and selects its compaction provider, the binary answers a tiny
// OpenClaw request, and — with node (its path; "" skips) — the plugin
// itself, registered as the Gateway registers it, returns ctxtool's
// summary. ok is false when something that should work does not.
func CheckOpenClaw(ctx context.Context, o OpenClawSetup, node string) (lines []CheckLine, ok bool) {
	ok = true
	add := func(what, status, format string, args ...any) {
		lines = append(lines, CheckLine{What: what, Status: status, Detail: fmt.Sprintf(format, args...)})
		if status == "fail" {
			ok = false
		}
	}
	dir := OpenClawPluginDir(o.StateDir)
	want, err := OpenClawPlugin(o.Binary)
	if err != nil {
		add("plugin", "fail", "%v", err)
		return lines, false
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.js"))
	if err != nil {
		add("plugin", "fail", "%v: run ctxtool install openclaw", err)
		return lines, false
	}
	runs := ""
	if bytes.Contains(idx, []byte(openclawSignature)) {
		runs = binaryIn(idx)
	}
	stale := []string{}
	for _, name := range openclawFiles {
		if have, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(have, want[name]) {
			stale = append(stale, name)
		}
	}
	switch {
	case runs == "":
		add("plugin", "fail", "%s is not ctxtool's plugin", dir)
		return lines, false
	case len(stale) == 0:
		add("plugin", "ok", "%s, current, runs %s", dir, runs)
	default:
		add("plugin", "fail", "%s runs %s but %s are not what this ctxtool (%s) writes: run ctxtool install openclaw", dir, runs, strings.Join(stale, ", "), o.Binary)
	}

	cur, err := readOpenClawConfig(o.ConfigPath)
	switch {
	case err != nil:
		add("config", "fail", "%v", err)
	case !cur.known:
		add("config", "skip", "%s is JSON5 beyond comments: not read (openclaw config get agents.defaults.compaction.provider shows it)", o.ConfigPath)
	case !slices.Contains(cur.paths, dir):
		add("config", "fail", "%s: plugins.load.paths does not list %s: run ctxtool install openclaw", o.ConfigPath, dir)
	case cur.entry["enabled"] == false:
		add("config", "fail", "%s: plugins.entries.ctxtool.enabled is false", o.ConfigPath)
	case cur.provider == nil || *cur.provider != OpenClawPluginID:
		add("config", "fail", "%s: agents.defaults.compaction.provider is not \"ctxtool\": OpenClaw summarises by itself", o.ConfigPath)
	default:
		add("config", "ok", "%s loads the plugin and selects compaction provider \"ctxtool\"", o.ConfigPath)
	}

	params := checkOpenClawParams()
	req := map[string]any{"version": Version, "agent": "openclaw", "reason": "compaction", "session": map[string]any{},
		"preparation":               map[string]any{"messagesToSummarize": params["messages"], "turnPrefixMessages": []any{}},
		"summarizationInstructions": params["summarizationInstructions"]}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, detail := checkBinary(cctx, runs, req)
	add("binary", st, "%s", detail)

	if node == "" {
		add("shim", "skip", "node not found: the plugin was not run (the Gateway runs it; install node to check it here)")
		return lines, ok
	}
	var got struct {
		Error   string   `json:"error"`
		Summary string   `json:"summary"`
		Hooks   []string `json:"hooks"`
		Logs    []string `json:"logs"`
	}
	pj, _ := json.Marshal(params)
	_, err = runNodeCheck(cctx, node, checkOpenClawDriver, nil,
		func(string) []string { return []string{filepath.Join(dir, "index.js"), string(pj)} }, "plugin", &got)
	switch {
	case err != nil:
		add("shim", "fail", "%v", err)
	case got.Error != "":
		add("shim", "fail", "%s", got.Error)
	case !strings.Contains(got.Summary, checkWord):
		add("shim", "fail", "the plugin's summarize() returned no ctxtool summary (OpenClaw would summarise by itself): %s", strings.Join(got.Logs, "; "))
	case !slices.Contains(got.Hooks, "before_compaction"):
		add("shim", "fail", "the plugin registers no before_compaction hook (no memory flush, no checkpoint)")
	default:
		add("shim", "ok", "summarize(), run by %s, returned ctxtool's summary; hooks: %s", node, strings.Join(got.Hooks, ", "))
	}
	return lines, ok
}
