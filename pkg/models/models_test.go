package models

import (
	"sort"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		id     string
		want   string // table id, "" = no match
		window int
		how    string
	}{
		// values the issue names
		{"claude-opus-4-5", "claude-opus-4-5", 200000, "exact"},
		{"claude-sonnet-4-5", "claude-sonnet-4-5", 200000, "exact"},
		{"claude-haiku-4-5", "claude-haiku-4-5", 200000, "exact"},
		{"claude-opus-4-1", "claude-opus-4-1", 200000, "exact"},
		{"claude-sonnet-4-0", "claude-sonnet-4", 200000, "exact"},
		{"claude-3-7-sonnet-20250219", "claude-3-7-sonnet", 200000, "normalized"},
		{"claude-3-haiku-20240307", "claude-3-haiku", 200000, "normalized"},
		{"gpt-4o", "gpt-4o", 128000, "exact"},
		{"gpt-4o-mini", "gpt-4o-mini", 128000, "exact"},
		{"gpt-4.1", "gpt-4.1", 1047576, "exact"},
		{"gpt-5", "gpt-5", 400000, "exact"},
		{"gpt-5.1", "gpt-5.1", 400000, "exact"},
		{"gpt-5.1-codex", "gpt-5.1-codex", 400000, "exact"},
		{"o3", "o3", 200000, "exact"},
		{"o4-mini", "o4-mini", 200000, "exact"},
		{"gemini-2.5-pro", "gemini-2.5-pro", 1048576, "exact"},
		{"gemini-2.5-flash", "gemini-2.5-flash", 1048576, "exact"},
		{"gemini-1.5-pro", "gemini-1.5-pro", 2097152, "exact"},
		{"llama-3.1", "llama-3.1", 128000, "exact"},
		{"llama-3.3-70b-instruct", "llama-3.3", 128000, "prefix"},
		{"qwen2.5-72b-instruct", "qwen2.5", 32768, "prefix"},
		{"deepseek-v3", "deepseek-v3", 128000, "exact"},
		{"deepseek-r1", "deepseek-r1", 128000, "exact"},
		{"mistral-large-2411", "mistral-large", 128000, "normalized"},
		// provider prefixes
		{"anthropic/claude-opus-4-5", "claude-opus-4-5", 200000, "provider"},
		{"openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5", 200000, "provider"},
		{"openai/gpt-5.1-codex", "gpt-5.1-codex", 400000, "provider"},
		{"models/gemini-2.5-flash", "gemini-2.5-flash", 1048576, "provider"},
		{"meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1", 128000, "prefix"},
		{"openrouter/meta-llama/llama-3.3-70b-instruct:free", "llama-3.3", 128000, "prefix"},
		// dates, tags and other spellings
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200000, "normalized"},
		{"anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200000, "normalized"},
		{"claude-opus-4-5@20251101", "claude-opus-4-5", 200000, "normalized"},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 200000, "normalized"},
		{"claude-opus-4.5", "claude-opus-4-5", 200000, "exact"},
		{"claude-3.5-sonnet", "claude-3-5-sonnet", 200000, "exact"},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet", 200000, "normalized"},
		{"Claude-Sonnet-4-5", "claude-sonnet-4-5", 200000, "exact"},
		{"gpt-4o-2024-08-06", "gpt-4o", 128000, "normalized"},
		{"gpt-4.1-2025-04-14", "gpt-4.1", 1047576, "normalized"},
		{"o3-mini-2025-01-31", "o3-mini", 200000, "normalized"},
		{"o4-mini-high", "o4-mini", 200000, "prefix"},
		{"gpt-4-0613", "gpt-4", 8192, "normalized"},
		{"gpt-4-1106-preview", "gpt-4-turbo", 128000, "exact"},
		{"gpt-5-chat-latest", "gpt-5-chat", 128000, "normalized"},
		{"gpt-5.1-codex-mini", "gpt-5.1-codex-mini", 400000, "exact"},
		{"gemini-2.5-pro-preview-05-06", "gemini-2.5-pro", 1048576, "normalized"},
		{"gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite", 1048576, "normalized"},
		{"llama3.1:70b", "llama-3.1", 128000, "normalized"},
		{"qwen2.5:32b", "qwen2.5", 32768, "normalized"},
		{"deepseek-r1:671b", "deepseek-r1", 128000, "normalized"},
		{"deepseek-chat", "deepseek-v3", 128000, "exact"},
		{"meta.llama3-1-70b-instruct-v1:0", "llama-3.1", 128000, "prefix"},
		{"qwen3-235b-a22b-2507", "qwen3-235b-a22b-2507", 262144, "exact"},
		// host-specific windows
		{"openrouter/deepseek/deepseek-r1", "openrouter/deepseek/deepseek-r1", 64000, "exact"},
		{"openrouter/deepseek/deepseek-r1:free", "openrouter/deepseek/deepseek-r1", 64000, "normalized"},
		{"deepseek/deepseek-r1", "deepseek-r1", 128000, "provider"},
		{"groq/llama-3.3-70b-versatile", "groq/llama-3.3-70b-versatile", 131072, "exact"},
		// 1M beta is opt-in
		{"claude-sonnet-4-5-20250929[1m]", "claude-sonnet-4-5", 1000000, "normalized"},
		{"claude-sonnet-4[1m]", "claude-sonnet-4", 1000000, "exact"},
		{"claude-opus-4-5[1m]", "claude-opus-4-5", 200000, "exact"},
		// no match, and no false prefixes
		{"", "", 0, ""},
		{"my-local-model", "", 0, ""},
		{"gpt-4ox", "", 0, ""},
		{"o", "", 0, ""},
		{"gpt", "", 0, ""},
	}
	for _, c := range cases {
		m, ok := lookup(c.id)
		if c.want == "" {
			if ok {
				t.Errorf("lookup(%q) = %s (%s), want no match", c.id, m.ID, m.How)
			}
			continue
		}
		if !ok || m.ID != c.want || m.Window != c.window || m.How != c.how {
			t.Errorf("lookup(%q) = %q window %d how %q ok %v; want %q %d %q", c.id, m.ID, m.Window, m.How, ok, c.want, c.window, c.how)
		}
	}
}

func TestMaxOutputTokens(t *testing.T) {
	for id, want := range map[string]int{"claude-sonnet-4-5-20250929": 64000, "claude-opus-4-1": 32000, "gpt-4o": 16384, "gpt-5": 128000, "gemini-2.5-pro": 65536, "llama-3.1-8b": 0} {
		if m, ok := lookup(id); !ok || m.MaxOutputTokens != want {
			t.Errorf("lookup(%q).MaxOutputTokens = %d, want %d", id, m.MaxOutputTokens, want)
		}
	}
}

// Every id and alias finds its own entry exactly; no two entries claim the same
// normalized id; windows and outputs are plausible.
func TestTableConsistent(t *testing.T) {
	seen := map[string]string{}
	for _, m := range table {
		if m.ID == "" || m.Provider == "" || m.ContextWindow < 8192 || m.MaxOutputTokens < 0 || m.MaxOutputTokens > m.ContextWindow {
			t.Errorf("implausible entry %+v", m)
		}
		if m.LongContextWindow != 0 && m.LongContextWindow <= m.ContextWindow {
			t.Errorf("%s: LongContextWindow %d not above %d", m.ID, m.LongContextWindow, m.ContextWindow)
		}
		for _, id := range append([]string{m.ID}, m.Aliases...) {
			k := normalize(id)
			if other, dup := seen[k]; dup {
				t.Errorf("%q (%s) and %s normalize to the same id %q", id, m.ID, other, k)
			}
			seen[k] = m.ID
			if got, ok := lookup(id); !ok || got.ID != m.ID || got.How != "exact" {
				t.Errorf("lookup(%q) = %q %q, want %q exact", id, got.ID, got.How, m.ID)
			}
		}
	}
	if len(All()) != len(table) {
		t.Error("All() lost entries")
	}
}

func TestResolvePrecedence(t *testing.T) {
	overrides := map[string]int{"claude-sonnet-4-5": 500000, "my-local-model": 65536, "gpt-4o": 0, "llama-3.3": -5}
	cases := []struct {
		model     string
		overrides map[string]int
		explicit  int
		tokens    int
		source    Source
		matched   string
	}{
		{"claude-sonnet-4-5-20250929", nil, 0, 200000, FromTable, "claude-sonnet-4-5"},
		{"anthropic/claude-sonnet-4-5-20250929", overrides, 0, 500000, FromConfig, "claude-sonnet-4-5"},
		{"anthropic/claude-sonnet-4-5-20250929", overrides, 300000, 300000, FromFlag, ""},
		{"claude-opus-4-5", overrides, 0, 200000, FromTable, "claude-opus-4-5"},
		{"my-local-model", overrides, 0, 65536, FromConfig, "my-local-model"},
		{"my-local-model:q4", overrides, 0, 65536, FromConfig, "my-local-model"},
		{"unknown-model", overrides, 0, DefaultContextWindow, FromDefault, ""},
		{"", overrides, 0, DefaultContextWindow, FromDefault, ""},
		{"", nil, 100000, 100000, FromFlag, ""},
		{"gpt-4o", overrides, 0, 128000, FromTable, "gpt-4o"},                      // a zero override is no override
		{"llama-3.3-70b", overrides, 0, 128000, FromTable, "llama-3.3"},            // nor a negative one
		{"gpt-4o", overrides, -1, 128000, FromTable, "gpt-4o"},                     // nor a negative flag
		{"claude-sonnet-4-5[1m]", nil, 0, 1000000, FromTable, "claude-sonnet-4-5"}, // opt-in beta window
	}
	for _, c := range cases {
		w := resolve(c.model, c.overrides, c.explicit)
		if w.Tokens != c.tokens || w.Source != c.source || w.Matched != c.matched || w.Model != c.model {
			t.Errorf("resolve(%q, explicit %d) = %+v; want %d from %s (%q)", c.model, c.explicit, w, c.tokens, c.source, c.matched)
		}
	}
	if w := resolve("claude-sonnet-4-5", overrides, 0); w.MaxOutputTokens != 64000 {
		t.Errorf("config override lost the table's max output: %+v", w)
	}
}

func TestOverridesFromConfig(t *testing.T) {
	// What viper hands over for:
	//   models:
	//     claude-sonnet-4-5: {contextWindow: 1000000}
	//     gpt-4.1: {contextWindow: 500000}        (split at the dot by viper)
	//     local: {contexttokens: "65_536"}
	//     both: {contextTokens: 1, contextWindow: 2}
	//     bad: {contextWindow: "lots"}, zero: {contextWindow: 0}, frac: {contextWindow: 1.5}
	cfg := map[string]any{
		"claude-sonnet-4-5": map[string]any{"contextwindow": 1000000},
		"gpt-4":             map[string]any{"1": map[string]any{"contextwindow": int64(500000)}},
		"local":             map[string]any{"contexttokens": "65_536"},
		"both":              map[string]any{"contextTokens": 1, "contextWindow": 2.0},
		"yaml":              map[any]any{"contextWindow": 4096},
		"bad":               map[string]any{"contextWindow": "lots"},
		"zero":              map[string]any{"contextWindow": 0},
		"frac":              map[string]any{"contextWindow": 1.5},
		"contextWindow":     12345, // no model name: ignored
	}
	got := Overrides(cfg)
	want := map[string]int{"claude-sonnet-4-5": 1000000, "gpt-4.1": 500000, "local": 65536, "both": 2, "yaml": 4096}
	if len(got) != len(want) {
		t.Errorf("Overrides = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Overrides[%q] = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if w := resolve("openai/gpt-4.1-2025-04-14", got, 0); w.Tokens != 500000 || w.Source != FromConfig {
		t.Errorf("dotted config key not applied: %+v", w)
	}
}

func TestGuard(t *testing.T) {
	cases := []struct {
		window  int
		warning bool
		err     bool
	}{
		{-1, false, true}, {0, false, true}, {8192, false, true}, {15999, false, true},
		{16000, true, false}, {31999, true, false},
		{32000, false, false}, {200000, false, false}, {2097152, false, false},
	}
	for _, c := range cases {
		w, err := Guard(c.window)
		if (w != "") != c.warning || (err != nil) != c.err {
			t.Errorf("Guard(%d) = %q, %v; want warning %v, error %v", c.window, w, err, c.warning, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), "--context-window") {
			t.Errorf("Guard(%d) error does not say what to do: %v", c.window, err)
		}
	}
}

// All returns a copy of the built-in table, sorted by provider and id.
func All() []Model {
	out := append([]Model(nil), table...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].ID < out[j].ID
	})
	return out
}
