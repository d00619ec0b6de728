package config

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
	"gopkg.in/yaml.v3"
)

func flattenYAML(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flattenYAML(key, sub, out)
			continue
		}
		out[key] = v
	}
}

var update = flag.Bool("update", false, "rewrite config.example.yaml from the key table")

// config.example.yaml is generated from keys: it documents every key with
// its default, and parsing it back gives exactly the table's defaults.
func TestExampleConfig(t *testing.T) {
	path := filepath.Join("..", "..", "config.example.yaml")
	want := Example()
	if *update {
		testkit.WriteFile(t, path, []byte(want), 0o644)
	}
	data := testkit.ReadFile(t, path)
	if string(data) != want {
		t.Fatalf("config.example.yaml is not what pkg/config/keys.go generates; run: go test ./pkg/config -run TestExampleConfig -update")
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	flattenYAML("", doc, got)
	var missing, extra, differ []string
	for k, d := range Defaults() {
		v, ok := got[k]
		if !ok {
			missing = append(missing, k)
			continue
		}
		if !sameValue(v, d) {
			differ = append(differ, k)
		}
	}
	for k := range got {
		if _, ok := Lookup(k); !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra)+len(differ) > 0 {
		t.Fatalf("config.example.yaml vs keys: missing %v, unknown %v, different defaults %v", missing, extra, differ)
	}
	// The example itself loads without a complaint.
	if _, err := Load(path, ""); err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
}

func sameValue(a, b any) bool {
	norm := func(v any) string {
		switch x := v.(type) {
		case int:
			return strings.TrimSuffix(strings.TrimSuffix(yamlString(float64(x)), ".0"), "\n")
		case float64:
			return strings.TrimSuffix(strings.TrimSuffix(yamlString(x), ".0"), "\n")
		}
		return strings.TrimSuffix(yamlString(v), "\n")
	}
	return norm(a) == norm(b)
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

func TestPrecedenceFlagEnvFileOpenClawDefault(t *testing.T) {
	dir := t.TempDir()
	oc := filepath.Join(dir, "openclaw.json")
	os.WriteFile(oc, []byte(`{
  // OpenClaw config is JSON5
  agents: { defaults: { compaction: { mode: 'safeguard', keepRecentTokens: 11111, reserveTokensFloor: 30000, }, }, },
}`), 0o644)
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("compaction:\n  keepRecentTokens: 22222\n"), 0o644)
	c, err := Load(file, oc)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Int(nil, "compaction.keepRecentTokens"); got != 22222 {
		t.Fatalf("file must beat openclaw: %d", got)
	}
	if got := c.String(nil, "compaction.mode"); got != "safeguard" {
		t.Fatalf("openclaw must beat default: %q", got)
	}
	if got := c.Int(nil, "compaction.reserveTokens"); got != 16384 {
		t.Fatalf("default: %d", got)
	}
	t.Setenv("CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "33333")
	c, _ = Load(file, oc)
	if got := c.Int(nil, "compaction.keepRecentTokens"); got != 33333 {
		t.Fatalf("env must beat file: %d", got)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), ""); err == nil {
		t.Fatal("an explicit missing config file must be an error")
	}
}

func TestStateDirEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte("stateDir: /from/file\n"), 0o644)
	c, err := Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StateDir(nil); got != "/from/file" {
		t.Fatalf("file: %q", got)
	}
	t.Setenv("CTXTOOL_STATE_DIR", "/from/env")
	if got := c.StateDir(nil); got != "/from/env" {
		t.Fatalf("CTXTOOL_STATE_DIR must beat the config file: %q", got)
	}
}
