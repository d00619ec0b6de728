package agentkit

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// The agents' pins live in pins.env, read here and by the install scripts
// (which source it): one line to bump a version, and a test run against a
// cache of another version says so instead of testing the wrong agent.

//go:embed pins.env
var pinsEnv string

// Pins are the pinned versions: NODE_VERSION, PI_VERSION,
// CLAUDE_VERSION, CODEX_VERSION, OPENCLAW_VERSION.
var Pins = parsePins(pinsEnv)

func parsePins(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			m[k] = v
		}
	}
	return m
}

// Pin is the pinned version named key (it panics on a key pins.env lacks:
// a typo in a test, not a condition to handle).
func Pin(key string) string {
	v, ok := Pins[key]
	if !ok {
		panic("agentkit: no " + key + " in pins.env")
	}
	return v
}

// checkVersion reports whether the npm package.json at pkgJSON is of the
// pinned version key; the error names both and the script to run.
func checkVersion(name, pkgJSON, key, script string) error {
	data, err := os.ReadFile(pkgJSON)
	if err != nil {
		return fmt.Errorf("%s %s is not installed (%w): run %s (or .ci/run; CI=true installs it)", name, Pin(key), err, script)
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%s: %w", pkgJSON, err)
	}
	if p.Version != Pin(key) {
		return fmt.Errorf("%s %s is installed, the pin (internal/agentkit/pins.env) is %s: run %s (or .ci/run)", name, p.Version, Pin(key), script)
	}
	return nil
}
