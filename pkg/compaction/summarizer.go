package compaction

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/llm"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Kind says what a summariser call is for.
type Kind string

// Kinds of summariser calls.
const (
	// KindHistory summarises a stretch of history, updating
	// PreviousSummary when there is one.
	KindHistory Kind = "history"
	// KindTurnPrefix summarises the start of a turn whose end is kept.
	KindTurnPrefix Kind = "turn-prefix"
	// KindMerge combines Partials (oldest first) into one summary.
	KindMerge Kind = "merge"
)

// Layout names a set of headings a summary must use.
type Layout string

// Layouts.
const (
	// LayoutCheckpoint is pi's structured checkpoint (goal, constraints,
	// progress, decisions, next steps, critical context).
	LayoutCheckpoint Layout = "checkpoint"
	// LayoutSafeguard is OpenClaw's five required sections.
	LayoutSafeguard Layout = "safeguard"
	// LayoutNarrative is the single pass's concise narrative (no headings for the
	// model; the extractive summariser uses the checkpoint headings).
	LayoutNarrative Layout = "narrative"
	// LayoutTurnPrefix is for the prefix of a split turn.
	LayoutTurnPrefix Layout = "turn-prefix"
)

// Headings returns the headings of a layout, in order.
func (l Layout) Headings() []string {
	switch l {
	case LayoutSafeguard:
		return []string{"## Decisions", "## Open TODOs", "## Constraints/Rules", "## Pending user asks", "## Exact identifiers"}
	case LayoutTurnPrefix:
		return []string{"## Request", "## Work so far", "## Needed for what follows"}
	case LayoutNarrative:
		return nil
	}
	return []string{"## Goal", "## Constraints & Preferences", "## Progress", "## Key Decisions", "## Next Steps", "## Critical Context"}
}

// Request is one summariser call.
type Request struct {
	Kind   Kind
	Layout Layout
	// Messages are the messages to summarise (history and turn-prefix).
	Messages []*Msg
	// Transcript is Messages serialised for a model, already previewed and
	// capped by the strategy.
	Transcript      string
	PreviousSummary string
	// Partials are summaries of consecutive parts, oldest first (merge).
	Partials []string
	// Instructions are extra requirements: custom instructions, the
	// identifier rule, quality-guard feedback.
	Instructions    string
	MaxOutputTokens int
	// MaxChars is a hard cap in characters (safeguard's 16,000), and
	// BudgetTokens the extractive summary's budget in o200k tokens (0:
	// DefaultSummaryBudgetTokens); the smaller one binds.
	MaxChars     int
	BudgetTokens int
}

// Summarizer turns a Request into summary text.
//
// Strategies and CompactFile never ask which summariser they hold: what differs
// between summarisers (a dry run, the identifier retry, the file lists'
// budget, the summarize strategy's fallback, a whole-preparation call,
// usage) is what Capabilities declares. A new summariser is its own file
// (the type, and registerSource from its init) plus its value in the
// compaction.summarizer key's Enum (pkg/config/keys.go).
type Summarizer interface {
	// Name is what results, details and messages report ("llm",
	// "extractive", "exec"); nothing branches on it.
	Name() string
	// Capabilities declares how compaction treats the summariser.
	Capabilities() Capabilities
	Summarize(ctx context.Context, r *Request) (string, error)
}

// Capabilities is what a summariser declares about itself. The zero value
// is a summariser that calls out (to a model, a command or an agent):
// a dry run does not call it, its answer is not asked for again, pi's file
// lists are appended whole, and the summarize strategy falls back to an
// offline extract when it fails.
type Capabilities struct {
	// Offline: it runs in this process, deterministic and free. A dry run
	// calls it and reports the real summary; when it fails, the summarize
	// strategy does not fall back to the trim extract (an offline extract
	// too: there is no outage for it to stand in for).
	Offline bool
	// Budgeted: its summary keeps Request.BudgetTokens, so the default
	// strategy cuts pi's file lists to fit the same budget (a model's
	// summary is bounded by MaxOutputTokens instead; its lists stay whole,
	// as pi writes them).
	Budgeted bool
	// Retries: asking once more, with the identifiers its summary dropped,
	// can change the answer (a model); compaction.identifierRetry applies
	// only then. A deterministic summariser would repeat itself.
	Retries bool
	// Whole, when set, summarises a whole preparation in one call instead
	// of the strategy's requests (an external command that owns the
	// summary). It sees the session itself, so requests are not redacted
	// for it; its summary is, when it comes back, and pi's file lists are
	// appended unless it wrote them.
	Whole PreparationFunc
	// Usage, when set, reports what the summariser has spent so far (model
	// calls and tokens): CompactFile reports the difference a compaction made.
	Usage func() Usage
	// Model is the chat model it summarises with, if it is one: the memory
	// flush writes its notes with the same model.
	Model *llm.Client
}

// PreparationFunc summarises a whole preparation: the session, the plan,
// the settings, the (redacted unless kept) messages to summarise and the
// split turn's prefix, and the cumulative file operations.
type PreparationFunc func(ctx context.Context, s *transcript.Session, p *Preparation, set Settings, msgs, prefix []*Msg, ops *FileOps) (string, error)

// Usage is what a summariser spent (zero for the extractive one).
type Usage struct {
	Model        string `json:"model,omitempty"`
	Calls        int    `json:"calls"`
	InputTokens  int    `json:"inputTokens"`
	OutputTokens int    `json:"outputTokens"`
}

// LLMSummarizer summarises with an OpenAI-compatible chat model.
type LLMSummarizer struct {
	Client *llm.Client
}

// NewLLMSummarizer wraps a client.
func NewLLMSummarizer(c *llm.Client) *LLMSummarizer { return &LLMSummarizer{Client: c} }

func init() {
	registerSource("llm", func(_ string, env Env) (Summarizer, error) {
		c, err := env.Client()
		if err != nil {
			return nil, err
		}
		return NewLLMSummarizer(c), nil
	})
}

// Name implements Summarizer.
func (l *LLMSummarizer) Name() string { return "llm" }

// Capabilities implements Summarizer: a model, asked again when it drops
// identifiers, whose calls and tokens are reported.
func (l *LLMSummarizer) Capabilities() Capabilities {
	return Capabilities{Retries: true, Usage: l.Usage, Model: l.Client}
}

// Usage reports the client's calls and tokens so far.
func (l *LLMSummarizer) Usage() Usage {
	st := l.Client.Stats()
	return Usage{Model: l.Client.Model(), Calls: st.Calls, InputTokens: st.InputTokens, OutputTokens: st.OutputTokens}
}

// Summarize implements Summarizer.
func (l *LLMSummarizer) Summarize(ctx context.Context, r *Request) (string, error) {
	system, user := buildPrompt(r)
	c, err := l.Client.Complete(ctx, llm.Request{System: system, User: user, MaxTokens: r.MaxOutputTokens})
	if err != nil {
		return "", err
	}
	return c.Text, nil
}

// The prompts are ctxtool's own wording. They ask for the same kind of
// structured hand-over note as pi and OpenClaw so that a later pi or
// OpenClaw compaction can update our summaries and vice versa.
const systemPrompt = `You write hand-over notes for an AI coding agent whose conversation is being shortened to fit its context window. You are given an excerpt of the conversation between a user and the agent, including the tools the agent called and what they returned.

Write the note only. Do not continue the conversation, do not answer questions asked in it, do not call tools, and do not add greetings or commentary about the task of summarising.`

func headingList(l Layout) string {
	var b strings.Builder
	for _, h := range l.Headings() {
		b.WriteString(h)
		b.WriteByte('\n')
		switch h {
		case "## Progress":
			b.WriteString("### Done\n### In Progress\n### Blocked\n")
		}
	}
	return b.String()
}

func layoutGuidance(l Layout) string {
	switch l {
	case LayoutSafeguard:
		return `Under "## Decisions": what was decided and why. "## Open TODOs": unfinished work with its status (in progress / blocked / pending) and counts such as "5 of 17 done". "## Constraints/Rules": requirements and preferences the user stated. "## Pending user asks": requests not yet fully answered, the latest one first. "## Exact identifiers": the file paths, ids, hashes, URLs, hosts and ports the work depends on, copied character for character.`
	case LayoutTurnPrefix:
		return `Under "## Request": what the user asked for in this turn. "## Work so far": what the agent has done in this turn up to the excerpt's end. "## Needed for what follows": facts, paths and results that the kept rest of the turn relies on.`
	case LayoutNarrative:
		return ""
	}
	return `Under "## Goal": what the user is trying to achieve. "## Constraints & Preferences": requirements the user stated. "## Progress": finished items as "- [x] …" under "### Done", current work as "- [ ] …" under "### In Progress", and anything stuck under "### Blocked". "## Key Decisions": "- **decision**: reason". "## Next Steps": a numbered list. "## Critical Context": facts the agent cannot work without — exact file paths, function names, commands, error messages and ids.`
}

// buildPrompt assembles the system and user messages of a request.
func buildPrompt(r *Request) (string, string) {
	var b strings.Builder
	switch r.Kind {
	case KindMerge:
		b.WriteString("Notes on consecutive parts of one conversation, oldest first:\n\n")
		for i, p := range r.Partials {
			fmt.Fprintf(&b, "<part index=\"%d\" of=\"%d\">\n%s\n</part>\n\n", i+1, len(r.Partials), p)
		}
	default:
		b.WriteString("<transcript>\n")
		b.WriteString(r.Transcript)
		b.WriteString("\n</transcript>\n\n")
	}
	if r.PreviousSummary != "" && r.Kind != KindTurnPrefix {
		b.WriteString("<earlier-note>\n")
		b.WriteString(r.PreviousSummary)
		b.WriteString("\n</earlier-note>\n\n")
	}
	switch {
	case r.Kind == KindTurnPrefix:
		b.WriteString("The transcript is the first part of one long turn; the rest of that turn stays in the agent's context word for word. Write a short note that lets the agent understand the rest of the turn without this part.\n")
	case r.Kind == KindMerge && r.PreviousSummary != "":
		b.WriteString("Combine the notes into one note, folding them into the earlier note: keep every fact from the earlier note that still matters, add what the parts add, and prefer the most recent state when they disagree.\n")
	case r.Kind == KindMerge:
		b.WriteString("Combine the notes into one note. Keep active tasks with their status, progress counts, the user's latest request and what was being done about it, decisions with their reasons, open questions, constraints and promised follow-ups. Prefer the most recent state when notes disagree.\n")
	case r.Layout == LayoutNarrative && r.PreviousSummary != "":
		b.WriteString("Rewrite the earlier note so that it also covers the transcript, as one concise narrative. Keep every fact from the earlier note that still matters.\n")
	case r.Layout == LayoutNarrative:
		b.WriteString("Summarise the transcript as one concise narrative.\n")
	case r.PreviousSummary != "":
		b.WriteString("Update the earlier note with what happened in the transcript: keep every fact from it that still matters, move work that is now finished to Done, add new decisions and context, refresh the next steps, and drop what no longer matters.\n")
	default:
		b.WriteString("Write a hand-over note for the transcript that another agent could pick the work up from.\n")
	}
	if r.Layout == LayoutNarrative {
		b.WriteString("Keep precisely: the user's original request and any criteria or instructions; every decision and its reason; data points, URLs, file paths and identifiers that may be needed later; scores, rankings or evaluations; the current status and the next steps. Do not copy raw tool output: say what was retrieved and what it showed.\n")
	} else {
		b.WriteString("\nUse exactly these headings, in this order, with short bullet points under each:\n\n")
		b.WriteString(headingList(r.Layout))
		b.WriteString("\n")
		b.WriteString(layoutGuidance(r.Layout))
		b.WriteString("\nKeep exact file paths, function names, commands and error messages; be brief everywhere else.\n")
	}
	if r.Instructions != "" {
		b.WriteString("\nAlso:\n")
		b.WriteString(r.Instructions)
		b.WriteString("\n")
	}
	return systemPrompt, b.String()
}

// identifierRule is the strict identifier policy, in our own words.
const identifierRule = "Copy opaque identifiers exactly as they appear — UUIDs, hashes, ids, tokens, API keys, host names, IP addresses, ports, URLs and file names. Never shorten, reformat or invent them."

// languageRule keeps the note in the conversation's language.
const languageRule = "Write the note in the main language of the conversation, keep the headings exactly as given, and never translate code, file paths, identifiers or error messages."
