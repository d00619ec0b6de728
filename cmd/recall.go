package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/recall"
)

// addIndexFlag adds --index (config recall.url) to a command using recall.
func addIndexFlag(cmd *cobra.Command) {
	configFlags(cmd, "recall.url")
}

// recallSettings are where a command's recall index is and how it is
// filled and searched: the one home of the state directory, --index
// (recall.url), llm.embeddingModel and recall.toolOutputChars for index,
// search, roll, compact --truncate and budget. Each resolves them with
// resolveRecall and opens the index with open, so every command finds the
// same index the same way.
type recallSettings struct {
	StateDir string // --state-dir (CTXTOOL_STATE_DIR, stateDir)
	// URL is --index / recall.url ("" = the state directory's SQLite
	// file).
	URL string
	// Embedder enables semantic search (llm.embeddingModel; nil: keyword
	// only).
	Embedder recall.Embedder
	// MaxChars caps tool output per message (recall.toolOutputChars).
	MaxChars int
	// KeepSecrets turns redaction off (recall.redact: false); the zero
	// value redacts.
	KeepSecrets bool
}

// resolveRecall reads the recall settings from the flags on fl, the
// environment and the config. A command without --index reads recall.url
// from the config alone (the flag is not on its fl). An embedder that
// cannot be built is an error: the command stops before touching anything.
func resolveRecall(cfg *config.Config, fl *pflag.FlagSet) (recallSettings, error) {
	e, err := recallEmbedder(cfg)
	if err != nil {
		return recallSettings{}, err
	}
	s := recallSettings{
		StateDir: cfg.StateDir(fl),
		URL:      cfg.String(fl, "recall.url"),
		Embedder: e,
		MaxChars: cfg.Int(nil, "recall.toolOutputChars"),
	}
	s.KeepSecrets = keepSecrets(cfg)
	return s, nil
}

// keepSecrets is the explicit opt-out of redaction (recall.redact: false)
// that every command leaving text outside a session reads.
func keepSecrets(cfg *config.Config) bool { return !cfg.Bool(nil, "recall.redact") }

// location is where the index lives: the explicit URL (--index /
// recall.url), else the state directory's SQLite file.
func (s recallSettings) location() (string, error) {
	if s.URL != "" {
		return s.URL, nil
	}
	if s.StateDir == "" {
		return "", fmt.Errorf("no recall index location: set --state-dir (CTXTOOL_STATE_DIR) or --index (recall.url)")
	}
	return recall.DBPath(s.StateDir), nil
}

// recallEmbedder builds the embeddings client when llm.embeddingModel is
// set (nil otherwise: keyword-only recall).
func recallEmbedder(cfg *config.Config) (recall.Embedder, error) {
	model := cfg.String(nil, "llm.embeddingModel")
	if model == "" {
		return nil, nil
	}
	ep := llmEndpoint(cfg)
	return recall.NewOpenAIEmbedder(recall.EmbedderConfig{
		BaseURL: ep.BaseURL, APIKey: ep.APIKey, Model: model, Timeout: ep.Timeout, MaxRetries: ep.MaxRetries,
	})
}

// open opens the index at the settings' location: no location is a usage
// error, an index that cannot be opened a runtime one.
func (s recallSettings) open() (*recall.Index, error) {
	loc, err := s.location()
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	ix, err := recall.OpenURL(loc, recall.WithEmbedder(s.Embedder), recall.WithMaxChars(s.MaxChars), recall.WithRedaction(!s.KeepSecrets))
	if err != nil {
		return nil, exitcode.New(exitcode.Runtime, err)
	}
	return ix, nil
}
