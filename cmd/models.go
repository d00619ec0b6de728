package cmd

import (
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/config"
)

// DefaultContextWindow is OpenClaw's DEFAULT_CONTEXT_TOKENS, used for
// unknown models.
const DefaultContextWindow = 200000

// modelWindows reads config models.<name>.contextWindow overrides.
func modelWindows(cfg *config.Config) map[string]int {
	out := map[string]int{}
	for name, v := range cfg.Sub("models") {
		if m, ok := v.(map[string]any); ok {
			for k, w := range m {
				if k == "contextwindow" || k == "contextWindow" {
					if n, ok := toInt(w); ok {
						out[name] = n
					}
				}
			}
		}
	}
	return out
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}

// resolveWindow picks the context window: explicit flag/config value, then a
// per-model config override, then the model table, then the default.
func resolveWindow(model string, explicit int, overrides map[string]int) (int, string) {
	if explicit > 0 {
		return explicit, "flag"
	}
	if n, ok := overrides[model]; ok && n > 0 {
		return n, "config"
	}
	if n, ok := lookupModelWindow(model); ok {
		return n, "model table"
	}
	return DefaultContextWindow, "default"
}

// lookupModelWindow is replaced by the model table once it is wired in.
var lookupModelWindow = func(model string) (int, bool) { return 0, false }

// windowWarning applies OpenClaw's context-window guard thresholds.
func windowWarning(window int) string {
	switch {
	case window < 16000:
		return fmt.Sprintf("context window %d is below 16,000 tokens: OpenClaw refuses to run with it", window)
	case window < 32000:
		return fmt.Sprintf("context window %d is below 32,000 tokens: compaction will trigger very often", window)
	}
	return ""
}

// contextGauge is seed 002's one-line gauge, printed by estimate at ≥ 70%.
var contextGauge = func(tokens, window int) string { return checkpoint.Gauge(tokens, window, false) }
