package models

import (
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

func TestForSession(t *testing.T) {
	mc := entry(t, 2, `{"type":"model_change","id":"a","provider":"ollama","modelId":"qwen3:8b"}`)
	real := assistant(t, 5, `"provider":"custom-x","model":"glm-5-turbo"`)
	mirror := assistant(t, 6, `"provider":"openclaw","model":"delivery-mirror"`)
	bare := assistant(t, 7, "")
	v1 := &transcript.Header{Provider: "openai", ModelID: "gpt-4", Line: 1}
	for _, tc := range []struct {
		name   string
		path   []*transcript.Entry
		header *transcript.Header
		set    Settings
		tokens int
		source Source
		model  string
	}{
		{"model_change", []*transcript.Entry{mc}, nil, Settings{}, 32768, FromTable, "ollama/qwen3:8b"},
		{"a mirror never chooses", []*transcript.Entry{mc, real, mirror}, nil, Settings{}, 204800, FromTable, "custom-x/glm-5-turbo"},
		{"only mirrors: the model_change", []*transcript.Entry{mc, mirror}, nil, Settings{}, 32768, FromTable, "ollama/qwen3:8b"},
		{"header only (assistants name none)", []*transcript.Entry{bare}, v1, Settings{}, 8192, FromTable, "openai/gpt-4"},
		{"--model", []*transcript.Entry{mc}, nil, Settings{Model: "gpt-4o"}, 128000, FromTable, "gpt-4o"},
		{"config override", []*transcript.Entry{mc}, nil, Settings{Overrides: map[string]int{"qwen3:8b": 40960}}, 40960, FromConfig, "ollama/qwen3:8b"},
		{"contextTokens caps", []*transcript.Entry{real}, nil, Settings{ContextTokens: 100000}, 100000, FromCap, "custom-x/glm-5-turbo"},
		{"contextTokens never raises", []*transcript.Entry{mc}, nil, Settings{ContextTokens: 100000}, 32768, FromTable, "ollama/qwen3:8b"},
		{"--context-window beats the cap", []*transcript.Entry{mc}, nil, Settings{ContextWindow: 50000, ContextTokens: 20000}, 50000, FromFlag, "ollama/qwen3:8b"},
		{"unknown", []*transcript.Entry{mirror}, nil, Settings{}, DefaultContextWindow, FromDefault, ""},
	} {
		w := ForSession(tc.path, tc.header, tc.set)
		if w.Tokens != tc.tokens || w.Source != tc.source || w.Model != tc.model {
			t.Errorf("%s: got %d %s %q, want %d %s %q", tc.name, w.Tokens, w.Source, w.Model, tc.tokens, tc.source, tc.model)
		}
	}
	if !TranscriptOnly("openclaw", "gateway-injected") || TranscriptOnly("ollama", "delivery-mirror") || TranscriptOnly("openclaw", "gpt-4o") {
		t.Fatal("TranscriptOnly")
	}
}

// A window the transcript states (Codex's model_context_window) beats the
// model table, not the user's --context-window or config.
func TestForSessionFileWindow(t *testing.T) {
	h := &transcript.Header{ContextWindow: 258400}
	path := []*transcript.Entry{assistant(t, 0, `"provider":"openai","model":"gpt-5.2-codex"`)}
	if w := ForSession(path, h, Settings{}); w.Tokens != 258400 || w.Source != FromFile {
		t.Errorf("file window: %+v", w.Window)
	}
	if w := ForSession(path, h, Settings{ContextWindow: 100000}); w.Tokens != 100000 || w.Source != FromFlag {
		t.Errorf("--context-window: %+v", w.Window)
	}
	if w := ForSession(path, h, Settings{Overrides: map[string]int{"gpt-5.2-codex": 50000}}); w.Tokens != 50000 || w.Source != FromConfig {
		t.Errorf("config override: %+v", w.Window)
	}
}

// entry is what the session line json reads as, at line n.
func entry(t *testing.T, n int, json string) *transcript.Entry {
	t.Helper()
	e, _, ok := transcript.ParseEntry([]byte(json))
	if !ok || e == nil {
		t.Fatalf("not an entry: %s", json)
	}
	e.Line = n
	return e
}

// assistant is an assistant message at line n with the message keys
// fields ("" for none).
func assistant(t *testing.T, n int, fields string) *transcript.Entry {
	t.Helper()
	if fields != "" {
		fields += ","
	}
	return entry(t, n, `{"type":"message","id":"m","message":{"role":"assistant",`+fields+`"content":[]}}`)
}
