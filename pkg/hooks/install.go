package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Install writes ctxtool's hooks and MCP server into an agent's config
// files; Uninstall takes them out again. Both edit the files as text
// (jsonedit.go; config.toml by one appended table), so the user's other
// settings keep every byte, and install-then-uninstall gives back the
// file it started from.

// HookTimeout is the timeout (seconds) written with each hook: ctxtool's
// own --timeout answers sooner; the agent's kill is the backstop.
const HookTimeout = 15

// Events are the hook events installed for each agent.
var Events = map[string][]string{
	ClaudeCode: {"PreCompact", "SessionStart", "PostCompact", "UserPromptSubmit", "Stop"},
	Codex:      {"PreCompact", "SessionStart", "PostCompact", "UserPromptSubmit", "Stop"},
}

// Paths are an agent's config files.
type Paths struct {
	// Hooks is Claude Code's settings.json or Codex's hooks.json.
	Hooks string
	// MCP is Claude Code's ~/.claude.json or Codex's config.toml.
	MCP string
}

// AgentPaths are the config files of agent for a user with home
// ($CLAUDE_CONFIG_DIR and $CODEX_HOME honoured as the agents do).
func AgentPaths(agent, home string) (Paths, error) {
	switch agent {
	case ClaudeCode:
		dir := os.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			return Paths{Hooks: filepath.Join(home, ".claude", "settings.json"), MCP: filepath.Join(home, ".claude.json")}, nil
		}
		return Paths{Hooks: filepath.Join(dir, "settings.json"), MCP: filepath.Join(dir, ".claude.json")}, nil
	case Codex:
		dir := os.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		return Paths{Hooks: filepath.Join(dir, "hooks.json"), MCP: filepath.Join(dir, "config.toml")}, nil
	}
	return Paths{}, fmt.Errorf("agent %q: ctxtool installs into pi, claude-code and codex", agent)
}

// Change is what install or uninstall does to one file.
type Change struct {
	Path string `json:"path"`
	// Change is "create", "update", "remove" or "unchanged".
	Change string `json:"change"`
	// What names the entries: "hooks", "mcp server", "statusLine".
	What string `json:"what"`
	Note string `json:"note,omitempty"`
	// Before and After are the file's bytes (not printed; for tests and
	// --dry-run diffs).
	Before []byte `json:"-"`
	After  []byte `json:"-"`
}

// quote is a POSIX shell word.
func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hookCommand is the command line of agent's hooks.
func hookCommand(binary, agent string) string { return quote(binary) + " hook --agent " + agent }

// isOurs reports whether a hook group (an element of an event's array)
// is one ctxtool installed for agent.
func isOurs(raw []byte, agent string) bool {
	var g struct {
		Hooks []struct {
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if json.Unmarshal(raw, &g) != nil || len(g.Hooks) != 1 {
		return false
	}
	return strings.HasSuffix(g.Hooks[0].Command, " hook --agent "+agent)
}

func hookGroup(binary, agent string) map[string]any {
	return map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hookCommand(binary, agent), "timeout": HookTimeout}}}
}

// Edit computes the changes to agent's files (nothing written).
func Edit(agent string, p Paths, binary string, remove bool) ([]Change, error) {
	before, err := read(p.Hooks)
	if err != nil {
		return nil, err
	}
	data, err := editHooks(start(before), agent, binary, remove)
	note := ""
	if err == nil && agent == ClaudeCode {
		data, note, err = editStatusLine(data, binary, remove)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w (fix the file, then try again)", p.Hooks, err)
	}
	out := []Change{change(p.Hooks, "hooks", before, finish(before, data), note)}
	if before, err = read(p.MCP); err != nil {
		return nil, err
	}
	if agent == ClaudeCode {
		data, err = editClaudeMCP(start(before), binary, remove)
		data = finish(before, data)
	} else {
		data, err = editCodexMCP(before, binary, remove)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.MCP, err)
	}
	return append(out, change(p.MCP, "mcp server", before, data, "")), nil
}

// Apply writes the changes (temp + fsync + rename, keeping the mode).
func Apply(cs []Change) error {
	for _, c := range cs {
		switch c.Change {
		case "unchanged":
		case "remove":
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		default:
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
				return err
			}
			mode := os.FileMode(0o600)
			if fi, err := os.Stat(c.Path); err == nil {
				mode = fi.Mode().Perm()
			}
			if err := safefile.WriteFile(c.Path, c.After, mode); err != nil {
				return err
			}
		}
	}
	return nil
}

// read returns a file's bytes; nil when it does not exist.
func read(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

func change(path, what string, before, after []byte, note string) Change {
	c := Change{Path: path, What: what, Before: before, After: after, Note: note}
	switch {
	case bytes.Equal(before, after):
		c.Change = "unchanged"
	case before == nil:
		c.Change = "create"
	case after == nil:
		c.Change = "remove"
	default:
		c.Change = "update"
	}
	return c
}

// emptyDoc is what a file ctxtool creates starts from; a file that comes
// back to it on uninstall is removed.
const emptyDoc = "{}\n"

func start(data []byte) []byte {
	if data == nil {
		return []byte(emptyDoc)
	}
	return data
}

// finish is the file after the edit: nil (no file) when ctxtool created
// it and it is back to empty.
func finish(before, data []byte) []byte {
	if string(data) != emptyDoc || string(before) == emptyDoc {
		return data
	}
	if before == nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(before, &m) == nil && onlyOurs(m) {
		return nil
	}
	return data
}

// editHooks adds (or removes) ctxtool's group in each event's array of
// the top-level "hooks" object.
func editHooks(data []byte, agent, binary string, remove bool) ([]byte, error) {
	if !remove && hooksCurrent(data, agent, binary) {
		return data, nil
	}
	// Take out every group of ours first (an install over an older one
	// replaces it), one at a time, re-reading the spans after each cut.
	for {
		next, done, err := removeOneHook(data, agent)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		data = next
	}
	if remove {
		return data, nil
	}
	r, ms, err := topMembers(data)
	if err != nil {
		return nil, err
	}
	h := find(ms, "hooks")
	if h == nil {
		all := map[string]any{}
		for _, ev := range Events[agent] {
			all[ev] = []any{hookGroup(binary, agent)}
		}
		return addMember(data, r, "hooks", all)
	}
	if data[h.val.start] != '{' {
		return nil, fmt.Errorf(`"hooks" is not an object`)
	}
	for _, ev := range Events[agent] {
		r, _ = root(data)
		ms, _ = members(data, r)
		h = find(ms, "hooks")
		hm, err := members(data, h.val)
		if err != nil {
			return nil, err
		}
		if e := find(hm, ev); e != nil {
			if data[e.val.start] != '[' {
				return nil, fmt.Errorf(`"hooks.%s" is not an array`, ev)
			}
			data, err = addElement(data, e.val, hookGroup(binary, agent))
		} else {
			data, err = addMember(data, h.val, ev, []any{hookGroup(binary, agent)})
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// hooksCurrent reports whether every event has exactly one group of
// ctxtool's, the one install would write.
func hooksCurrent(data []byte, agent, binary string) bool {
	var doc struct {
		Hooks map[string][]json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	want, _ := json.Marshal(hookGroup(binary, agent))
	for ev, groups := range doc.Hooks {
		n := 0
		for _, g := range groups {
			if isOurs(g, agent) {
				var a, b any
				json.Unmarshal(g, &a)
				json.Unmarshal(want, &b)
				if !reflect.DeepEqual(a, b) {
					return false
				}
				n++
			}
		}
		if n != 0 && !slices.Contains(Events[agent], ev) || n > 1 {
			return false
		}
	}
	for _, ev := range Events[agent] {
		n := 0
		for _, g := range doc.Hooks[ev] {
			if isOurs(g, agent) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	return true
}

// onlyOurs reports whether a config holds nothing but ctxtool's entries.
func onlyOurs(m map[string]any) bool {
	for k := range m {
		if k != "hooks" && k != "mcpServers" && k != "statusLine" {
			return false
		}
	}
	return true
}

// removeOneHook removes one of agent's groups (or an event array or the
// hooks object left empty by removing ours); done when none is left.
func removeOneHook(data []byte, agent string) ([]byte, bool, error) {
	r, ms, err := topMembers(data)
	if err != nil {
		return nil, false, err
	}
	hk := -1
	for i, m := range ms {
		if m.key == "hooks" {
			hk = i
		}
	}
	if hk < 0 || data[ms[hk].val.start] != '{' {
		return data, true, nil
	}
	hooksObj := ms[hk].val
	hm, err := members(data, hooksObj)
	if err != nil {
		return nil, false, err
	}
	for k, ev := range hm {
		if data[ev.val.start] != '[' {
			continue
		}
		es, err := elements(data, ev.val)
		if err != nil {
			return nil, false, err
		}
		var ours []int
		for i, e := range es {
			if isOurs(data[e.start:e.end], agent) {
				ours = append(ours, i)
			}
		}
		switch {
		case len(ours) == 0:
			continue
		case len(ours) == len(es):
			// Only ours: the event goes, and the hooks object with it
			// when it was its last event.
			if len(hm) == 1 {
				return removeMember(data, r, ms, hk), false, nil
			}
			return removeMember(data, hooksObj, hm, k), false, nil
		default:
			return removeElement(data, ev.val, es, ours[len(ours)-1]), false, nil
		}
	}
	return data, true, nil
}

// editStatusLine sets Claude Code's statusLine to ctxtool's gauge when
// the user has none, and removes it on uninstall when it is ctxtool's.
func editStatusLine(data []byte, binary string, remove bool) ([]byte, string, error) {
	r, ms, err := topMembers(data)
	if err != nil {
		return nil, "", err
	}
	var cur struct {
		Command string `json:"command"`
	}
	for k, m := range ms {
		if m.key != "statusLine" {
			continue
		}
		json.Unmarshal(data[m.val.start:m.val.end], &cur)
		ours := strings.HasSuffix(cur.Command, " statusline") && strings.Contains(cur.Command, "ctxtool")
		switch {
		case remove && ours:
			return removeMember(data, r, ms, k), "", nil
		case ours || remove:
			return data, "", nil
		}
		return data, "kept your statusLine (ctxtool statusline is the gauge; see its help)", nil
	}
	if remove {
		return data, "", nil
	}
	data, err = addMember(data, r, "statusLine", map[string]any{"type": "command", "command": quote(binary) + " statusline"})
	return data, "", err
}

// mcpEntry is the ~/.claude.json entry `claude mcp add --scope user
// ctxtool -- BINARY mcp` writes.
func mcpEntry(binary string) map[string]any {
	return map[string]any{"type": "stdio", "command": binary, "args": []string{"mcp"}, "env": map[string]any{}}
}

func editClaudeMCP(data []byte, binary string, remove bool) ([]byte, error) {
	r, ms, err := topMembers(data)
	if err != nil {
		return nil, err
	}
	mk := -1
	for i, m := range ms {
		if m.key == "mcpServers" {
			mk = i
		}
	}
	if mk < 0 {
		if remove {
			return data, nil
		}
		return addMember(data, r, "mcpServers", map[string]any{"ctxtool": mcpEntry(binary)})
	}
	srv := ms[mk].val
	if data[srv.start] != '{' {
		return nil, fmt.Errorf(`"mcpServers" is not an object`)
	}
	sm, err := members(data, srv)
	if err != nil {
		return nil, err
	}
	for k, m := range sm {
		if m.key != "ctxtool" {
			continue
		}
		var cur struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		json.Unmarshal(data[m.val.start:m.val.end], &cur)
		if filepath.Base(cur.Command) != "ctxtool" && cur.Command != binary && !remove {
			return nil, fmt.Errorf(`mcpServers.ctxtool runs %q, not a ctxtool binary: rename or remove it first`, cur.Command)
		}
		if !remove && cur.Command == binary && len(cur.Args) == 1 && cur.Args[0] == "mcp" {
			return data, nil
		}
		if len(sm) == 1 {
			data = removeMember(data, r, ms, mk)
		} else {
			data = removeMember(data, srv, sm, k)
		}
		if remove {
			return data, nil
		}
		return editClaudeMCP(data, binary, false)
	}
	if remove {
		return data, nil
	}
	return addMember(data, srv, "ctxtool", mcpEntry(binary))
}

// codexTable is the config.toml table install appends; uninstall removes
// exactly this text. joined marks a table that also ended the file's
// last line (it had no line break), which uninstall takes back too.
func codexTable(binary string, joined bool) string {
	b, _ := json.Marshal(binary) // a TOML basic string is a JSON string for paths
	mark := ""
	if joined {
		mark = " and the line break before it"
	}
	// Its tools only read the user's own sessions: no approval prompt
	// (with approval_policy "never", Codex refuses a tool needing one).
	return "\n[mcp_servers.ctxtool] # written by 'ctxtool install codex'; 'ctxtool uninstall codex' removes it" + mark +
		"\ncommand = " + string(b) + "\nargs = [\"mcp\"]\ndefault_tools_approval_mode = \"approve\"\n"
}

func editCodexMCP(before []byte, binary string, remove bool) ([]byte, error) {
	text := string(before)
	const head = "[mcp_servers.ctxtool]"
	i := strings.Index(text, "\n"+head+" # written by 'ctxtool install codex'")
	if i < 0 && strings.HasPrefix(text, head+" # written by") {
		i = -2 // at the very start (a file ctxtool created)
	}
	if i == -1 {
		if strings.Contains(text, head) {
			return nil, fmt.Errorf("%s is there but ctxtool did not write it: remove it (or 'codex mcp remove ctxtool') first", head)
		}
		if remove {
			return before, nil
		}
		joined := text != "" && !strings.HasSuffix(text, "\n")
		if joined {
			text += "\n"
		}
		add := codexTable(binary, joined)
		if text == "" {
			add = add[1:]
		}
		return []byte(text + add), nil
	}
	// Ours: the table runs to the next table header or the end.
	from := i
	if i == -2 {
		from = 0
	}
	body := text[from:]
	end := len(body)
	if j := strings.Index(body[1:], "\n["); j >= 0 {
		end = j + 2
	}
	ours := text[from : from+end]
	joined := strings.Contains(strings.SplitN(ours[1:], "\n", 2)[0], "and the line break before it")
	rest := text[:from] + text[from+end:]
	if joined && from > 0 && text[from-1] == '\n' {
		rest = text[:from-1] + text[from+end:]
	}
	if remove {
		if rest == "" {
			return nil, nil
		}
		return []byte(rest), nil
	}
	if ours == codexTable(binary, joined) || (from == 0 && ours == codexTable(binary, false)[1:]) {
		return before, nil
	}
	return editCodexMCP([]byte(rest), binary, false)
}
