package models

import (
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

func TestForSession(t *testing.T) {
	mc := &transcript.Entry{Type: "model_change", Provider: "ollama", Model: "qwen3:8b", Line: 2}
	real := &transcript.Entry{Type: "message", Role: "assistant", Provider: "custom-x", Model: "glm-5-turbo", Line: 5}
	mirror := &transcript.Entry{Type: "message", Role: "assistant", Provider: "openclaw", Model: "delivery-mirror", Line: 6}
	bare := &transcript.Entry{Type: "message", Role: "assistant", Line: 7}
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
	path := []*transcript.Entry{{Type: "message", Role: "assistant", Provider: "openai", Model: "gpt-5.2-codex"}}
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
