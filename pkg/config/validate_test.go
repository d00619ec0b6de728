package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	return testkit.WriteTemp(t, "ctxtool.yaml", []byte(body))
}

func loadErr(t *testing.T, file, openclaw string) string {
	t.Helper()
	_, err := Load(file, openclaw)
	if err == nil {
		t.Fatalf("Load(%s) accepted it", file)
	}
	return err.Error()
}

func wantAll(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("error lacks %q:\n%s", p, msg)
		}
	}
}

// Mistakes in a config file used to fall back to defaults without a word.
func TestConfigFileMistakesAreErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown key", "compaction:\n  keepRecentToken: 30000\n",
			[]string{":2:", "compaction.keepRecentToken", "unknown key", "did you mean compaction.keepRecentTokens"}},
		{"wrong type", "compaction:\n  keepRecentTokens: lots\n",
			[]string{":2:", "compaction.keepRecentTokens", `"lots" is not an integer`}},
		{"fraction for an integer", "compaction:\n  keepRecentTokens: 2.5\n",
			[]string{"compaction.keepRecentTokens", "not an integer"}},
		{"negative", "\ncompaction:\n  reserveTokens: -5\n",
			[]string{":3:", "compaction.reserveTokens", "must not be negative"}},
		{"enum", "compaction:\n  mode: fast\n",
			[]string{"compaction.mode", `"fast" is not one of default, safeguard, summarize`}},
		{"bool", "recall:\n  enabled: maybe\n", []string{"recall.enabled", "true or false"}},
		{"duration", "llm:\n  timeout: 120\n", []string{"llm.timeout", "duration"}},
		{"range", "compaction:\n  rolling:\n    targetUtilization: 1.5\n", []string{":3:", "compaction.rolling.targetUtilization", "(0, 1]"}},
		{"section given a value", "compaction: 5\n", []string{"compaction", "is a section"}},
		{"unknown top-level", "contextWindows: 100\n", []string{"contextWindows", "did you mean contextWindow"}},
		{"models", "models:\n  my-llama:\n    contextWindow: big\n", []string{"my-llama.contextWindow", "positive integer"}},
		{"syntax", "compaction:\n\tmode: x\n", []string{"check the YAML syntax"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.body)
			msg := loadErr(t, p, "")
			wantAll(t, msg, append(tc.want, p)...)
		})
	}
	// Two mistakes: both reported.
	msg := loadErr(t, writeConfig(t, "compaction:\n  keepRecentToken: 1\n  reserveTokens: x\n"), "")
	wantAll(t, msg, "keepRecentToken:", "reserveTokens")
	// Valid values of every kind load, and models with dotted names.
	c, err := Load(writeConfig(t, "compaction:\n  keepRecentTokens: 30000\n  mode: safeguard\n  rolling:\n    trigger: 1\nllm:\n  timeout: 30s\nmodels:\n  gpt-4.1:\n    contextWindow: 1000000\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Int(nil, "compaction.keepRecentTokens") != 30000 || c.Float(nil, "compaction.rolling.trigger") != 1 || c.Duration(nil, "llm.timeout").Seconds() != 30 {
		t.Fatal("values not read")
	}
}

func TestMissingExplicitConfigIsNotASyntaxError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.yaml")
	msg := loadErr(t, p, "")
	wantAll(t, msg, "--config "+p, "no such file")
	if strings.Contains(msg, "syntax") {
		t.Fatalf("a missing file is not a syntax error: %s", msg)
	}
}

func TestEnvironmentMistakesAreErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "abc")
	msg := loadErr(t, "", "")
	wantAll(t, msg, "CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "compaction.keepRecentTokens", `"abc" is not an integer`)

	t.Setenv("CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "-1")
	wantAll(t, loadErr(t, "", ""), "compaction.keepRecentTokens", "must not be negative")

	t.Setenv("CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "")
	t.Setenv("CTXTOOL_COMPACTION_KEEPRECENTTOKEN", "5")
	wantAll(t, loadErr(t, "", ""), "CTXTOOL_COMPACTION_KEEPRECENTTOKEN:", "no such setting", "did you mean CTXTOOL_COMPACTION_KEEPRECENTTOKENS")

	// Variables outside the config sections (test switches, documented
	// extras) are not config mistakes.
	t.Setenv("CTXTOOL_COMPACTION_KEEPRECENTTOKEN", "")
	t.Setenv("CTXTOOL_TOKENIZER_FULL", "1")
	t.Setenv("CTXTOOL_STATE_DIR", "/tmp/x")
	t.Setenv("CTXTOOL_RECALL_MINSCORE", "0.5")
	c, err := Load("", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Float(nil, "recall.minScore") != 0.5 {
		t.Fatal("env value not read")
	}
}

func TestOpenClawWrongTypeIsAnError(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	oc := filepath.Join(t.TempDir(), "openclaw.json")
	os.WriteFile(oc, []byte(`{agents: {defaults: {compaction: {keepRecentTokens: "lots", memoryFlush: {enabled: true}}}}}`), 0o644)
	msg := loadErr(t, "", oc)
	wantAll(t, msg, oc, "agents.defaults.compaction.keepRecentTokens", "not an integer")
	if strings.Contains(msg, "memoryFlush") {
		t.Fatalf("OpenClaw's own settings are not ours to reject: %s", msg)
	}
}

func TestFlagsFromTheTable(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	Flag(fs, "compaction.keepRecentTokens")
	Flag(fs, "compaction.mode")
	fs.String("trigger", "manual", "another command's flag of a key's flag name")
	f := fs.Lookup("keep-recent-tokens")
	if f.DefValue != "20000" || !strings.Contains(f.Usage, "compaction.keepRecentTokens") {
		t.Fatalf("flag not from the table: %+v", f)
	}
	if err := fs.Parse([]string{"--keep-recent-tokens", "-5", "--strategy", "fast", "--trigger", "auto-80pct"}); err != nil {
		t.Fatal(err)
	}
	err := CheckFlags(fs)
	if err == nil {
		t.Fatal("negative flag value and bad enum accepted")
	}
	wantAll(t, err.Error(), "--keep-recent-tokens -5: must not be negative (config compaction.keepRecentTokens)", `--strategy fast: "fast" is not one of`)
	if strings.Contains(err.Error(), "trigger") {
		t.Fatalf("a flag not defined from the table was checked: %v", err)
	}
	c, _ := Load("", "")
	if c.Int(fs, "compaction.keepRecentTokens") != -5 {
		t.Fatal("flag must win")
	}
	// trigger is compaction.rolling.trigger's flag name, but this flag is
	// not that key's: the key keeps its configured value.
	if c.Float(fs, "compaction.rolling.trigger") != 0 {
		t.Fatal("another flag of the same name was read as the key")
	}
}

// A value from a caller's own options is checked against the table with
// the words a flag's check uses.
func TestCheckValueSaysWhatCheckFlagsSays(t *testing.T) {
	for _, tc := range []struct {
		key  string
		v    any
		args []string
	}{
		{"compaction.rolling.targetUtilization", 1.5, []string{"--target-utilization", "1.5"}},
		{"compaction.rolling.trigger", -0.25, []string{"--trigger", "-0.25"}},
		{"compaction.rolling.minKeepMessages", -1, []string{"--min-keep-messages", "-1"}},
		{"compaction.summarizer", "exec:", []string{"--summarizer", "exec:"}},
		{"compaction.mode", "fast", []string{"--strategy", "fast"}},
	} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		Flag(fs, tc.key)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		want, got := CheckFlags(fs), CheckValue(tc.key, tc.v)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s %v: CheckValue says %v, CheckFlags %v", tc.key, tc.v, got, want)
		}
	}
	for key, v := range map[string]any{"compaction.rolling.targetUtilization": 1.0, "compaction.summarizer": "exec:./s",
		"compaction.identifierPolicy": "off", "compaction.rolling.minKeepMessages": 0} {
		if err := CheckValue(key, v); err != nil {
			t.Errorf("%s %v rejected: %v", key, v, err)
		}
	}
	if err := CheckValue("compaction.summarize.fallback", "retry"); err == nil || err.Error() != `compaction.summarize.fallback retry: "retry" is not one of trim, fail` {
		t.Errorf("a key without a flag: %v", err)
	}
}
