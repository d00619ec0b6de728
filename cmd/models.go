package cmd

import (
	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/models"
)

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
