package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// Validation turns every mistake in a setting into an error naming where
// it came from (file and line, variable, or flag), the key, and what was
// expected: a value that viper cannot convert would otherwise silently
// become the type's zero value, and an unknown key would be ignored.

// checkScalar validates one decoded value (YAML or JSON) against k and
// returns "" or what is wrong with it.
func checkScalar(k Key, v any) string {
	if v == nil {
		return fmt.Sprintf("has no value: give %s (remove the line to use the default %v)", k.Kind, k.Default)
	}
	switch k.Kind {
	case String:
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%s is not %s (quote it)", show(v), k.Kind)
		}
		return checkEnum(k, s)
	case Int:
		n, ok := asNumber(v)
		if !ok || n != math.Trunc(n) {
			return fmt.Sprintf("%s is not %s", show(v), k.Kind)
		}
		return k.Range.check(n)
	case Float:
		n, ok := asNumber(v)
		if !ok {
			return fmt.Sprintf("%s is not %s", show(v), k.Kind)
		}
		return k.Range.check(n)
	case Bool:
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%s is not %s", show(v), k.Kind)
		}
	case Duration:
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%s is not %s", show(v), k.Kind)
		}
		if _, err := time.ParseDuration(s); err != nil {
			return fmt.Sprintf("%s is not %s", show(v), k.Kind)
		}
	case Map:
		return checkModels(v)
	}
	return ""
}

// checkEnv validates the text of an environment variable against k.
func checkEnv(k Key, s string) string {
	switch k.Kind {
	case String:
		return checkEnum(k, s)
	case Int:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Sprintf("%q is not %s", s, k.Kind)
		}
		return k.Range.check(float64(n))
	case Float:
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Sprintf("%q is not %s", s, k.Kind)
		}
		return k.Range.check(n)
	case Bool:
		if _, err := strconv.ParseBool(strings.TrimSpace(s)); err != nil {
			return fmt.Sprintf("%q is not %s", s, k.Kind)
		}
	case Duration:
		if _, err := time.ParseDuration(strings.TrimSpace(s)); err != nil {
			return fmt.Sprintf("%q is not %s", s, k.Kind)
		}
	case Map:
		return "cannot be set from the environment: use a config file"
	}
	return ""
}

func checkEnum(k Key, s string) string {
	if len(k.Enum) == 0 {
		return ""
	}
	for _, e := range k.Enum {
		// an entry ending in ':' is a prefix taking a value: exec:COMMAND
		prefix := strings.HasSuffix(e, ":")
		if (s == e && !prefix) || (prefix && strings.HasPrefix(s, e) && strings.TrimSpace(s[len(e):]) != "") {
			return ""
		}
		if prefix && strings.HasPrefix(s, e) {
			return fmt.Sprintf("%q needs a value after %q", s, e)
		}
	}
	return fmt.Sprintf("%q is not one of %s", s, strings.Join(k.Enum, ", "))
}

// checkModels validates models.<name>.contextWindow|contextTokens.
func checkModels(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprintf("%s is not %s (models: {my-model: {contextWindow: 32768}})", show(v), Map)
	}
	var probs []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			val := m[name]
			switch strings.ToLower(name) {
			case "contextwindow", "contexttokens":
				if n, ok := asNumber(val); !ok || n != math.Trunc(n) || n <= 0 {
					probs = append(probs, fmt.Sprintf("%s.%s: %s is not a positive integer", prefix, name, show(val)))
				}
				continue
			}
			sub, ok := val.(map[string]any)
			if !ok {
				probs = append(probs, fmt.Sprintf("%s: unknown setting (a model takes contextWindow)", strings.TrimPrefix(prefix+"."+name, ".")))
				continue
			}
			walk(strings.TrimPrefix(prefix+"."+name, "."), sub)
		}
	}
	walk("", m)
	return strings.Join(probs, "; ")
}

func asNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if _, ok := v.(map[string]any); ok {
		return "a section"
	}
	if _, ok := v.([]any); ok {
		return "a list"
	}
	return fmt.Sprint(v)
}

// checkFile validates a YAML config file: every leaf must be a known key
// of the right type, every mapping a section. Errors carry file:line.
func checkFile(file string, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config %s: %w (check the YAML syntax; `ctxtool config example` shows every key)", file, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config %s:%d: expected keys (key: value), found %s", file, root.Line, nodeKind(root))
	}
	var errs []error
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			name := kn.Value
			if prefix != "" {
				name = prefix + "." + kn.Value
			}
			at := fmt.Sprintf("config %s:%d: %s", file, kn.Line, name)
			if k, ok := Lookup(name); ok {
				var v any
				if err := vn.Decode(&v); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", at, err))
					continue
				}
				if p := checkScalar(k, normalize(v)); p != "" {
					errs = append(errs, fmt.Errorf("%s: %s", at, p))
				}
				continue
			}
			if section(name) {
				if vn.Kind != yaml.MappingNode {
					if vn.Tag == "!!null" {
						continue // an empty section
					}
					errs = append(errs, fmt.Errorf("%s: is a section: put its keys under it (see `ctxtool config example`)", at))
					continue
				}
				walk(name, vn)
				continue
			}
			errs = append(errs, fmt.Errorf("%s: unknown key%s", at, didYouMean(name)))
		}
	}
	walk("", root)
	return errors.Join(errs...)
}

func didYouMean(name string) string {
	if s := suggest(name); s != "" {
		return fmt.Sprintf(" (did you mean %s? `ctxtool config example` lists every key)", s)
	}
	return " (`ctxtool config example` lists every key)"
}

// normalize turns yaml.v3's map[string]interface{} trees and ints into the
// shapes checkScalar expects.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = normalize(val)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[fmt.Sprint(k)] = normalize(val)
		}
		return out
	}
	return v
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// checkEnvironment validates the CTXTOOL_ variables that set keys, and
// reports variables in a config section's namespace (CTXTOOL_COMPACTION_…)
// that set nothing: a typo there would otherwise be silently ignored.
func checkEnvironment() error {
	known := map[string]bool{}
	for name := range envOnly {
		known[name] = true
	}
	var errs []error
	for _, k := range keys {
		env := k.Env()
		known[env] = true
		s := os.Getenv(env)
		if s == "" {
			continue
		}
		if p := checkEnv(k, s); p != "" {
			errs = append(errs, fmt.Errorf("environment %s (%s): %s", env, k.Name, p))
		}
	}
	prefixes := map[string]bool{}
	for _, k := range keys {
		if i := strings.Index(k.Name, "."); i > 0 {
			prefixes["CTXTOOL_"+strings.ToUpper(k.Name[:i])+"_"] = true
		}
	}
	var unknown []string
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if known[name] || val == "" || !strings.HasPrefix(name, "CTXTOOL_") {
			continue
		}
		for p := range prefixes {
			if strings.HasPrefix(name, p) {
				unknown = append(unknown, name)
				break
			}
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		hint := ""
		guess := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "CTXTOOL_"), "_", "."))
		if s := suggest(guess); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", mustKey(s).Env())
		}
		errs = append(errs, fmt.Errorf("environment %s: no such setting%s; `ctxtool config example` lists every key and its variable", name, hint))
	}
	return errors.Join(errs...)
}

// checkOpenClaw validates the values an openclaw.json gives keys that
// ctxtool reads; OpenClaw's other settings are not ours to judge.
func checkOpenClaw(file string, values map[string]any) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(values)) {
		k, ok := Lookup(name)
		if !ok {
			continue
		}
		if p := checkScalar(k, values[name]); p != "" {
			errs = append(errs, fmt.Errorf("openclaw config %s: agents.defaults.%s: %s", file, name, p))
		}
	}
	return errors.Join(errs...)
}

// flagAnnotation marks a flag defined from a Key, so that validation and
// lookups never mistake another command's flag of the same name (checkpoint
// --trigger is not compaction.rolling.trigger) for the key's.
const flagAnnotation = "ctxtool/config-key"

// Flag defines the key's command-line flag on fs, with the table's default
// and doc, and returns it.
func Flag(fs *pflag.FlagSet, name string) *pflag.Flag {
	k := mustKey(name)
	if k.Flag == "" {
		panic(fmt.Sprintf("config: %s has no flag in the key table (pkg/config/keys.go)", k.Name))
	}
	usage := fmt.Sprintf("%s (config %s)", k.Doc, k.Name)
	switch k.Kind {
	case String:
		fs.String(k.Flag, k.Default.(string), usage)
	case Int:
		fs.Int(k.Flag, k.Default.(int), usage)
	case Float:
		fs.Float64(k.Flag, k.Default.(float64), usage)
	case Bool:
		fs.Bool(k.Flag, k.Default.(bool), usage)
	case Duration:
		d, _ := time.ParseDuration(k.Default.(string))
		fs.Duration(k.Flag, d, usage)
	default:
		panic(fmt.Sprintf("config: %s (%s) cannot be a flag", k.Name, k.Kind))
	}
	f := fs.Lookup(k.Flag)
	f.Annotations = map[string][]string{flagAnnotation: {k.Name}}
	return f
}

// FlagKey returns the key a flag was defined from, if any.
func FlagKey(f *pflag.Flag) (Key, bool) {
	if f == nil || len(f.Annotations[flagAnnotation]) == 0 {
		return Key{}, false
	}
	return Lookup(f.Annotations[flagAnnotation][0])
}

// CheckFlags validates the flags the user set that stand for config keys
// (enum values and ranges), naming the flag and the key.
func CheckFlags(fs *pflag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		if k, ok := FlagKey(f); ok {
			if err := checkText(k, f.Value.String()); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// CheckValue validates a key's value that came neither from Load nor from
// a flag CheckFlags saw (a caller's own options), against the same rules
// and in the same words as CheckFlags.
func CheckValue(name string, v any) error {
	return checkText(mustKey(name), fmt.Sprint(v))
}

// checkText checks the text of a value of k (enum or range) and says what
// is wrong as CheckFlags says it.
func checkText(k Key, text string) error {
	var p string
	switch k.Kind {
	case String:
		p = checkEnum(k, text)
	case Int, Float:
		n, err := strconv.ParseFloat(text, 64)
		if err == nil {
			p = k.Range.check(n)
		}
	}
	if p == "" {
		return nil
	}
	if k.Flag == "" {
		return fmt.Errorf("%s %s: %s", k.Name, text, p)
	}
	return fmt.Errorf("--%s %s: %s (config %s)", k.Flag, text, p, k.Name)
}

// changedFlag is the flag standing for key that the user set, or nil.
func changedFlag(fs *pflag.FlagSet, k Key) *pflag.Flag {
	if fs == nil || k.Flag == "" {
		return nil
	}
	f := fs.Lookup(k.Flag)
	if f == nil || !f.Changed {
		return nil
	}
	if fk, ok := FlagKey(f); !ok || fk.Name != k.Name {
		return nil
	}
	return f
}
