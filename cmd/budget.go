package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxtool/ctxtool/pkg/budget"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/config"
	"github.com/ctxtool/ctxtool/pkg/exitcode"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// BudgetOptions are the inputs of `ctxtool budget`.
type BudgetOptions struct {
	IO           *IOStreams
	Files        []string
	JSON         bool
	Emit         string // "" | "context"
	Verbose      bool
	Workspace    string
	SystemPrompt string // file
	Config       budget.Config
	// Recall is the index semantic history searches (an embedder turns on
	// hybrid search).
	Recall recallSettings
	// KeepSecrets prints the context unredacted (recall.redact: false).
	KeepSecrets bool
	// Summarize runs the rolling summary with the summariser of
	// Compaction's set (auto, llm or extractive).
	Summarize  bool
	Compaction Compaction
	// Window resolves the session's window, as for every command that
	// measures a context.
	Window models.Settings
}

func newBudgetCmd(f *Factory, runF func(*BudgetOptions) error) *cobra.Command {
	return command(f, &BudgetOptions{IO: f.IO}, runF, runBudget, &cobra.Command{
		Use:   "budget FILE|DIR...",
		Short: "Show what the next model request would contain, part by part",
		Long: `Show what an agent would send the model next for a session, and where every
token goes: system prompt, workspace files, recalled history, a rolling
summary and the recent messages, each within its share of the window. It
follows OpenClaw's context budget (the design called VS7). No model is
called unless --summarize asks for the rolling summary.

  1. The window is split by contextManagement.budget ratios: system prompt
     15%, bootstrap files 10%, history 45%, response 20% (at least
     minResponseTokens 4096, taken from history), the rest (10%) reserve.
  2. Bootstrap files of --workspace (AGENTS.md, SOUL.md, TOOLS.md,
     IDENTITY.md, USER.md, HEARTBEAT.md, BOOTSTRAP.md, MEMORY.md) are
     injected as OpenClaw does, each truncated at bootstrap tokens × 4
     characters (first 70% + last 20% around a marker); missing ones leave a
     [MISSING] line. memory/*.md notes are listed, not injected.
  3. Semantic history: recall hits (ctxtool index) for the last user prompt,
     at least minRelevanceScore, formatted as <relevant-prior-context> within
     30% of the bootstrap budget and added to the system prompt.
  4. Unused system-prompt and bootstrap budget plus the reserve go to
     history: historyBudget = history + reclaimed + reserve.
  5. Rolling summary: when the history exceeds min(triggerThreshold, 80% of
     the history budget), everything before the last windowSize user turns
     would be summarised; --summarize does it (offline extractive summariser
     or the configured LLM) and injects it as the leading context message.
     A failed summary falls back to truncation with a warning.
  6. History is limited by tokens: the last windowSize user turns are always
     kept, then as many older turns as fit; a tool call is never separated
     from its result.

Sizes are pi's chars/4 rule, the unit VS7 budgets in. The system prompt is
--system-prompt FILE, or the system prompt + tools overhead learnt from the
session's usage records. -v prints VS7's verification log lines on
stderr. --emit context prints the assembled context as JSON messages
(system prompt, bootstrap, summary, history as pi holds them) for a wrapper
or a test to send; their chars/4 sizes add up to the reported total.`,
		Example: `  ctxtool budget session.jsonl --workspace ~/.openclaw/workspace
  ctxtool budget session.jsonl --workspace ws --system-prompt system.txt --json
  ctxtool budget session.jsonl --workspace ws --summarize -v
  ctxtool budget session.jsonl --system-prompt system.txt --emit context > request.json`,
		Args: cobra.MinimumNArgs(1),
	})
}

func (o *BudgetOptions) flags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.Workspace, "workspace", "", "the agent's workspace directory (bootstrap files)")
	fl.StringVar(&o.SystemPrompt, "system-prompt", "", "file holding the system prompt (default: the overhead learnt from usage records)")
	fl.StringVar(&o.Emit, "emit", "", "emit 'context': the assembled request as JSON messages")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "print VS7's verification log lines on stderr")
	fl.BoolVar(&o.Summarize, "summarize", false, "run the rolling summary when it triggers and inject it")
	configFlags(cmd, "contextWindow", "model", "compaction.summarizer", "llm.model", "recall.url")
}

func (o *BudgetOptions) resolve(f *Factory, cfg *config.Config, c *cobra.Command, args []string) error {
	o.Files = args
	o.JSON = f.JSON
	if err := o.load(f); err != nil {
		return err
	}
	o.KeepSecrets = keepSecrets(cfg)
	// Only semantic history searches the index: with it off, the recall
	// settings (an embedder that cannot be built) must not stop budget.
	if !o.Config.SemanticHistory.Enabled {
		return nil
	}
	var err error
	o.Recall, err = f.Recall()
	return err
}

// load resolves the flags and contextManagement.* config.
func (o *BudgetOptions) load(f *Factory) error {
	o.Config = budgetConfig(f.cfg)
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if o.Emit != "" && o.Emit != "context" {
		return fmt.Errorf("--emit %q: the only thing to emit is 'context'", o.Emit)
	}
	o.Compaction, o.Window = f.Compaction(), f.Window()
	return o.Compaction.validate()
}

// budgetConfig reads contextManagement.*.
func budgetConfig(cfg *config.Config) budget.Config {
	return budget.Config{
		Enabled:           cfg.Bool(nil, "contextManagement.enabled"),
		SystemPromptRatio: cfg.Float(nil, "contextManagement.budget.systemPromptRatio"),
		BootstrapRatio:    cfg.Float(nil, "contextManagement.budget.bootstrapRatio"),
		HistoryRatio:      cfg.Float(nil, "contextManagement.budget.historyRatio"),
		ResponseRatio:     cfg.Float(nil, "contextManagement.budget.responseRatio"),
		MinResponseTokens: cfg.Int(nil, "contextManagement.budget.minResponseTokens"),
		RollingSummary: budget.RollingConfig{
			Enabled:          cfg.Bool(nil, "contextManagement.rollingSummary.enabled"),
			WindowSize:       cfg.Int(nil, "contextManagement.rollingSummary.windowSize"),
			SummaryMaxTokens: cfg.Int(nil, "contextManagement.rollingSummary.summaryMaxTokens"),
			TriggerThreshold: cfg.Int(nil, "contextManagement.rollingSummary.triggerThreshold"),
		},
		SemanticHistory: budget.SemanticConfig{
			Enabled:            cfg.Bool(nil, "contextManagement.semanticHistory.enabled"),
			MaxRetrievedChunks: cfg.Int(nil, "contextManagement.semanticHistory.maxRetrievedChunks"),
			MinRelevanceScore:  cfg.Float(nil, "contextManagement.semanticHistory.minRelevanceScore"),
			Scope:              cfg.String(nil, "contextManagement.semanticHistory.scope"),
		},
	}
}

// EmittedContext is what --emit context prints per file.
type EmittedContext struct {
	File          string `json:"file"`
	ContextWindow int    `json:"contextWindow"`
	WindowSource  string `json:"windowSource,omitempty"`
	TotalTokens   int    `json:"totalTokens"`
	// EmittedTokens is Σ chars/4 of Messages; it is TotalTokens unless the
	// system prompt is an overhead learnt from usage (OverheadTokens), which
	// has no text to emit.
	EmittedTokens  int               `json:"emittedTokens"`
	OverheadTokens int               `json:"overheadTokens,omitempty"`
	Messages       []json.RawMessage `json:"messages"`
	Meta           []ContextMetaItem `json:"meta"`
}

// ContextMetaItem says where each emitted message comes from.
type ContextMetaItem struct {
	Region  string `json:"region"`
	Tokens  int    `json:"tokens"`
	EntryID string `json:"entryId,omitempty"`
	Line    int    `json:"line,omitempty"`
}

func runBudget(ctx context.Context, o *BudgetOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var systemPrompt string
	if o.SystemPrompt != "" {
		data, err := os.ReadFile(o.SystemPrompt)
		if err != nil {
			return exitcode.Newf(exitcode.Usage, "--system-prompt %s: %v", o.SystemPrompt, err)
		}
		systemPrompt = string(data)
	}
	var searcher budget.Searcher
	if o.Config.SemanticHistory.Enabled {
		// No index yet is not an error: the report says semantic history
		// needs one.
		if loc, err := o.Recall.location(); err == nil {
			if _, serr := os.Stat(loc); recall.IsURL(loc) || serr == nil {
				ix, err := o.Recall.open()
				if err != nil {
					return err
				}
				defer ix.Close()
				searcher = ix
			}
		}
	}
	var sum compaction.Summarizer
	if o.Summarize {
		var err error
		if sum, err = o.Compaction.pick(o.IO.ErrOut); err != nil {
			return err
		}
	}
	files, err := sessionFiles(o.IO.ErrOut, o.Files, false, false)
	if err != nil {
		return err
	}
	var exit batchExit
	for _, file := range files {
		r, err := budgetFile(ctx, o, file, systemPrompt, searcher, sum)
		if err != nil {
			exit.fail(o.IO.ErrOut, err)
			continue
		}
		warnFile(o.IO.ErrOut, file, r.Warnings)
		if !o.KeepSecrets {
			for i := range r.Messages {
				r.Messages[i].Message = secrets.RedactJSON(r.Messages[i].Message)
			}
		}
		switch {
		case o.Emit == "context":
			err = writeJSONLine(o.IO.Out, emitted(r, o.SystemPrompt == ""))
		case o.JSON:
			err = writeJSONLine(o.IO.Out, r)
		default:
			printBudget(o, r)
		}
		if err != nil {
			return err
		}
	}
	return exit.err()
}

func budgetFile(ctx context.Context, o *BudgetOptions, file, systemPrompt string, searcher budget.Searcher, sum compaction.Summarizer) (*budget.Report, error) {
	if err := checkInput(file); err != nil {
		return nil, err
	}
	s, err := transcript.Load(file)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	models.FromSessionsJSON(s)
	win := models.ForSession(s.Branch(), s.Header, o.Window)
	window := win.Tokens
	abs, _ := filepath.Abs(file)
	in := budget.Input{Session: s, Window: window, WindowSource: win.SourceText(), Config: o.Config, Workspace: o.Workspace,
		SystemPrompt: systemPrompt, HaveSystemPrompt: o.SystemPrompt != "", Searcher: searcher, SessionPath: abs}
	if !in.HaveSystemPrompt {
		in.Overhead = budget.LearntOverhead(s)
		in.OverheadSource = "learnt overhead"
	}
	if o.Verbose {
		in.Logf = func(format string, args ...any) { fmt.Fprintf(o.IO.ErrOut, format+"\n", args...) }
	}
	in.Summarizer, in.KeepSecrets = sum, o.KeepSecrets
	return budget.Plan(ctx, in)
}

func emitted(r *budget.Report, overheadOnly bool) *EmittedContext {
	e := &EmittedContext{File: r.File, ContextWindow: r.ContextWindow, WindowSource: r.WindowSource, TotalTokens: r.TotalTokens, EmittedTokens: r.EmittedTokens,
		Messages: []json.RawMessage{}, Meta: []ContextMetaItem{}}
	if overheadOnly {
		e.OverheadTokens = r.TotalTokens - r.EmittedTokens
	}
	for _, m := range r.Messages {
		e.Messages = append(e.Messages, m.Message)
		e.Meta = append(e.Meta, ContextMetaItem{Region: m.Region, Tokens: m.Tokens, EntryID: m.EntryID, Line: m.Line})
	}
	return e
}

func printBudget(o *BudgetOptions, r *budget.Report) {
	w := o.IO.Out
	fmt.Fprintf(w, "%s — context window %s tokens\n\n", r.File, humanInt(r.ContextWindow))
	printBudgetRegions(w, r)
	if len(r.Bootstrap) > 0 {
		printBootstrapFiles(w, r)
	}
	printBudgetHistory(w, r)
	fmt.Fprintln(w)
}

// printBudgetRegions is the table of each region's budget and actual size.
func printBudgetRegions(w io.Writer, r *budget.Report) {
	t := newTable(w)
	t.row("REGION", "BUDGET", "ACTUAL", "NOTE")
	sp := "system prompt: " + r.SystemPromptSource
	if r.Actual.SemanticHistory > 0 {
		sp += fmt.Sprintf(", %s of it semantic history", humanInt(r.Actual.SemanticHistory))
	}
	t.row("system prompt", humanInt(r.Budget.SystemPrompt), humanInt(r.Actual.SystemPrompt), sp)
	t.row("bootstrap", humanInt(r.Budget.Bootstrap), humanInt(r.Actual.Bootstrap), fmt.Sprintf("max %s chars per file", humanInt(r.BootstrapMaxChars)))
	t.row("history", humanInt(r.Budget.History), humanInt(r.Actual.Summary+r.Actual.History),
		fmt.Sprintf("budget %s = %s + reclaimed %s + reserve %s", humanInt(r.HistoryBudget), humanInt(r.Budget.History), humanInt(r.Reclaimed), humanInt(r.Budget.Reserve)))
	t.row("response", humanInt(r.Budget.Response), "—", "reserved for the reply")
	t.row("reserve", humanInt(r.Budget.Reserve), "—", "given to history")
	t.row("total", humanInt(r.ContextWindow), humanInt(r.TotalTokens), fmt.Sprintf("%s free after the response budget", humanInt(r.Free)))
	t.flush()
}

// printBootstrapFiles lists the bootstrap files and the memory notes that
// are not injected.
func printBootstrapFiles(w io.Writer, r *budget.Report) {
	fmt.Fprintln(w, "\nbootstrap files")
	t := newTable(w)
	t.row("FILE", "CHARS", "INJECTED", "TOKENS", "")
	for _, f := range r.Bootstrap {
		note := ""
		switch {
		case f.Missing:
			note = "missing"
		case f.Skipped:
			note = "skipped: total bootstrap limit reached"
		case f.Truncated:
			note = fmt.Sprintf("truncated at %s chars", humanInt(f.MaxChars))
		}
		t.row(f.Name, humanInt(f.Chars), humanInt(f.InjectedChars), humanInt(f.Tokens), note)
	}
	for _, n := range r.MemoryNotes {
		t.row(filepath.Join("memory", filepath.Base(n.Path)), humanInt(n.Chars), "0", "0", "memory search only, not injected")
	}
	t.flush()
}

// printBudgetHistory says what of the history is kept, summarised and
// injected from the semantic history.
func printBudgetHistory(w io.Writer, r *budget.Report) {
	h := r.History
	fmt.Fprintln(w, "\nhistory")
	t := newTable(w)
	t.row("messages", fmt.Sprintf("%s of %s kept (%s of %s tokens, budget %s)", humanInt(h.MessagesOut), humanInt(h.MessagesIn), humanInt(h.TokensOut), humanInt(h.TokensIn), humanInt(h.Budget)))
	if h.FirstKeptLine > 0 {
		t.row("kept from", fmt.Sprintf("line %d (entry %s)", h.FirstKeptLine, h.FirstKeptEntryID))
	}
	if h.PreservedFromLine > 0 {
		t.row("preserved", fmt.Sprintf("last %d user turns from line %d (%s tokens)", h.PreservedTurns, h.PreservedFromLine, humanInt(h.PreservedTokens)))
	}
	rollingSummaryRows(t, r.Rolling)
	semanticHistoryRows(t, r.Semantic)
	t.flush()
}

// rollingSummaryRows say whether the rolling summary triggered and what
// it covers.
func rollingSummaryRows(t *table, rs budget.Rolling) {
	switch {
	case !rs.Enabled:
		t.row("rolling summary", "disabled")
	case !rs.Triggered:
		t.row("rolling summary", fmt.Sprintf("not triggered (%s ≤ %s tokens)", humanInt(rs.HistoryTokens), humanInt(rs.Threshold)))
	default:
		cover := fmt.Sprintf("triggered (%s > %s tokens): covers %s messages, %s tokens", humanInt(rs.HistoryTokens), humanInt(rs.Threshold), humanInt(rs.CoversMessages), humanInt(rs.CoversTokens))
		if rs.FromLine > 0 {
			cover += fmt.Sprintf(", lines %d–%d", rs.FromLine, rs.ToLine)
		}
		t.row("rolling summary", cover)
		switch {
		case rs.Ran:
			t.row("", fmt.Sprintf("summarised by the %s summariser: %s tokens injected", rs.Summarizer, humanInt(rs.SummaryTokens)))
		case rs.Fallback != "":
			t.row("", "summary failed, truncated instead: "+rs.Fallback)
		case rs.Note != "":
			t.row("", rs.Note)
		}
	}
}

// semanticHistoryRows list the semantic history chunks injected.
func semanticHistoryRows(t *table, sh budget.Semantic) {
	switch {
	case !sh.Enabled:
		t.row("semantic history", "disabled")
	case len(sh.Chunks) == 0:
		t.row("semantic history", "nothing injected"+parenthesised(sh.Note))
	default:
		t.row("semantic history", fmt.Sprintf("%d chunks, %s of %s tokens", len(sh.Chunks), humanInt(sh.Tokens), humanInt(sh.BudgetTokens)))
		for _, c := range sh.Chunks {
			t.row("", fmt.Sprintf("%.2f  %s", c.Score, c.Source))
		}
	}
}

func parenthesised(s string) string {
	if s == "" {
		return ""
	}
	return " (" + strings.TrimSuffix(s, ".") + ")"
}
