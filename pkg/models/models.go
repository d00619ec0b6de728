// Package models knows the context window (and maximum output) of the models
// pi and OpenClaw sessions run on, resolves a session's model id against that
// table with config and flag overrides, and applies OpenClaw's context-window
// guard.
//
// Model ids arrive in many spellings: "claude-sonnet-4-5-20250929",
// "anthropic/claude-sonnet-4.5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
// "claude-sonnet-4-5@20250929", "openrouter/meta-llama/llama-3.3-70b-instruct:free",
// "llama3.1:70b". lookup tries, in order: the exact id; the id with leading
// provider path segments removed; a normalized id (lower case, "." and "_" read
// as "-", Bedrock "vendor." prefixes and ":tag" / "@version" suffixes dropped,
// then trailing dates, "-latest", "-preview", "-exp" and "-vN" stripped one at
// a time); and finally the longest table id that is a prefix of the normalized
// id, ending at a "-" boundary (so "gpt-4" never matches "gpt-4o").
//
// It must not read files or the network: the table is compiled in, overrides
// arrive as Settings.
package models

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// Model is one entry of the built-in table.
type Model struct {
	ID                string   // vendor API id without date, e.g. "claude-sonnet-4-5"
	Provider          string   // vendor: anthropic, openai, google, meta, qwen, deepseek, mistral, ...
	ContextWindow     int      // tokens
	MaxOutputTokens   int      // 0 when unknown
	LongContextWindow int      // opt-in larger window (Anthropic 1M beta), asked for with a "[1m]" suffix; 0 if none
	Aliases           []string // other ids of the same model
}

// Match is the table entry a model id resolved to.
type Match struct {
	Model
	Window int    // context window for this id: LongContextWindow when "[1m]" asked for it
	How    string // "exact", "provider" (provider path stripped), "normalized" or "prefix"
}

// DefaultContextWindow is OpenClaw's DEFAULT_CONTEXT_TOKENS, used for unknown models.
const DefaultContextWindow = 200000

// OpenClaw's context-window guard (src/agents/context-window-guard.ts).
const (
	WarnBelow        = 32000 // warn: compaction will run very often
	MinContextWindow = 16000 // block: OpenClaw refuses to run the agent
)

// lookup finds the table entry for a model id (see the package doc for the
// matching rules). ok is false when nothing matches.
func lookup(id string) (m Match, ok bool) {
	q, long := splitLong(id)
	i, how, ok := tableIndex().find(q)
	if !ok {
		return Match{}, false
	}
	m = Match{Model: table[i], Window: table[i].ContextWindow, How: how}
	if long && m.LongContextWindow > 0 {
		m.Window = m.LongContextWindow
	}
	return m, true
}

// Source says where a context window came from; the strings are what
// `ctxtool estimate --json` reports.
type Source string

const (
	FromFlag    Source = "flag"        // --context-window N
	FromConfig  Source = "config"      // models.<name>.contextWindow
	FromTable   Source = "model table" // built-in table
	FromDefault Source = "default"     // unknown model: DefaultContextWindow
)

// Window is a resolved context window.
type Window struct {
	Tokens          int
	Source          Source
	Model           string // the id that was resolved
	Matched         string // table id or config key that matched ("" for flag/default)
	MaxOutputTokens int    // from the table when known, else 0
}

// SourceText names where the window came from for JSON reports
// (windowSource): the source, and what matched ("model table:
// claude-opus-4-6", "file: Claude Code auto-compaction at 171204 tokens").
func (w Window) SourceText() string {
	if w.Matched != "" {
		return string(w.Source) + ": " + w.Matched
	}
	return string(w.Source)
}

// resolve picks the context window for model: an explicit value (> 0, from
// --context-window) wins, then a config override (keys matched like table ids,
// so "claude-sonnet-4-5" covers "anthropic/claude-sonnet-4-5-20250929"), then
// the table, then DefaultContextWindow.
func resolve(model string, overrides map[string]int, explicit int) Window {
	w := Window{Model: model}
	if m, ok := lookup(model); ok {
		w.MaxOutputTokens = m.MaxOutputTokens
		w.Tokens, w.Source, w.Matched = m.Window, FromTable, m.ID
	}
	if len(overrides) > 0 && model != "" {
		idx := newIndex()
		keys := make([]string, 0, len(overrides))
		for k, v := range overrides {
			if v > 0 {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys) // deterministic when two spellings normalize alike
		for i, k := range keys {
			idx.add(k, i)
		}
		q, _ := splitLong(model)
		if i, _, ok := idx.find(q); ok {
			w.Tokens, w.Source, w.Matched = overrides[keys[i]], FromConfig, keys[i]
		}
	}
	if explicit > 0 {
		w.Tokens, w.Source, w.Matched = explicit, FromFlag, ""
	}
	if w.Tokens <= 0 {
		w.Tokens, w.Source, w.Matched = DefaultContextWindow, FromDefault, ""
	}
	return w
}

// Guard applies OpenClaw's context-window guard: an error below 16,000 tokens
// (OpenClaw blocks the agent), a warning below 32,000, nothing otherwise.
func Guard(window int) (warning string, err error) {
	const remedy = "set the real window with --context-window N or models.<name>.contextWindow"
	switch {
	case window < MinContextWindow:
		return "", fmt.Errorf("context window %d tokens is below OpenClaw's minimum of %d: OpenClaw refuses to run with it; %s", window, MinContextWindow, remedy)
	case window < WarnBelow:
		return fmt.Sprintf("context window %d tokens is below %d: OpenClaw warns, and compaction will run very often", window, WarnBelow), nil
	}
	return "", nil
}

// Overrides reads per-model context windows from the config's "models" map:
// models.<name>.contextWindow, or OpenClaw's spelling contextTokens (any case).
// Viper splits keys at dots, so "models.gpt-4.1.contextWindow" arrives nested
// as gpt-4 → 1 → contextwindow; the path is joined back into "gpt-4.1".
// Values that are not positive integers are ignored.
func Overrides(models map[string]any) map[string]int {
	out := map[string]int{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch strings.ToLower(k) {
			case "contextwindow", "contexttokens":
				if n, ok := positiveInt(v); ok && prefix != "" {
					if _, set := out[prefix]; !set || strings.EqualFold(k, "contextWindow") {
						out[prefix] = n // contextWindow wins over contextTokens
					}
				}
				continue
			}
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			switch sub := v.(type) {
			case map[string]any:
				walk(name, sub)
			case map[any]any:
				conv := make(map[string]any, len(sub))
				for kk, vv := range sub {
					conv[fmt.Sprint(kk)] = vv
				}
				walk(name, conv)
			}
		}
	}
	walk("", models)
	return out
}

func positiveInt(v any) (int, bool) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		n = int64(x)
	case float64:
		if x != float64(int64(x)) {
			return 0, false
		}
		n = int64(x)
	case string:
		p, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(x), "_", ""), 10, 64)
		if err != nil {
			return 0, false
		}
		n = p
	default:
		return 0, false
	}
	if n <= 0 || n > 1<<40 {
		return 0, false
	}
	return int(n), true
}

// splitLong removes a "[1m]" long-context marker.
func splitLong(id string) (string, bool) {
	q := strings.ToLower(strings.TrimSpace(id))
	if strings.HasSuffix(q, "[1m]") {
		return strings.TrimSpace(strings.TrimSuffix(q, "[1m]")), true
	}
	return q, false
}

// index maps normalized ids to entries.
type index struct {
	byKey map[string]int
	keys  []string // normalized, for the prefix search
}

func newIndex() *index { return &index{byKey: map[string]int{}} }

func (x *index) add(id string, i int) {
	k := normalize(id)
	if _, dup := x.byKey[k]; !dup {
		x.byKey[k] = i
		x.keys = append(x.keys, k)
	}
}

// tableIndex is built on first use: every command pays for package init.
var tableIndex = sync.OnceValue(func() *index {
	x := newIndex()
	for i, m := range table {
		x.add(m.ID, i)
		for _, a := range m.Aliases {
			x.add(a, i)
		}
	}
	return x
})

var (
	// Bedrock ids: [region.]vendor.model, e.g. us.anthropic.claude-…, meta.llama3-1-70b-instruct-v1:0.
	vendorDot = lazyre.New(`^(?:[a-z]{2,4}\.)?(?:anthropic|meta|mistral|deepseek|amazon|cohere|openai|google|qwen|moonshotai|zai|xai|ai21)\.`)
	// Trailing decorations stripped one at a time.
	noise = []func() *regexp.Regexp{
		lazyre.New(`-\d{8}$`),             // -20250929
		lazyre.New(`-\d{4}-\d{2}-\d{2}$`), // -2024-08-06
		lazyre.New(`-\d{2}-\d{4}$`),       // -09-2025
		lazyre.New(`-\d{2}-\d{2}$`),       // -05-06
		lazyre.New(`-\d{4}$`),             // -0613, -2507
		lazyre.New(`-(latest|preview|exp|experimental|v\d+)$`),
	}
)

// normalize lower-cases and reads "." and "_" as "-".
func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer(".", "-", "_", "-", " ", "-").Replace(s)
}

// clean reduces the last path segment of an id to the vendor's bare model id.
func clean(seg string) string {
	seg = vendorDot().ReplaceAllString(strings.ToLower(seg), "")
	if i := strings.IndexAny(seg, "@:"); i > 0 {
		seg = seg[:i]
	}
	return normalize(seg)
}

// stripTag drops a ":tag" or "@version" suffix of the last path segment.
func stripTag(p string) string {
	last := strings.LastIndexByte(p, '/') + 1
	if i := strings.IndexAny(p[last:], "@:"); i > 0 {
		return p[:last+i]
	}
	return p
}

func (x *index) find(q string) (int, string, bool) {
	if q == "" {
		return 0, "", false
	}
	// 1. exact, then 2. with leading provider path segments removed (each also
	// without a ":free" / "@2025…" tag, so host-specific entries still match).
	p := q
	for step := 0; ; step++ {
		if i, ok := x.byKey[normalize(p)]; ok {
			if step == 0 {
				return i, "exact", true
			}
			return i, "provider", true
		}
		if t := stripTag(p); t != p {
			if i, ok := x.byKey[normalize(t)]; ok {
				if step == 0 {
					return i, "normalized", true
				}
				return i, "provider", true
			}
		}
		slash := strings.IndexByte(p, '/')
		if slash < 0 {
			break
		}
		p = p[slash+1:]
	}
	// 3. normalized: vendor prefix and tags dropped, then trailing dates and the like.
	c := clean(p)
	for {
		if i, ok := x.byKey[c]; ok {
			return i, "normalized", true
		}
		stripped := c
		for _, re := range noise {
			if loc := re().FindStringIndex(stripped); loc != nil && loc[0] > 0 {
				stripped = stripped[:loc[0]]
				break
			}
		}
		if stripped == c {
			break
		}
		c = stripped
	}
	// 4. longest table id that prefixes the cleaned id at a "-" boundary.
	c = clean(p)
	best := ""
	for _, k := range x.keys {
		if len(k) > len(best) && len(k) < len(c) && strings.HasPrefix(c, k) && c[len(k)] == '-' {
			best = k
		}
	}
	if best != "" {
		return x.byKey[best], "prefix", true
	}
	return 0, "", false
}
