package cmd

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/llm"
	"github.com/ctxtool/ctxtool/pkg/models"
)

// The services: what several commands need besides their own flags. A
// command's resolve takes each from the Factory (as gh's commands take
// f.HttpClient, f.Config, f.BaseRepo), never from another command's
// options. Each is read from the configuration and the running command's
// flags (flag > environment > file > default; a flag the command does not
// declare leaves its key to the environment and the file), so it is valid
// from resolve on:
//
//	f.Config()        the configuration
//	f.Window()        the window resolver's settings: --model, the one
//	                  window override --context-window, models.*, the
//	                  contextTokens cap (models.ForSession)
//	f.Measurer()      how a context is measured: --tokenizer and Window
//	                  (estimate.Measure; every package takes it as is)
//	f.Compaction()    the compaction settings and the summarizer set
//	f.LLM()           the OpenAI-compatible endpoint and llm.model
//	f.Recall()        where the recall index is and how it is searched
//	f.MemoryFlush()   the pre-compaction memory flush's settings
//	f.Clock()         the clock
//
// A new service is a method here reading its keys (pkg/config/keys.go),
// and a line in this list and in ARCHITECTURE.md.

// Window is the window resolver's settings, which models.ForSession
// resolves a session's window with: --model (model), --context-window
// (contextWindow, the one window override), models.<name>.contextWindow and
// OpenClaw's contextTokens cap.
func (f *Factory) Window() models.Settings {
	cfg, fs := f.cfg, f.flags
	return models.Settings{
		Model:         cfg.String(fs, "model"),
		ContextWindow: cfg.Int(fs, "contextWindow"),
		Overrides:     models.Overrides(cfg.Sub("models")),
		ContextTokens: cfg.Int(nil, "contextTokens"),
	}
}

// Measurer is how a context is measured, so that estimate, compact, roll,
// checkpoint, lint, flush and budget report the same size for the same
// file and flags: --tokenizer (estimate.tokenizer) in the Window.
func (f *Factory) Measurer() estimate.Options {
	return estimate.Options{Method: f.cfg.String(f.flags, "estimate.tokenizer"), Window: f.Window()}
}

// LLM is the OpenAI-compatible endpoint summaries and embeddings both call
// (llmEndpoint) with llm.model (--llm-model), the summaries' model.
func (f *Factory) LLM() llm.Config {
	c := llmEndpoint(f.cfg)
	c.Model = f.cfg.String(f.flags, "llm.model")
	return c
}

// Recall is where the recall index is and how it is filled and searched.
// An embedder that cannot be built is an error.
func (f *Factory) Recall() (recallSettings, error) { return resolveRecall(f.cfg, f.flags) }

// MemoryFlush is the pre-compaction memory flush's settings (the
// workspace is the command's flag).
func (f *Factory) MemoryFlush() (MemoryFlushSettings, error) {
	cfg, fs := f.cfg, f.flags
	m := MemoryFlushSettings{
		Enabled:                   cfg.Bool(nil, "compaction.memoryFlush.enabled"),
		StateDir:                  cfg.StateDir(fs),
		SoftThresholdTokens:       cfg.Int(fs, "compaction.memoryFlush.softThresholdTokens"),
		ForceFlushTranscriptBytes: int64(cfg.Int(nil, "compaction.memoryFlush.forceFlushTranscriptBytes")),
		Prompt:                    cfg.String(nil, "compaction.memoryFlush.prompt"),
		SystemPrompt:              cfg.String(nil, "compaction.memoryFlush.systemPrompt"),
	}
	if m.SoftThresholdTokens < 0 {
		return m, fmt.Errorf("compaction.memoryFlush.softThresholdTokens = %d: use 0 or more", m.SoftThresholdTokens)
	}
	return m, nil
}

// Clock is the clock commands stamp and age things by (time.Now unless a
// test set Factory.Now).
func (f *Factory) Clock() func() time.Time {
	if f.Now != nil {
		return f.Now
	}
	return time.Now
}

// Compaction is how sessions are compacted: the compaction settings and
// the summarizer set. compact, flush (the region it flushes is the one
// compact would summarise), roll's safeguard fallback, budget's rolling
// summary and agent compact compact alike because they all take it from
// the Factory.
type Compaction struct {
	Settings compaction.Settings
	Summarizers
}

// Summarizers is the summarizer set: the one compaction.summarizer
// (--summarizer) picks, and what building it needs.
type Summarizers struct {
	Summarizer string // auto | llm | extractive | exec:COMMAND
	LLM        llm.Config
	// Deadline bounds a summary (llm.deadline), and an exec summarizer.
	Deadline time.Duration
}

// Compaction reads the compaction settings and the summarizer set; check
// them with validate.
func (f *Factory) Compaction() Compaction {
	cfg, fs := f.cfg, f.flags
	s := compaction.Settings{
		Strategy:               cfg.String(fs, "compaction.mode"),
		KeepRecentTokens:       cfg.Int(fs, "compaction.keepRecentTokens"),
		ReserveTokens:          cfg.Int(fs, "compaction.reserveTokens"),
		ReserveTokensFloor:     cfg.Int(nil, "compaction.reserveTokensFloor"),
		MaxHistoryShare:        cfg.Float(nil, "compaction.maxHistoryShare"),
		RecentTurnsPreserve:    cfg.Int(nil, "compaction.recentTurnsPreserve"),
		IdentifierPolicy:       cfg.String(nil, "compaction.identifierPolicy"),
		IdentifierInstructions: cfg.String(nil, "compaction.identifierInstructions"),
		QualityGuard:           cfg.Bool(nil, "compaction.qualityGuard.enabled"),
		QualityGuardRetries:    cfg.Int(nil, "compaction.qualityGuard.maxRetries"),
		ProtectedTail:          cfg.Int(nil, "compaction.summarize.protectedTail"),
		MaxInputChars:          cfg.Int(nil, "compaction.summarize.maxInputChars"),
		MaxOutputTokens:        cfg.Int(nil, "compaction.summarize.maxOutputTokens"),
		SummarizeThreshold:     cfg.Int(nil, "compaction.summarize.thresholdTokens"),
		SummarizeFallback:      cfg.String(nil, "compaction.summarize.fallback"),
		CustomInstructions:     cfg.String(fs, "compaction.customInstructions"),
		ExtractiveBudgetTokens: cfg.Int(nil, "compaction.extractive.budgetTokens"),
		IdentifierRetry:        cfg.Bool(nil, "compaction.identifierRetry"),
		KeepSecrets:            keepSecrets(cfg),
	}
	if s.ReserveTokensFloor == 0 {
		s.ReserveTokensFloor = -1 // 0 disables the floor (OpenClaw)
	}
	return Compaction{Settings: s, Summarizers: Summarizers{
		Summarizer: cfg.String(fs, "compaction.summarizer"),
		LLM:        f.LLM(),
		Deadline:   cfg.Duration(nil, "llm.deadline"),
	}}
}

// validate checks what Factory.Compaction read: the summariser against
// the key table (as a flag is checked), the settings for compaction's
// invariants.
func (o Compaction) validate() error {
	if err := config.CheckValue("compaction.summarizer", o.Summarizer); err != nil {
		return err
	}
	return o.Settings.Validate()
}

// pick builds the summariser the set names and says on errOut which one
// auto picked.
func (o Summarizers) pick(errOut io.Writer) (compaction.Summarizer, error) {
	pick := o.Summarizer
	if pick == "auto" {
		if o.llmConfigured() {
			pick = "llm"
			fmt.Fprintf(errOut, "summarizer: llm (%s at %s)\n", o.LLM.Model, cmp.Or(o.LLM.BaseURL, "https://api.openai.com/v1"))
		} else {
			pick = "extractive"
			why := "no LLM configured: set llm.model plus llm.baseURL or OPENAI_API_KEY"
			if o.LLM.Model == "" && (o.LLM.BaseURL != "" || o.LLM.APIKey != "") {
				why = "llm.model is not set"
			}
			fmt.Fprintf(errOut, "summarizer: extractive (%s)\n", why)
		}
	}
	return compaction.NewSummarizer(pick, compaction.Env{Client: func() (*llm.Client, error) { return o.llmClient(errOut) }, Deadline: o.Deadline})
}

// llmClient is the configured LLM client, or the usage error that says
// what configuration is missing.
func (o Summarizers) llmClient(errOut io.Writer) (*llm.Client, error) {
	if !o.llmConfigured() {
		var missing []string
		if o.LLM.Model == "" {
			missing = append(missing, "a model: --llm-model NAME (or llm.model, CTXTOOL_LLM_MODEL)")
		}
		if o.LLM.BaseURL == "" && o.LLM.APIKey == "" {
			missing = append(missing, "an endpoint: OPENAI_API_KEY (or llm.apiKey) for OpenAI, and/or OPENAI_BASE_URL (or llm.baseURL) for another server")
		}
		return nil, exitcode.Newf(exitcode.Usage, "--summarizer llm needs %s", strings.Join(missing, "; and "))
	}
	cfg := o.LLM
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(errOut, format+"\n", args...) }
	c, err := llm.New(cfg)
	if err != nil {
		return nil, exitcode.New(exitcode.Usage, err)
	}
	return c, nil
}

// llmConfigured reports whether a model and an endpoint are set.
func (o Summarizers) llmConfigured() bool {
	return o.LLM.Model != "" && (o.LLM.BaseURL != "" || o.LLM.APIKey != "")
}

// llmEndpoint is the OpenAI-compatible endpoint summaries and embeddings
// both call: llm.baseURL and llm.apiKey, else OPENAI_BASE_URL and
// OPENAI_API_KEY, with llm.timeout and llm.maxRetries. The model is the
// caller's (llm.model or llm.embeddingModel).
func llmEndpoint(cfg *config.Config) llm.Config {
	return llm.Config{
		BaseURL:    cmp.Or(cfg.String(nil, "llm.baseURL"), os.Getenv("OPENAI_BASE_URL")),
		APIKey:     cmp.Or(cfg.String(nil, "llm.apiKey"), os.Getenv("OPENAI_API_KEY")),
		Timeout:    cfg.Duration(nil, "llm.timeout"),
		MaxRetries: cfg.Int(nil, "llm.maxRetries"),
	}
}
