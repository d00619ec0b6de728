// Package config resolves settings with the precedence of the command-line
// contract: flag > environment (CTXTOOL_<KEY>, dots become underscores) >
// config file > OpenClaw config (--openclaw-config) > built-in default.
//
// Flags are not bound into viper globally: with cobra every command would
// bind the same key and the last one constructed would win. Instead a command
// asks for a value naming both its flag and the config key, and the flag wins
// only when the user actually set it.
//
// It owns the key table (keys: name, env, flag, default, doc, range) and the
// resolution above. It must not know what a setting means to a command: cmd
// reads values here and hands them to pkg/ packages as explicit options, and
// no other pkg/ package imports config.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Config is the resolved configuration of one process run.
type Config struct {
	v *viper.Viper
	// File is the config file that was read, "" if none.
	File string
}

// Load reads the config file (explicit path, else ./ctxtool.yaml, else
// $XDG_CONFIG_HOME/ctxtool/config.yaml), the environment and the optional
// OpenClaw config, and validates all of them against keys: an unknown key,
// a value of the wrong type or out of range is an error naming the file and
// line (or the variable), the key and what it expects. A missing default
// file is fine; a missing explicit file is an error.
func Load(explicit, openclawFile string) (*Config, error) {
	v := viper.New()
	for k, d := range Defaults() {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix("CTXTOOL")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	var errs []error
	if openclawFile != "" {
		oc, err := readOpenClaw(openclawFile)
		if err != nil {
			return nil, err
		}
		errs = append(errs, checkOpenClaw(openclawFile, oc))
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
		data, err := os.ReadFile(file)
		switch {
		case errors.Is(err, os.ErrNotExist) && explicit != "":
			return nil, fmt.Errorf("--config %s: no such file (create one with `ctxtool config example > FILE`, or leave out --config)", file)
		case err != nil:
			return nil, fmt.Errorf("config %s: %w", file, err)
		}
		if err := checkFile(file, data); err != nil {
			return nil, err
		}
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("config %s: %w (check the YAML syntax; `ctxtool config example` shows every key)", file, err)
		}
		c.File = file
	}
	errs = append(errs, checkEnvironment())
	if err := errors.Join(errs...); err != nil {
		return nil, err
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

// String returns the key's flag value when the user set the flag on fs
// (nil: no flags), else the key's value from environment, file or default.
func (c *Config) String(fs *pflag.FlagSet, key string) string {
	return lookup(fs, key, func(name string) (string, error) { return fs.Lookup(name).Value.String(), nil }, c.v.GetString)
}

// Int is String for integer keys.
func (c *Config) Int(fs *pflag.FlagSet, key string) int {
	return lookup(fs, key, fs.GetInt, c.v.GetInt)
}

// Float is String for number keys.
func (c *Config) Float(fs *pflag.FlagSet, key string) float64 {
	return lookup(fs, key, fs.GetFloat64, c.v.GetFloat64)
}

// Bool is String for boolean keys.
func (c *Config) Bool(fs *pflag.FlagSet, key string) bool {
	return lookup(fs, key, fs.GetBool, c.v.GetBool)
}

// Duration is String for duration keys.
func (c *Config) Duration(fs *pflag.FlagSet, key string) time.Duration {
	return lookup(fs, key, fs.GetDuration, c.v.GetDuration)
}

// lookup is the one precedence behind String, Int, Float, Bool and
// Duration: fromFlag reads the flag when the user set key's flag on fs, else
// fromConfig reads the key from environment, file or default. fromFlag's
// error is dropped, as each getter always did: changedFlag only returns the
// flag bound to the key, which has the key's type.
func lookup[T any](fs *pflag.FlagSet, key string, fromFlag func(name string) (T, error), fromConfig func(key string) T) T {
	k := mustKey(key)
	if f := changedFlag(fs, k); f != nil {
		v, _ := fromFlag(f.Name)
		return v
	}
	return fromConfig(k.Name)
}

// Sub returns the map under a key, e.g. "models".
func (c *Config) Sub(key string) map[string]any { return c.v.GetStringMap(key) }

// StateDir resolves the state directory: flag/env/config, else
// $XDG_STATE_HOME/ctxtool, else ~/.local/state/ctxtool.
func (c *Config) StateDir(fs *pflag.FlagSet) string {
	if f := changedFlag(fs, mustKey("stateDir")); f != nil {
		return f.Value.String()
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
