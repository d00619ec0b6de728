package checkpoint

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
	"unicode/utf8"
)

// File-operation classification of tool names (lower case substrings).
var (
	modifyTools = []string{"write", "edit", "create", "patch", "replace", "delete", "remove", "move", "rename", "insert", "append", "mkdir"}
	pathKeys    = []string{"path", "file_path", "filePath", "file", "filename", "notebook_path", "target_file"}
)

// argKeys are the argument keys a call's classification reads: pathKeys,
// then "paths" and "command", and for shell and patch tools (shell.go)
// "cmd" (Codex's exec_command), "input" (apply_patch) and the working
// directory.
var argKeys = append(append([]string{}, pathKeys...), "paths", "command", "cmd", "input", "workdir", "working_directory")

const (
	pathsKey   = 7  // index of "paths" in argKeys
	commandKey = 8  // of "command"
	cmdKey     = 9  // of "cmd"
	inputKey   = 10 // of "input"
	workdirKey = 11 // of "workdir"
	lastKey    = 12 // of "working_directory"
)

// callArgs is what a tool call's arguments say about files: the paths they
// name and whether the call modifies them, and the files its shell command
// or patch writes.
type callArgs struct {
	paths  []string
	modify bool
	writes []string
}

// argFacts is what a call's arguments say whatever the tool is named:
// the paths, whether "command" is "view" or "read" (an edit tool's
// command that does not modify), and the files written by the command
// (shell) or the patch (patch), should the tool be a shell or apply_patch.
type argFacts struct {
	paths        []string
	viewOnly     bool
	shell, patch []string
}

// classify reads a tool call's arguments for its paths and whether it
// modifies them.
func classify(tc ToolCall) callArgs { return tc.facts().of(tc.Name) }

// facts are tc's argFacts, read once: the fold and the capture both
// classify a call, under the call's or its result's tool name, and reading
// the arguments (validating them first) was a tenth of a checkpoint's CPU.
func (tc *ToolCall) facts() *argFacts {
	if tc.read == nil {
		f := readArgs(tc.Args, tc.scanned)
		tc.read = &f
	}
	return tc.read
}

// of classifies a call of the tool named name with these arguments.
func (a *argFacts) of(name string) callArgs {
	c := callArgs{paths: a.paths}
	name = strings.ToLower(name)
	for _, w := range modifyTools {
		if strings.Contains(name, w) {
			c.modify = true
			break
		}
	}
	if a.viewOnly && strings.Contains(name, "edit") {
		c.modify = false
	}
	if shellTools[name] {
		c.writes = a.shell
	}
	if name == "apply_patch" || name == "applypatch" {
		c.writes = a.patch
	}
	return c
}

// readArgs reads a call's arguments once (scanned: see ToolCall).
func readArgs(args json.RawMessage, scanned bool) argFacts {
	vals := argValues(args, scanned)
	var a argFacts
	if raw := vals[commandKey]; raw != nil {
		cmd, ok := jsonString(raw)
		a.viewOnly = ok && (cmd == "view" || cmd == "read")
	}
	for _, raw := range vals[:len(pathKeys)] {
		if raw == nil {
			continue
		}
		if s, ok := jsonString(raw); ok {
			a.paths = append(a.paths, s)
		}
	}
	if raw := vals[pathsKey]; raw != nil {
		var ss []string
		if json.Unmarshal(raw, &ss) == nil {
			a.paths = append(a.paths, ss...)
		}
	}
	clean := a.paths[:0]
	for _, p := range a.paths {
		p = strings.TrimSpace(Clean(p))
		if p != "" && len(p) <= 500 && !strings.ContainsAny(p, "\n\t") {
			clean = append(clean, p)
		}
	}
	a.paths = clean
	a.shell, a.patch = commandWrites(vals)
	return a
}

// commandWrites reads the files a shell command ("cmd", or "command" as
// a script or an argv) and a patch ("input") write, joined to an absolute
// working directory when the call gives one.
func commandWrites(vals [lastKey + 1][]byte) (shell, patch []string) {
	for _, k := range []int{cmdKey, commandKey} {
		raw := vals[k]
		if raw == nil {
			continue
		}
		if s, ok := jsonString(raw); ok {
			shell = append(shell, shellWrites(s)...)
		} else if raw[0] == '[' {
			var argv []string
			if json.Unmarshal(raw, &argv) == nil {
				shell = append(shell, argvWrites(argv)...)
			}
		}
	}
	if raw := vals[inputKey]; raw != nil {
		if s, ok := jsonString(raw); ok {
			patch = patchWrites(s)
		}
	}
	if shell == nil && patch == nil {
		return nil, nil
	}
	dir := ""
	for _, k := range []int{workdirKey, lastKey} {
		if s, ok := jsonString(vals[k]); ok && path.IsAbs(s) {
			dir = s
		}
	}
	return inDir(dir, shell), inDir(dir, patch)
}

// inDir joins the relative paths of ps to dir ("" leaves them).
func inDir(dir string, ps []string) []string {
	if dir == "" {
		return ps
	}
	for i, p := range ps {
		if !path.IsAbs(p) {
			ps[i] = path.Join(dir, p)
		}
	}
	return ps
}

// jsonString is json.Unmarshal of a valid JSON value into a string. A
// string without escapes in valid UTF-8, as paths nearly always are, is
// cut out of its quotes: the decoder on every path was a third of reading
// a call's arguments.
func jsonString(raw []byte) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : n-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// argValues is json.Unmarshal of a call's arguments into a
// map[string]json.RawMessage read for argKeys (raw values indexed like
// argKeys, nil when absent; the last of duplicate keys wins; none when
// the arguments are not a valid JSON object), without copying the values
// it skips: arguments hold whole written files, and copying them all was
// most of a 1 GB checkpoint's allocation. The values are an array, not a
// slice per call (a twelfth of what a 1 GB checkpoint allocated).
// Arguments the transcript's scanner read are valid but for
// encoding/json's nesting limit (JSON.parse has none): only that is
// checked (json.Valid on every call was a twentieth of a checkpoint's
// CPU).
func argValues(args []byte, scanned bool) (vals [lastKey + 1][]byte) {
	i := skipSpace(args, 0)
	if i == len(args) || args[i] != '{' {
		return vals
	}
	if scanned && !shallow(args) || !scanned && !json.Valid(args) {
		return vals
	}
	i = skipSpace(args, i+1)
	for args[i] != '}' {
		k := i
		i = skipString(args, i)
		key := args[k:i]
		i = skipSpace(args, skipSpace(args, i)+1) // past ':'
		v := i
		i = skipValue(args, i)
		if n := argKey(key); n >= 0 {
			vals[n] = args[v:i]
		}
		if i = skipSpace(args, i); args[i] == ',' {
			i = skipSpace(args, i+1)
		}
	}
	return vals
}

// maxDepth is encoding/json's nesting limit: deeper is invalid to it.
const maxDepth = 10000

// shallow reports whether valid JSON nests at most maxDepth deep.
func shallow(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
		case '{', '[':
			if depth++; depth > maxDepth {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}

// argKey is the index in argKeys of a quoted object key, -1 if none.
func argKey(quoted []byte) int {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var key string
		if json.Unmarshal(quoted, &key) != nil {
			return -1
		}
		raw = []byte(key)
	}
	for n, k := range argKeys {
		if string(raw) == k {
			return n
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString is the end of the valid JSON string starting at b[i].
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		i += j
		esc := 0
		for k := i - 1; b[k] == '\\'; k-- {
			esc++
		}
		i++
		if esc%2 == 0 {
			return i
		}
	}
}

// skipValue is the end of the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
		i++
	}
	return i
}
