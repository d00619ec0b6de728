package cmd

import (
	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/models"
)

// modelWindows reads config models.<name>.contextWindow overrides.
func modelWindows(cfg *config.Config) map[string]int {
	return models.Overrides(cfg.Sub("models"))
}

// resolveWindow picks the context window: explicit flag/config value, then a
// per-model config override, then the model table, then 200,000 (OpenClaw's
// default for unknown models). It returns the window and where it came from.
func resolveWindow(model string, explicit int, overrides map[string]int) (int, string) {
	w := models.Resolve(model, overrides, explicit)
	return w.Tokens, string(w.Source)
}

// windowWarning applies OpenClaw's context-window guard (warn below 32k,
// refuse below 16k); estimate only reports, so both are warnings here.
func windowWarning(window int) string {
	warn, err := models.Guard(window)
	if err != nil {
		return err.Error()
	}
	return warn
}

// contextGauge is the one-line gauge of docs/design/checkpoints.md, printed
// by estimate at ≥ 70%.
var contextGauge = func(tokens, window int) string { return checkpoint.Gauge(tokens, window, false) }
