package agentlink

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// OpenClaw's plugin: a folder with package.json, openclaw.plugin.json and
// an ESM index.js, loaded by the Gateway from plugins.load.paths. The
// compaction provider "ctxtool" is selected by
// agents.defaults.compaction.provider. The folder is written by
// InstallOpenClaw; the config keys are set by OpenClaw's own CLI
// (`openclaw config patch`), which validates them and owns the file.

//go:embed shims/openclaw/index.js shims/openclaw/package.json shims/openclaw/openclaw.plugin.json
var openclawShim embed.FS

// openclawSignature is in every index.js ctxtool writes; a folder without
// it is the user's and is never overwritten or removed.
const openclawSignature = "// ctxtool's OpenClaw plugin: OpenClaw's compactions are summarised by ctxtool."

// OpenClawPluginID is the plugin's and the compaction provider's id.
const OpenClawPluginID = "ctxtool"

// openclawFiles are the plugin's files, in the order they are written
// (index.js last: a folder with it is complete).
var openclawFiles = []string{"package.json", "openclaw.plugin.json", "index.js"}

// OpenClawPlugin is the plugin for the ctxtool binary at binary (an
// absolute path): file name → content.
func OpenClawPlugin(binary string) (map[string][]byte, error) {
	if !filepath.IsAbs(binary) {
		return nil, fmt.Errorf("the ctxtool binary's path %q is not absolute", binary)
	}
	quoted, err := json.Marshal(binary)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, name := range openclawFiles {
		data, err := openclawShim.ReadFile("shims/openclaw/" + name)
		if err != nil {
			return nil, err
		}
		if name == "index.js" {
			data = []byte(strings.Replace(string(data), `"`+binaryMarker+`"`, string(quoted), 1))
		}
		out[name] = data
	}
	return out, nil
}

// OpenClawStateDir is OpenClaw's state directory: $OPENCLAW_STATE_DIR (a
// leading ~ expanded, as OpenClaw does), else ~/.openclaw.
func OpenClawStateDir() (string, error) {
	home, err := os.UserHomeDir()
	if d := os.Getenv("OPENCLAW_STATE_DIR"); d != "" {
		if d == "~" || strings.HasPrefix(d, "~/") {
			if err != nil {
				return "", err
			}
			d = filepath.Join(home, strings.TrimPrefix(d, "~"))
		}
		return filepath.Abs(d)
	}
	if err != nil {
		return "", fmt.Errorf("no home directory to find OpenClaw's state directory in (set OPENCLAW_STATE_DIR): %w", err)
	}
	return filepath.Join(home, ".openclaw"), nil
}

// OpenClawConfigPath is OpenClaw's config file: $OPENCLAW_CONFIG_PATH, else
// <state dir>/openclaw.json.
func OpenClawConfigPath(stateDir string) string {
	if p := os.Getenv("OPENCLAW_CONFIG_PATH"); p != "" {
		if strings.HasPrefix(p, "~/") {
			if home, err := os.UserHomeDir(); err == nil {
				p = filepath.Join(home, p[2:])
			}
		}
		return p
	}
	return filepath.Join(stateDir, "openclaw.json")
}

// OpenClawPluginDir is where the plugin's folder lives.
func OpenClawPluginDir(stateDir string) string { return filepath.Join(stateDir, "ctxtool-plugin") }

// OpenClawCLI runs OpenClaw's CLI with args and stdin, returning its
// stdout (an error includes what it printed on stderr).
type OpenClawCLI func(ctx context.Context, stdin []byte, args ...string) ([]byte, error)

// OpenClawSetup says where OpenClaw is and how to reach its CLI.
type OpenClawSetup struct {
	StateDir   string
	ConfigPath string
	// Binary is the ctxtool binary the plugin runs (install).
	Binary string
	// CLI runs `openclaw …`; nil when OpenClaw's CLI was not found (the
	// config keys are then only reported, with the command to set them).
	CLI    OpenClawCLI
	DryRun bool
	// Window selects the plugin's context engine, the rolling window
	// (plugins.slots.contextEngine = "ctxtool"), as agent.window asks;
	// false puts OpenClaw's own engine back where the slot names ctxtool.
	Window bool
}

// ConfigChange is one config key an install or uninstall sets or removes.
type ConfigChange struct {
	Key string `json:"key"`
	// Value is the new value (nil: the key is removed).
	Value any `json:"value"`
}

// OpenClawResult is what InstallOpenClaw or UninstallOpenClaw did (or,
// dry, would do).
type OpenClawResult struct {
	Files  []Action       `json:"files"`
	Config string         `json:"config"`
	Keys   []ConfigChange `json:"keys"`
	// Patch is the JSON merge patch given to `openclaw config patch`
	// (empty when the config already was as wanted).
	Patch json.RawMessage `json:"patch,omitempty"`
	// CLIOutput is what OpenClaw's CLI said.
	CLIOutput string `json:"cliOutput,omitempty"`
}

// openclawConfig is the part of openclaw.json ctxtool reads.
type openclawConfig struct {
	known    bool // false: the file could not be read as JSON
	paths    []string
	provider *string
	entry    map[string]any
	engine   *string // plugins.slots.contextEngine
}

func readOpenClawConfig(path string) (openclawConfig, error) {
	var c openclawConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		c.known = true
		return c, nil
	}
	if err != nil {
		return c, err
	}
	var doc struct {
		Plugins struct {
			Load struct {
				Paths []string `json:"paths"`
			} `json:"load"`
			Entries map[string]map[string]any `json:"entries"`
			Slots   struct {
				ContextEngine *string `json:"contextEngine"`
			} `json:"slots"`
		} `json:"plugins"`
		Agents struct {
			Defaults struct {
				Compaction struct {
					Provider *string `json:"provider"`
				} `json:"compaction"`
			} `json:"defaults"`
		} `json:"agents"`
	}
	if json.Unmarshal(stripJSON5(data), &doc) != nil {
		return c, nil // JSON5 beyond comments and trailing commas: OpenClaw decides
	}
	c.known = true
	c.paths = doc.Plugins.Load.Paths
	c.provider = doc.Agents.Defaults.Compaction.Provider
	c.entry = doc.Plugins.Entries[OpenClawPluginID]
	c.engine = doc.Plugins.Slots.ContextEngine
	return c, nil
}

// stripJSON5 removes // and /* */ comments and trailing commas outside
// strings: the JSON5 OpenClaw's own files use.
func stripJSON5(data []byte) []byte {
	var out bytes.Buffer
	inStr := byte(0)
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inStr != 0:
			out.WriteByte(c)
			if c == '\\' && i+1 < len(data) {
				i++
				out.WriteByte(data[i])
			} else if c == inStr {
				inStr = 0
			}
		case c == '"':
			inStr = c
			out.WriteByte(c)
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return data
			}
			i += end + 3
		case c == ',':
			j := i + 1
			for j < len(data) && strings.IndexByte(" \t\r\n", data[j]) >= 0 {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue
			}
			out.WriteByte(c)
		default:
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

// InstallOpenClaw writes the plugin's folder for o.Binary and makes
// OpenClaw load it and use its compaction provider: plugins.load.paths
// gains the folder, plugins.entries.ctxtool is enabled (with
// hooks.allowConversationAccess, which its before_prompt_build needs), and
// agents.defaults.compaction.provider becomes "ctxtool", and with o.Window
// plugins.slots.contextEngine selects the rolling window — one
// `openclaw config patch`, which leaves every other key as it is (with no
// CLI and no config file yet, the file is created with those keys alone).
// Nothing is changed when all of it is already so. A folder whose index.js
// ctxtool did not write is refused.
func InstallOpenClaw(ctx context.Context, o OpenClawSetup) (*OpenClawResult, error) {
	files, err := OpenClawPlugin(o.Binary)
	if err != nil {
		return nil, err
	}
	dir := OpenClawPluginDir(o.StateDir)
	res := &OpenClawResult{Config: o.ConfigPath, Keys: []ConfigChange{}}
	var write []string
	for _, name := range openclawFiles {
		path := filepath.Join(dir, name)
		a := Action{Path: path, Change: "create"}
		if name == "index.js" {
			a.Binary = o.Binary
		}
		have, err := os.ReadFile(path)
		switch {
		case err == nil && bytes.Equal(have, files[name]):
			a.Change = "unchanged"
		case err == nil:
			a.Change = "update"
			write = append(write, name)
		case errors.Is(err, fs.ErrNotExist):
			write = append(write, name)
		default:
			return nil, err
		}
		res.Files = append(res.Files, a)
	}
	if idx, err := os.ReadFile(filepath.Join(dir, "index.js")); err == nil && !bytes.Contains(idx, []byte(openclawSignature)) {
		return nil, fmt.Errorf("%s holds a plugin ctxtool did not write: move it away and install again", dir)
	}

	cur, err := readOpenClawConfig(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	patch := map[string]any{}
	set := func(key string, v any) {
		res.Keys = append(res.Keys, ConfigChange{Key: key, Value: v})
	}
	if !cur.known || !slices.Contains(cur.paths, dir) {
		paths := append(slices.Clone(cur.paths), dir)
		if !cur.known {
			paths = nil // unknown: OpenClaw's current list is read by the CLI below
		}
		set("plugins.load.paths", paths)
	}
	if !cur.known || cur.entry["enabled"] != true || !allowsConversation(cur.entry) {
		set("plugins.entries.ctxtool.enabled", true)
		set("plugins.entries.ctxtool.hooks.allowConversationAccess", true)
	}
	if !cur.known || cur.provider == nil || *cur.provider != OpenClawPluginID {
		set("agents.defaults.compaction.provider", OpenClawPluginID)
	}
	ours := cur.engine != nil && *cur.engine == OpenClawPluginID
	switch {
	case o.Window && (!cur.known || !ours):
		set(openclawEngineKey, OpenClawPluginID)
	case !o.Window && ours:
		set(openclawEngineKey, nil) // OpenClaw's default engine, "legacy"
	}
	if len(res.Keys) > 0 {
		for i, k := range res.Keys {
			if k.Key == "plugins.load.paths" && k.Value == nil {
				paths, err := cliPaths(ctx, o.CLI)
				if err != nil {
					return nil, err
				}
				if !slices.Contains(paths, dir) {
					paths = append(paths, dir)
				}
				res.Keys[i].Value = paths
			}
		}
		for _, k := range res.Keys {
			putPath(patch, k.Key, k.Value)
		}
		res.Patch, _ = json.Marshal(patch)
	}
	if o.DryRun {
		return res, nil
	}
	if len(write) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for _, name := range write {
			if err := safefile.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
				return nil, err
			}
		}
	}
	if len(res.Patch) == 0 {
		return res, nil
	}
	if o.CLI == nil {
		if _, err := os.Stat(o.ConfigPath); errors.Is(err, fs.ErrNotExist) {
			// no config to keep: OpenClaw reads this one at its first start
			if err := os.MkdirAll(filepath.Dir(o.ConfigPath), 0o700); err != nil {
				return res, err
			}
			var pretty bytes.Buffer
			json.Indent(&pretty, res.Patch, "", "  ")
			pretty.WriteByte('\n')
			res.CLIOutput = "created " + o.ConfigPath
			return res, safefile.WriteFile(o.ConfigPath, pretty.Bytes(), 0o600)
		}
		return res, fmt.Errorf("OpenClaw's CLI (openclaw) is not on the PATH: the plugin is in %s; set the keys with: openclaw config patch --stdin <<< '%s'", dir, res.Patch)
	}
	out, err := o.CLI(ctx, res.Patch, "config", "patch", "--stdin")
	res.CLIOutput = strings.TrimSpace(string(out))
	if err != nil {
		return res, fmt.Errorf("openclaw config patch: %w", err)
	}
	return res, nil
}

// openclawEngineKey selects OpenClaw's context engine (the rolling window).
const openclawEngineKey = "plugins.slots.contextEngine"

func allowsConversation(entry map[string]any) bool {
	h, _ := entry["hooks"].(map[string]any)
	return h["allowConversationAccess"] == true
}

// cliPaths asks OpenClaw for plugins.load.paths (unset: none).
func cliPaths(ctx context.Context, cli OpenClawCLI) ([]string, error) {
	if cli == nil {
		return nil, fmt.Errorf("OpenClaw's config file is not plain JSON and its CLI (openclaw) is not on the PATH to read it")
	}
	out, err := cli(ctx, nil, "config", "get", "plugins.load.paths", "--json")
	if err != nil {
		if strings.Contains(err.Error(), "unset") || strings.Contains(string(out), "unset") {
			return nil, nil
		}
		return nil, fmt.Errorf("openclaw config get plugins.load.paths: %w", err)
	}
	var paths []string
	if err := json.Unmarshal(out, &paths); err != nil {
		return nil, fmt.Errorf("openclaw config get plugins.load.paths printed %.80q, not a list", out)
	}
	return paths, nil
}

// putPath sets a dotted key in a nested patch object.
func putPath(m map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// UninstallOpenClaw undoes InstallOpenClaw: the compaction provider key
// (only while it names ctxtool), the plugin's entry and its load path go
// (one `openclaw config patch`), then the plugin's folder. OpenClaw
// summarises by itself again.
func UninstallOpenClaw(ctx context.Context, o OpenClawSetup) (*OpenClawResult, error) {
	dir := OpenClawPluginDir(o.StateDir)
	res := &OpenClawResult{Config: o.ConfigPath, Keys: []ConfigChange{}}
	if idx, err := os.ReadFile(filepath.Join(dir, "index.js")); err == nil && !bytes.Contains(idx, []byte(openclawSignature)) {
		return nil, fmt.Errorf("%s holds a plugin ctxtool did not write: left as it is", dir)
	}
	for _, name := range openclawFiles {
		path := filepath.Join(dir, name)
		a := Action{Path: path, Change: "remove"}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			a.Change = "unchanged"
		}
		res.Files = append(res.Files, a)
	}
	cur, err := readOpenClawConfig(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	if !cur.known {
		paths, err := cliPaths(ctx, o.CLI)
		if err != nil {
			return nil, err
		}
		cur.paths = paths
		id := OpenClawPluginID
		cur.provider, cur.entry = &id, map[string]any{}
	}
	patch := map[string]any{}
	if cur.provider != nil && *cur.provider == OpenClawPluginID {
		res.Keys = append(res.Keys, ConfigChange{Key: "agents.defaults.compaction.provider"})
	}
	if cur.engine != nil && *cur.engine == OpenClawPluginID {
		res.Keys = append(res.Keys, ConfigChange{Key: openclawEngineKey})
	}
	if cur.entry != nil {
		res.Keys = append(res.Keys, ConfigChange{Key: "plugins.entries.ctxtool"})
	}
	if slices.Contains(cur.paths, dir) {
		rest := slices.DeleteFunc(slices.Clone(cur.paths), func(p string) bool { return p == dir })
		if len(rest) == 0 {
			res.Keys = append(res.Keys, ConfigChange{Key: "plugins.load.paths"})
		} else {
			res.Keys = append(res.Keys, ConfigChange{Key: "plugins.load.paths", Value: rest})
		}
	}
	for _, k := range res.Keys {
		putPath(patch, k.Key, k.Value)
	}
	if len(res.Keys) > 0 {
		res.Patch, _ = json.Marshal(patch)
	}
	if o.DryRun {
		return res, nil
	}
	if len(res.Patch) > 0 {
		if o.CLI == nil {
			return res, fmt.Errorf("OpenClaw's CLI (openclaw) is not on the PATH: remove the keys with: openclaw config patch --stdin <<< '%s', then run uninstall again", res.Patch)
		}
		out, err := o.CLI(ctx, res.Patch, "config", "patch", "--stdin")
		res.CLIOutput = strings.TrimSpace(string(out))
		if err != nil {
			return res, fmt.Errorf("openclaw config patch: %w", err)
		}
	}
	for _, a := range res.Files {
		if a.Change == "remove" {
			if err := os.Remove(a.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return res, err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("%s: %w (files ctxtool did not write are left in it)", dir, err)
	}
	return res, nil
}
