package cmd

import (
	"github.com/spf13/pflag"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/models"
)

// sizeOptions reads what every command measures a context with, so that
// estimate, compact, roll and checkpoint report the same size for the same
// file and flags: --tokenizer (estimate.tokenizer), --model (model),
// --context-window (contextWindow), models.<name>.contextWindow overrides
// and OpenClaw's contextTokens cap. fs may lack some of the flags.
func sizeOptions(cfg *config.Config, fs *pflag.FlagSet) estimate.Options {
	return estimate.Options{
		Method: cfg.String(fs, "estimate.tokenizer"),
		Window: models.Settings{
			Model:         cfg.String(fs, "model"),
			ContextWindow: cfg.Int(fs, "contextWindow"),
			Overrides:     modelWindows(cfg),
			ContextTokens: cfg.Int(nil, "contextTokens"),
		},
	}
}

// modelWindows reads config models.<name>.contextWindow overrides.
func modelWindows(cfg *config.Config) map[string]int {
	return models.Overrides(cfg.Sub("models"))
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
