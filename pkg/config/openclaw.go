package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// readOpenClaw reads an openclaw.json (JSON5: comments, trailing commas,
// unquoted keys, single-quoted strings) and returns the settings under
// agents.defaults.compaction and agents.defaults.contextManagement as flat
// ctxtool keys ("compaction.mode", "contextManagement.budget.x", …), and
// agents.defaults.contextTokens (the window cap) as contextTokens.
func readOpenClaw(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("openclaw config %s: %w", path, err)
	}
	plain, err := json5ToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("openclaw config %s: %w (is it JSON5?)", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(plain, &doc); err != nil {
		return nil, fmt.Errorf("openclaw config %s: %w (is it JSON5?)", path, err)
	}
	out := map[string]any{}
	defaults, _ := dig(doc, "agents", "defaults").(map[string]any)
	for _, section := range []string{"compaction", "contextManagement"} {
		if m, ok := defaults[section].(map[string]any); ok {
			flatten(section, m, out)
		}
	}
	// agents.defaults.contextTokens caps every model's context window.
	if v, ok := defaults["contextTokens"]; ok {
		out["contextTokens"] = v
	}
	return out, nil
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := prefix + "." + k
		if sub, ok := v.(map[string]any); ok {
			flatten(key, sub, out)
			continue
		}
		out[key] = v
	}
}

// json5ToJSON rewrites the JSON5 features OpenClaw configs use into plain
// JSON: // and /* */ comments, trailing commas, unquoted object keys and
// single-quoted strings.
func json5ToJSON(in []byte) ([]byte, error) {
	var out bytes.Buffer
	i, n := 0, len(in)
	line := 1
	for i < n {
		c := in[i]
		switch {
		case c == '\n':
			line++
			out.WriteByte(c)
			i++
		case c == '"' || c == '\'':
			j, s, err := readQuoted(in, i)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			b, _ := json.Marshal(s)
			out.Write(b)
			i = j
		case c == '/' && i+1 < n && in[i+1] == '/':
			for i < n && in[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && in[i+1] == '*':
			end := bytes.Index(in[i+2:], []byte("*/"))
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated /* comment", line)
			}
			line += bytes.Count(in[i:i+2+end], []byte("\n"))
			i += 2 + end + 2
		case c == ',':
			// Drop the comma when the next significant character closes a container.
			j := skipSpaceAndComments(in, i+1)
			if j < n && (in[j] == '}' || in[j] == ']') {
				i++
				continue
			}
			out.WriteByte(c)
			i++
		case isIdentStart(c):
			j := i
			for j < n && isIdentPart(in[j]) {
				j++
			}
			word := string(in[i:j])
			k := skipSpaceAndComments(in, j)
			if k < n && in[k] == ':' && !isLiteral(word) {
				b, _ := json.Marshal(word)
				out.Write(b)
			} else {
				out.WriteString(word)
			}
			i = j
		default:
			out.WriteByte(c)
			i++
		}
	}
	return out.Bytes(), nil
}

func isLiteral(w string) bool { return w == "true" || w == "false" || w == "null" }

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func skipSpaceAndComments(in []byte, i int) int {
	for i < len(in) {
		switch {
		case in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r':
			i++
		case in[i] == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				i++
			}
		case in[i] == '/' && i+1 < len(in) && in[i+1] == '*':
			end := bytes.Index(in[i+2:], []byte("*/"))
			if end < 0 {
				return len(in)
			}
			i += 2 + end + 2
		default:
			return i
		}
	}
	return i
}

// readQuoted decodes a JSON5 string starting at in[i] (either quote).
func readQuoted(in []byte, i int) (int, string, error) {
	q := in[i]
	var sb strings.Builder
	j := i + 1
	for j < len(in) {
		c := in[j]
		if c == q {
			return j + 1, sb.String(), nil
		}
		if c == '\\' && j+1 < len(in) {
			e := in[j+1]
			switch e {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case 'r':
				sb.WriteByte('\r')
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'u':
				if j+6 <= len(in) {
					var r rune
					if _, err := fmt.Sscanf(string(in[j+2:j+6]), "%04x", &r); err == nil {
						sb.WriteRune(r)
						j += 6
						continue
					}
				}
				return 0, "", fmt.Errorf("bad \\u escape")
			case '\n':
				// line continuation
			default:
				sb.WriteByte(e)
			}
			j += 2
			continue
		}
		if c == '\n' {
			return 0, "", fmt.Errorf("unterminated string")
		}
		sb.WriteByte(c)
		j++
	}
	return 0, "", fmt.Errorf("unterminated string")
}
