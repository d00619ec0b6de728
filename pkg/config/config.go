// Package config resolves settings with the precedence of the command-line
// contract: flag > environment (CTXTOOL_<KEY>, dots become underscores) >
// config file > OpenClaw config (--openclaw-config) > built-in default.
//
// Flags are not bound into viper globally: with cobra every command would
// bind the same key and the last one constructed would win. Instead a command
// asks for a value naming both its flag and the config key, and the flag wins
// only when the user actually set it.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Defaults holds every configuration key and its default value. Keep it in
// step with config.example.yaml (a test checks that they agree).
var Defaults = map[string]any{
	"stateDir": "",

	"estimate.tokenizer": "auto",
	"contextWindow":      0,
	"model":              "",

	"llm.baseURL":        "",
	"llm.model":          "",
	"llm.apiKey":         "",
	"llm.embeddingModel": "",
	"llm.timeout":        "120s",
	"llm.deadline":       "10m",
	"llm.maxRetries":     4,

	"compaction.mode":                      "default",
	"compaction.summarizer":                "auto",
	"compaction.reserveTokens":             16384,
	"compaction.keepRecentTokens":          20000,
	"compaction.reserveTokensFloor":        20000,
	"compaction.maxHistoryShare":           0.5,
	"compaction.recentTurnsPreserve":       3,
	"compaction.identifierPolicy":          "strict",
	"compaction.identifierInstructions":    "",
	"compaction.customInstructions":        "",
	"compaction.qualityGuard.enabled":      false,
	"compaction.qualityGuard.maxRetries":   1,
	"compaction.summarize.protectedTail":   6,
	"compaction.summarize.maxInputChars":   100000,
	"compaction.summarize.maxOutputTokens": 4096,
	"compaction.summarize.thresholdTokens": 80000,
	"compaction.summarize.fallback":        "trim",
	"compaction.extractive.maxChars":       12000,

	"compaction.rolling.targetUtilization": 0.8,
	"compaction.rolling.minKeepMessages":   10,
	"compaction.rolling.evictionNote":      true,
	"compaction.rolling.trigger":           0.0,

	"recall.enabled": true,
	// recall.url puts the index in PostgreSQL (postgres://…) or another
	// SQLite file; "" = <stateDir>/recall/index.sqlite.
	"recall.url":        "",
	"recall.maxResults": 6,
	"recall.minScore":   0.35,
	// recall.toolOutputChars caps the indexed text of one tool result, tool
	// call, thinking block or bash run (head + tail kept).
	"recall.toolOutputChars": 4000,

	"checkpoint.keep":            5,
	"checkpoint.dedupeThreshold": 0.05,
}

// Config is the resolved configuration of one process run.
type Config struct {
	v *viper.Viper
	// File is the config file that was read, "" if none.
	File string
}

// Load reads the config file (explicit path, else ./ctxtool.yaml, else
// $XDG_CONFIG_HOME/ctxtool/config.yaml) and the optional OpenClaw config.
// A missing default file is fine; a missing explicit file is an error.
func Load(explicit, openclawFile string) (*Config, error) {
	v := viper.New()
	for k, d := range Defaults {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix("CTXTOOL")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	if openclawFile != "" {
		oc, err := ReadOpenClaw(openclawFile)
		if err != nil {
			return nil, err
		}
		for k, val := range oc {
			v.SetDefault(k, val)
		}
	}

	c := &Config{v: v}
	file := explicit
	if file == "" {
		for _, cand := range defaultFiles() {
			if _, err := os.Stat(cand); err == nil {
				file = cand
				break
			}
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config %s: %v (check the YAML syntax; config.example.yaml shows every key)", file, err)
		}
		c.File = file
	}
	return c, nil
}

func defaultFiles() []string {
	files := []string{"ctxtool.yaml"}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		if home, err := os.UserHomeDir(); err == nil {
			xdg = filepath.Join(home, ".config")
		}
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "ctxtool", "config.yaml"))
	}
	return files
}

// flagSet reports whether the named flag exists in fs and was set by the user.
func flagSet(fs *pflag.FlagSet, name string) bool {
	if fs == nil || name == "" {
		return false
	}
	f := fs.Lookup(name)
	return f != nil && f.Changed
}

// String returns the flag's value when set, else the key's resolved value.
func (c *Config) String(fs *pflag.FlagSet, flag, key string) string {
	if flagSet(fs, flag) {
		s, _ := fs.GetString(flag)
		return s
	}
	return c.v.GetString(key)
}

// Int returns the flag's value when set, else the key's resolved value.
func (c *Config) Int(fs *pflag.FlagSet, flag, key string) int {
	if flagSet(fs, flag) {
		n, _ := fs.GetInt(flag)
		return n
	}
	return c.v.GetInt(key)
}

// Float returns the flag's value when set, else the key's resolved value.
func (c *Config) Float(fs *pflag.FlagSet, flag, key string) float64 {
	if flagSet(fs, flag) {
		n, _ := fs.GetFloat64(flag)
		return n
	}
	return c.v.GetFloat64(key)
}

// Bool returns the flag's value when set, else the key's resolved value.
func (c *Config) Bool(fs *pflag.FlagSet, flag, key string) bool {
	if flagSet(fs, flag) {
		b, _ := fs.GetBool(flag)
		return b
	}
	return c.v.GetBool(key)
}

// Duration returns the flag's value when set, else the key's resolved value.
func (c *Config) Duration(fs *pflag.FlagSet, flag, key string) time.Duration {
	if flagSet(fs, flag) {
		d, _ := fs.GetDuration(flag)
		return d
	}
	return c.v.GetDuration(key)
}

// Sub returns the map under a key, e.g. "models".
func (c *Config) Sub(key string) map[string]any { return c.v.GetStringMap(key) }

// StateDir resolves the state directory: flag/env/config, else
// $XDG_STATE_HOME/ctxtool, else ~/.local/state/ctxtool.
func (c *Config) StateDir(fs *pflag.FlagSet) string {
	if flagSet(fs, "state-dir") {
		d, _ := fs.GetString("state-dir")
		return d
	}
	// The documented variable comes before the config file; viper's own
	// mapping of "stateDir" (CTXTOOL_STATEDIR) is honoured by the lookup below.
	if d := os.Getenv("CTXTOOL_STATE_DIR"); d != "" {
		return d
	}
	if d := c.v.GetString("stateDir"); d != "" {
		return d
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "ctxtool")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "ctxtool-state")
	}
	return filepath.Join(home, ".local", "state", "ctxtool")
}
