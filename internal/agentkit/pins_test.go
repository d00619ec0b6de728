package agentkit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Each agent's version is pinned on one line of pins.env: the install
// scripts read it (through install-lib.sh) and hold no version of their own, so bumping a pin is
// a one-line change that .ci/run installs.
func TestPinsLiveInPinsEnv(t *testing.T) {
	for _, k := range []string{"NODE_VERSION", "PI_VERSION", "CLAUDE_VERSION", "CODEX_VERSION", "OPENCLAW_VERSION"} {
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(Pins[k]) {
			t.Errorf("pins.env: %s = %q, want a version", k, Pins[k])
		}
	}
	assign := regexp.MustCompile(`(?m)^\s*[A-Z_]*VERSION=`)
	for _, script := range []string{"install-lib.sh", "install-pi.sh", "install-cc-codex.sh", "install-openclaw.sh", "../../.ci/run"} {
		data, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if m := assign.FindString(s); m != "" {
			t.Errorf("%s sets a version of its own (%q): the pins are pins.env's", script, strings.TrimSpace(m))
		}
		if script == "install-lib.sh" && !strings.Contains(s, `. "$(dirname "${BASH_SOURCE[0]}")/pins.env"`) {
			t.Errorf("%s does not source pins.env", script)
		}
		if strings.HasPrefix(script, "install-") && script != "install-lib.sh" && !strings.Contains(s, `. "$(dirname "$0")/install-lib.sh"`) {
			t.Errorf("%s does not source install-lib.sh (which reads pins.env)", script)
		}
		for k, v := range Pins {
			if strings.Contains(s, v) {
				t.Errorf("%s spells the %s pin (%s) out: read it from pins.env", script, k, v)
			}
		}
	}
}

// A cached install of another version than the pin is refused, with a
// message naming both and the script to run: a bumped pin never runs the
// old agent silently.
func TestFindRefusesAnotherVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("claude/node_modules/.bin/claude", "#!/bin/sh\n")
	write("codex/node_modules/.bin/codex", "#!/bin/sh\n")
	write("claude/node_modules/@anthropic-ai/claude-code/package.json", `{"version":"0.0.1"}`)
	write("codex/node_modules/@openai/codex/package.json", `{"version":"`+Pin("CODEX_VERSION")+`"}`)
	write("node24/node_modules/node/bin/node", "#!/bin/sh\n")
	write("node24/node_modules/node/package.json", `{"version":"`+Pin("NODE_VERSION")+`"}`)
	write("pi/node_modules/@earendil-works/pi-coding-agent/dist/cli.js", "")
	write("pi/node_modules/@earendil-works/pi-coding-agent/package.json", `{"version":"0.0.2"}`)
	write("oc/node_modules/openclaw/openclaw.mjs", "")
	write("oc/node_modules/openclaw/package.json", `{"version":"0.0.3"}`)
	write("node24/node_modules/.bin/node", "#!/bin/sh\n")
	t.Setenv("CTXTOOL_AGENTS", dir)
	t.Setenv("OPENCLAW_TOOLS", dir)
	check := func(what string, err error, stale, pin string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), stale) || !strings.Contains(err.Error(), pin) || !strings.Contains(err.Error(), "pins.env") {
			t.Errorf("%s of version %s (pin %s): %v", what, stale, pin, err)
		}
	}
	_, err := FindAgents(false)
	check("claude", err, "0.0.1", Pin("CLAUDE_VERSION"))
	if _, err = FindPi(false); err == nil || !strings.Contains(err.Error(), "node is not installed") {
		check("pi", err, "0.0.2", Pin("PI_VERSION"))
	}
	_, err = FindOpenClaw()
	check("openclaw", err, "0.0.3", Pin("OPENCLAW_VERSION"))
	// The right versions are found.
	write("claude/node_modules/@anthropic-ai/claude-code/package.json", `{"version":"`+Pin("CLAUDE_VERSION")+`"}`)
	if _, err := FindAgents(false); err != nil {
		t.Errorf("claude and codex at their pins: %v", err)
	}
}
