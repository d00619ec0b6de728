package config

import (
	"fmt"
	"strconv"
	"strings"
)

// exampleHeader opens config.example.yaml.
const exampleHeader = `# ctxtool configuration — every key with its default.
# Generated from the key table in pkg/config/keys.go: edit it there, then run
#   go test ./pkg/config -run TestExampleConfig -update
#
# Precedence: command-line flag > environment > this file > --openclaw-config > default.
# Environment: CTXTOOL_<KEY> with dots as underscores (shown above each key).
# Files read: --config FILE, else ./ctxtool.yaml, else $XDG_CONFIG_HOME/ctxtool/config.yaml.
# Unknown keys, values of the wrong type and out-of-range values are errors (exit 2).
`

// Example renders config.example.yaml from keys: every key with its doc,
// its environment variable and flag, and its default. `ctxtool config
// example` prints it, so a binary install has the file too.
func Example() string {
	var b strings.Builder
	b.WriteString(exampleHeader)
	var open []string // sections currently open
	for _, k := range keys {
		parts := strings.Split(k.Name, ".")
		sections, leaf := parts[:len(parts)-1], parts[len(parts)-1]
		common := 0
		for common < len(open) && common < len(sections) && open[common] == sections[common] {
			common++
		}
		open = open[:common]
		for _, s := range sections[common:] {
			indent := strings.Repeat("  ", len(open))
			full := strings.Join(append(append([]string{}, open...), s), ".")
			if len(open) == 0 {
				b.WriteString("\n")
			}
			writeComment(&b, indent, sectionDocs[full])
			fmt.Fprintf(&b, "%s%s:\n", indent, s)
			open = append(open, s)
		}
		indent := strings.Repeat("  ", len(open))
		if len(open) == 0 {
			b.WriteString("\n")
		}
		writeComment(&b, indent, k.Doc)
		if k.Kind == Map {
			fmt.Fprintf(&b, "%s# %s:\n%s#   my-local-llama:\n%s#     contextWindow: 32768\n", indent, leaf, indent, indent)
			continue
		}
		where := "env " + k.Env()
		if k.Flag != "" {
			where = "flag --" + k.Flag + ", " + where
		}
		writeComment(&b, indent, "("+where+")")
		fmt.Fprintf(&b, "%s%s: %s\n", indent, leaf, yamlScalar(k.Default))
	}
	return b.String()
}

func writeComment(b *strings.Builder, indent, text string) {
	if text == "" {
		return
	}
	for _, para := range strings.Split(text, "\n") {
		line := indent + "#"
		for _, w := range strings.Fields(para) {
			if len(line)+1+len(w) > 80 && line != indent+"#" {
				b.WriteString(line + "\n")
				line = indent + "#"
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
}

func yamlScalar(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}
