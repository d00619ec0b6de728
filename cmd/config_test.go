package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/rolling"
)

// The key table's defaults and allowed values are the packages' own.
func TestConfigTableAgreesWithPackages(t *testing.T) {
	want := map[string]any{
		"compaction.reserveTokens":             compaction.DefaultReserveTokens,
		"compaction.keepRecentTokens":          compaction.DefaultKeepRecentTokens,
		"compaction.reserveTokensFloor":        compaction.DefaultReserveTokensFloor,
		"compaction.maxHistoryShare":           compaction.DefaultMaxHistoryShare,
		"compaction.recentTurnsPreserve":       compaction.DefaultRecentTurns,
		"compaction.summarize.protectedTail":   compaction.DefaultProtectedTail,
		"compaction.summarize.maxInputChars":   compaction.DefaultMaxInputChars,
		"compaction.summarize.maxOutputTokens": compaction.DefaultMaxOutputTokens,
		"compaction.summarize.thresholdTokens": compaction.DefaultSummarizeThreshold,
		"compaction.hooks.timeout":             compaction.DefaultHookTimeout.String(),
		"compaction.mode":                      compaction.StrategyDefault,
		"compaction.rolling.targetUtilization": rolling.DefaultTargetUtilization,
		"compaction.rolling.minKeepMessages":   rolling.DefaultMinKeepMessages,
		"recall.maxResults":                    recall.DefaultMaxResults,
		"recall.minScore":                      recall.DefaultMinScore,
		"recall.toolOutputChars":               recall.DefaultMaxChars,
		"checkpoint.keep":                      checkpoint.DefaultKeep,
		"checkpoint.dedupeThreshold":           checkpoint.DefaultDedupeThreshold,
		"estimate.tokenizer":                   estimate.Auto,
	}
	defaults := config.Defaults()
	for k, v := range want {
		if defaults[k] != v {
			t.Errorf("%s: table default %v (%T), package default %v (%T)", k, defaults[k], defaults[k], v, v)
		}
	}
	// compaction.mode: pkg/compaction's TestEveryStrategyInTheKeyTableIsImplemented
	enums := map[string][]string{"estimate.tokenizer": estimate.Methods()}
	for k, v := range enums {
		key, _ := config.Lookup(k)
		if !slices.Equal(key.Enum, v) {
			t.Errorf("%s: table allows %v, the package %v", k, key.Enum, v)
		}
	}
}

// Config mistakes were silently replaced by defaults; now each is exit 2
// naming where it came from, the key and what was expected.
func TestConfigMistakesExit2(t *testing.T) {
	cleanEnv(t)
	f, _ := sampleCopy(t)
	dir := t.TempDir()
	n := 0
	write := func(body string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", n))
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	for _, tc := range []struct {
		args []string
		env  [2]string
		want []string
	}{
		{args: []string{"--config", write("compaction:\n  keepRecentToken: 30000\n")}, want: []string{".yaml:2", "compaction.keepRecentToken", "did you mean compaction.keepRecentTokens"}},
		{args: []string{"--config", write("compaction:\n  keepRecentTokens: \"lots\"\n")}, want: []string{".yaml:2", "compaction.keepRecentTokens", "not an integer"}},
		{args: []string{"--config", write("compaction:\n  keepRecentTokens: -1\n")}, want: []string{"compaction.keepRecentTokens", "must not be negative"}},
		{args: []string{"--config", filepath.Join(dir, "missing.yaml")}, want: []string{"missing.yaml", "no such file"}},
		{env: [2]string{"CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "abc"}, want: []string{"CTXTOOL_COMPACTION_KEEPRECENTTOKENS", "compaction.keepRecentTokens", "not an integer"}},
		{args: []string{"--keep-recent-tokens", "-5"}, want: []string{"--keep-recent-tokens -5", "compaction.keepRecentTokens", "must not be negative"}},
		{args: []string{"--strategy", "fast"}, want: []string{"--strategy fast", "default, safeguard, summarize"}},
	} {
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], tc.env[1])
		}
		args := append([]string{"compact", f, "--dry-run", "--summarizer", "extractive"}, tc.args...)
		_, errOut, code := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%v %v: exit %d, want 2\n%s", tc.args, tc.env, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v %v: stderr lacks %q:\n%s", tc.args, tc.env, w, errOut)
			}
		}
		if strings.Contains(errOut, "syntax") {
			t.Errorf("%v: not a syntax error: %s", tc.args, errOut)
		}
		if tc.env[0] != "" {
			t.Setenv(tc.env[0], "")
		}
	}
}

// Shell completion offers the values of every enumerated flag.
func TestCompletionOfEnumFlags(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		cmd, flag string
		want      []string
	}{
		{"estimate", "--tokenizer", estimate.Methods()},
		{"roll", "--tokenizer", estimate.Methods()},
		{"compact", "--tokenizer", estimate.Methods()},
		{"compact", "--strategy", enumOf(t, "compaction.mode")},
		{"compact", "--summarizer", enumOf(t, "compaction.summarizer")},
		{"restore", "--format", []string{"text", "yaml", "json"}},
		{"checkpoint", "--trigger", checkpoint.Triggers()},
	} {
		out, _ := runOK(t, "__complete", tc.cmd, tc.flag, "")
		// values, one a line, then cobra's ":<directive>" line
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, ":") {
				break
			}
			got = append(got, strings.Fields(l)...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s completes %q, want %q", tc.cmd, tc.flag, got, tc.want)
		}
	}
}

// enumOf is the key table's list of a key's values.
func enumOf(t *testing.T, key string) []string {
	k, ok := config.Lookup(key)
	if !ok || len(k.Enum) == 0 {
		t.Fatalf("%s has no values in the key table", key)
	}
	return k.Enum
}
