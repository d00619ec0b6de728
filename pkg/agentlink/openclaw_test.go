package agentlink

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"github.com/ctxtool/ctxtool/pkg/compaction"
)

// mergePatch applies an RFC 7386 JSON merge patch, as `openclaw config
// patch` does.
func mergePatch(doc, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		if pv, ok := v.(map[string]any); ok {
			dv, ok := doc[k].(map[string]any)
			if !ok {
				dv = map[string]any{}
				doc[k] = dv
			}
			mergePatch(dv, pv)
			continue
		}
		doc[k] = v
	}
}

// fakeOpenClaw is a stand-in for OpenClaw's CLI over a plain JSON config:
// it records its calls and applies `config patch --stdin`.
type fakeOpenClaw struct {
	config string
	calls  [][]string
}

func (f *fakeOpenClaw) run(_ context.Context, stdin []byte, args ...string) ([]byte, error) {
	f.calls = append(f.calls, args)
	if slices.Equal(args, []string{"config", "patch", "--stdin"}) {
		doc := map[string]any{}
		if data, err := os.ReadFile(f.config); err == nil {
			if err := json.Unmarshal(stripJSON5(data), &doc); err != nil {
				return nil, err
			}
		}
		var patch map[string]any
		if err := json.Unmarshal(stdin, &patch); err != nil {
			return nil, err
		}
		mergePatch(doc, patch)
		data, _ := json.MarshalIndent(doc, "", "  ")
		return []byte("Updated"), os.WriteFile(f.config, data, 0o600)
	}
	return nil, nil
}

// Install writes the plugin and one config patch that keeps the user's
// other keys and load paths; the second install changes nothing and calls
// no CLI; dry runs change nothing; uninstall removes only what is
// ctxtool's.
func TestInstallOpenClawIdempotent(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(state, "openclaw.json")
	user := "{\n  // mine\n  \"agents\": {\"defaults\": {\"timeoutSeconds\": 99,},},\n  \"plugins\": {\"load\": {\"paths\": [\"/opt/other-plugin\"]}},\n}\n"
	os.WriteFile(cfg, []byte(user), 0o600)
	cli := &fakeOpenClaw{config: cfg}
	o := OpenClawSetup{StateDir: state, ConfigPath: cfg, Binary: "/opt/ctxtool/bin/ctxtool", CLI: cli.run, DryRun: true}
	res, err := InstallOpenClaw(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cli.calls) != 0 || len(res.Keys) != 4 || res.Files[2].Change != "create" {
		t.Fatalf("dry run: calls %v, result %+v", cli.calls, res)
	}
	if data, _ := os.ReadFile(cfg); string(data) != user {
		t.Fatal("a dry run changed the config")
	}
	if _, err := os.Stat(OpenClawPluginDir(state)); err == nil {
		t.Fatal("a dry run wrote the plugin")
	}
	o.DryRun = false
	if _, err = InstallOpenClaw(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Agents  map[string]map[string]any `json:"agents"`
		Plugins struct {
			Load    map[string][]string       `json:"load"`
			Entries map[string]map[string]any `json:"entries"`
		} `json:"plugins"`
	}
	data, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	dir := OpenClawPluginDir(state)
	if got := doc.Plugins.Load["paths"]; !slices.Equal(got, []string{"/opt/other-plugin", dir}) {
		t.Errorf("plugins.load.paths = %v, want the user's path kept and the plugin's added", got)
	}
	if doc.Agents["defaults"]["timeoutSeconds"] != float64(99) || doc.Agents["defaults"]["compaction"].(map[string]any)["provider"] != "ctxtool" {
		t.Errorf("agents.defaults = %v", doc.Agents["defaults"])
	}
	idx, _ := os.ReadFile(filepath.Join(dir, "index.js"))
	if binaryIn(idx) != o.Binary || !bytes.Contains(idx, []byte(openclawSignature)) {
		t.Errorf("index.js does not run %s", o.Binary)
	}
	before := snapshot(t, state)
	cli.calls = nil
	res, err = InstallOpenClaw(context.Background(), o)
	if err != nil || len(res.Keys) != 0 || len(cli.calls) != 0 {
		t.Fatalf("second install: keys %v, calls %v, %v", res.Keys, cli.calls, err)
	}
	if after := snapshot(t, state); !mapsEqual(before, after) {
		t.Error("the second install changed files")
	}

	// a plugin folder that is not ctxtool's is left alone
	other := OpenClawSetup{StateDir: t.TempDir(), Binary: o.Binary, CLI: cli.run}
	other.ConfigPath = filepath.Join(other.StateDir, "openclaw.json")
	os.MkdirAll(OpenClawPluginDir(other.StateDir), 0o755)
	os.WriteFile(filepath.Join(OpenClawPluginDir(other.StateDir), "index.js"), []byte("export default {}\n"), 0o644)
	if _, err := InstallOpenClaw(context.Background(), other); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Errorf("install over a foreign plugin: %v", err)
	}
	if _, err := UninstallOpenClaw(context.Background(), other); err == nil {
		t.Error("uninstall removed a foreign plugin")
	}

	if _, err := UninstallOpenClaw(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(cfg)
	doc.Plugins.Entries, doc.Plugins.Load, doc.Agents = nil, nil, nil
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Plugins.Load["paths"]; !slices.Equal(got, []string{"/opt/other-plugin"}) || doc.Plugins.Entries["ctxtool"] != nil ||
		doc.Agents["defaults"]["compaction"].(map[string]any)["provider"] != nil || doc.Agents["defaults"]["timeoutSeconds"] != float64(99) {
		t.Errorf("after uninstall: %s", data)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("uninstall left the plugin folder")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// An OpenClaw request (summarize()'s params) is answered with ctxtool's
// summary and no cut; its identifier instructions reach the summariser.
func TestCompactOpenClawRequest(t *testing.T) {
	params := checkOpenClawParams()
	params["summarizationInstructions"] = map[string]any{"identifierPolicy": "strict", "identifierInstructions": "Keep every ticket id."}
	req := map[string]any{"version": 1, "agent": "openclaw", "reason": "compaction", "session": map[string]any{},
		"preparation":               map[string]any{"messagesToSummarize": params["messages"], "previousSummary": "## Goal\n- ship JIRA-4242"},
		"summarizationInstructions": params["summarizationInstructions"]}
	data, _ := json.Marshal(req)
	r, err := Decode(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := &recordingSummarizer{}
	res, err := Compact(context.Background(), r, Options{Summarizer: sum})
	seen := sum.instructions
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Summary, checkWord) || res.FirstKeptEntryID != "" || res.Decline != "" {
		t.Errorf("answer %+v", res)
	}
	if !strings.Contains(seen, "Keep every ticket id.") {
		t.Errorf("the summariser's instructions %q lack OpenClaw's identifier instructions", seen)
	}
	if a := res.Details.Ctxtool.Audit; a == nil || a.Dropped == 0 {
		t.Errorf("the audit misses JIRA-4242 of the previous summary: %+v", a)
	}
}

// The plugin, registered as the Gateway registers it, falls back (returns
// "", one [ctxtool] line) when the binary exits 1.
func TestOpenClawPluginFallsBack(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the plugin is not run")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ctxtool")
	os.WriteFile(bin, []byte("#!/bin/sh\necho boom >&2\nexit 1\n"), 0o755)
	files, _ := OpenClawPlugin(bin)
	for name, data := range files {
		os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "check.mjs"), checkOpenClawDriver, 0o644)
	pj, _ := json.Marshal(checkOpenClawParams())
	out, err := exec.Command(node, filepath.Join(dir, "check.mjs"), filepath.Join(dir, "index.js"), string(pj)).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Summary string   `json:"summary"`
		Logs    []string `json:"logs"`
	}
	if err := json.Unmarshal(lastLine(out), &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if got.Summary != "" || len(got.Logs) != 1 || !strings.HasPrefix(got.Logs[0], "[ctxtool] compaction failed, OpenClaw summarises by itself") || !strings.Contains(got.Logs[0], "boom") {
		t.Errorf("summary %q, logs %q", got.Summary, got.Logs)
	}
}

// recordingSummarizer answers a fixed summary and records the
// instructions it was given.
type recordingSummarizer struct{ instructions string }

func (r *recordingSummarizer) Name() string { return "test" }
func (*recordingSummarizer) Capabilities() compaction.Capabilities {
	return compaction.Capabilities{}
}

func (r *recordingSummarizer) Summarize(_ context.Context, req *compaction.Request) (string, error) {
	r.instructions += req.Instructions
	return "## Goal\n- keep " + checkWord, nil
}

// With no OpenClaw CLI and no config file yet, install creates the config
// with ctxtool's keys alone (there is nothing of the user's to keep); with
// a config file it stops and names the command.
func TestInstallOpenClawWithoutCLI(t *testing.T) {
	state := t.TempDir()
	o := OpenClawSetup{StateDir: state, ConfigPath: filepath.Join(state, "openclaw.json"), Binary: "/opt/ctxtool/bin/ctxtool"}
	if _, err := InstallOpenClaw(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	cur, err := readOpenClawConfig(o.ConfigPath)
	if err != nil || !cur.known || cur.provider == nil || *cur.provider != "ctxtool" || !slices.Contains(cur.paths, OpenClawPluginDir(state)) || !allowsConversation(cur.entry) {
		t.Fatalf("created config: %+v %v", cur, err)
	}
	res, err := InstallOpenClaw(context.Background(), o)
	if err != nil || len(res.Keys) != 0 {
		t.Errorf("second install: %+v %v", res, err)
	}
	os.WriteFile(o.ConfigPath, []byte("{\"ui\": {}}\n"), 0o600)
	if _, err := InstallOpenClaw(context.Background(), o); err == nil || !strings.Contains(err.Error(), "openclaw config patch --stdin") {
		t.Errorf("install over a config without the CLI: %v", err)
	}
	if data, _ := os.ReadFile(o.ConfigPath); string(data) != "{\"ui\": {}}\n" {
		t.Errorf("the user's config was changed without OpenClaw's CLI: %s", data)
	}
}

// With the window on, install selects the plugin's context engine; a
// second install changes nothing; turning the window off gives the slot
// back to OpenClaw's own engine; another plugin's engine is replaced only
// when the window is asked for, and uninstall leaves it alone.
func TestInstallOpenClawWindowSlot(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(state, "openclaw.json")
	os.WriteFile(cfg, []byte(`{"plugins": {"slots": {"memory": "memory-core"}}}`), 0o600)
	cli := &fakeOpenClaw{config: cfg}
	o := OpenClawSetup{StateDir: state, ConfigPath: cfg, Binary: "/opt/ctxtool/bin/ctxtool", CLI: cli.run, Window: true}
	slots := func() map[string]any {
		var doc struct {
			Plugins struct {
				Slots map[string]any `json:"slots"`
			} `json:"plugins"`
		}
		json.Unmarshal(testkit.ReadFile(t, cfg), &doc)
		return doc.Plugins.Slots
	}
	if _, err := InstallOpenClaw(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if s := slots(); s["contextEngine"] != "ctxtool" || s["memory"] != "memory-core" {
		t.Fatalf("slots after install with the window: %v", s)
	}
	calls := len(cli.calls)
	if res, err := InstallOpenClaw(context.Background(), o); err != nil || len(res.Keys) != 0 || len(cli.calls) != calls {
		t.Fatalf("second install: %v, keys %v", err, res.Keys)
	}
	o.Window = false
	if _, err := InstallOpenClaw(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if s := slots(); s["contextEngine"] != nil || s["memory"] != "memory-core" {
		t.Fatalf("slots after install without the window: %v", s)
	}
	// another engine: kept without the window, kept by uninstall
	mergeInto := map[string]any{}
	json.Unmarshal(testkit.ReadFile(t, cfg), &mergeInto)
	mergePatch(mergeInto, map[string]any{"plugins": map[string]any{"slots": map[string]any{"contextEngine": "lossless-claw"}}})
	data, _ := json.Marshal(mergeInto)
	os.WriteFile(cfg, data, 0o600)
	if res, err := InstallOpenClaw(context.Background(), o); err != nil || len(res.Keys) != 0 {
		t.Fatalf("install without the window over another engine: %v, keys %v", err, res.Keys)
	}
	if _, err := UninstallOpenClaw(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if s := slots(); s["contextEngine"] != "lossless-claw" {
		t.Fatalf("uninstall touched another plugin's engine: %v", s)
	}
}
