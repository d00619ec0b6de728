package config

import (
	"fmt"
	"strings"
)

// Kind is the type a key's value must have; its name is what error
// messages say was expected.
type Kind string

const (
	String   Kind = "a string"
	Int      Kind = "an integer"
	Float    Kind = "a number"
	Bool     Kind = "true or false"
	Duration Kind = "a duration (e.g. 90s, 10m)"
	// Map is a section of free-form names: models.<name>.contextWindow.
	Map Kind = "a map of model names"
)

// Key is one configuration setting. keys is the single table of them: the
// loader validates config files, environment and flags against it, flags
// are defined from it (Flag), and config.example.yaml is generated from it
// (a test fails when the file and the table differ).
//
// To add a setting: append a Key to keys (in the section it belongs to),
// read it with Config.String/Int/Float/Bool/Duration(fs, name), define its
// flag with the Flag function if it has one, then regenerate the example:
//
//	go test ./pkg/config -run TestExampleConfig -update
type Key struct {
	// Name is the dotted key, as in the config file: "compaction.keepRecentTokens".
	Name string
	Kind Kind
	// Default is the value when nothing sets the key: string, int,
	// float64, bool, or a duration string ("120s").
	Default any
	// Flag is the command-line flag that overrides the key on the commands
	// that define it with config.Flag ("" = config and environment only).
	Flag string
	// Doc says what the key does, in one or two sentences: the flag's help
	// and the comment above the key in config.example.yaml.
	Doc string
	// Enum lists the allowed values of a String key (validated; offered by
	// shell completion).
	Enum []string
	// Range bounds a numeric key (nil: any value).
	Range *Range
}

// Range bounds a number; the message names the key and the rule.
type Range struct {
	Min, Max     float64
	HasMax       bool
	ExclusiveMin bool // Min itself is not allowed
}

func nonNegative() *Range { return &Range{Min: 0} }
func positive() *Range    { return &Range{Min: 0, ExclusiveMin: true} }
func unit() *Range        { return &Range{Min: 0, Max: 1, HasMax: true} }
func share() *Range       { return &Range{Min: 0, Max: 1, HasMax: true, ExclusiveMin: true} }

// check returns "" when n is allowed, else the rule it breaks.
func (r *Range) check(n float64) string {
	if r == nil {
		return ""
	}
	switch {
	case r.HasMax && r.ExclusiveMin && (n <= r.Min || n > r.Max):
		return fmt.Sprintf("must be in (%v, %v]", r.Min, r.Max)
	case r.HasMax && (n < r.Min || n > r.Max):
		return fmt.Sprintf("must be between %v and %v", r.Min, r.Max)
	case r.ExclusiveMin && n <= r.Min && r.Min == 0:
		return "must be positive"
	case r.ExclusiveMin && n <= r.Min:
		return fmt.Sprintf("must be greater than %v", r.Min)
	case n < r.Min && r.Min == 0:
		return "must not be negative"
	case n < r.Min:
		return fmt.Sprintf("must be at least %v", r.Min)
	}
	return ""
}

// sectionDocs documents the sections of config.example.yaml (comment above
// the section's first line).
var sectionDocs = map[string]string{
	"estimate":               "",
	"llm":                    "OpenAI-compatible endpoint for LLM summaries and (optional) embeddings.\nOPENAI_API_KEY and OPENAI_BASE_URL are read when apiKey/baseURL are empty.",
	"compaction":             "",
	"compaction.rolling":     "Rolling window (ctxtool roll).",
	"compaction.summarize":   "Single-pass summary (docs/design/single-pass-summary.md).",
	"compaction.extractive":  "The built-in offline summarizer (pkg/facts keeps the facts).",
	"compaction.hooks":       "Commands run around a compaction (OpenClaw's before_compaction / after_compaction, docs/design/openclaw-compaction.md): each gets its event as JSON on stdin and is killed after timeout; a failing or hanging hook is logged on stderr and never stops the compaction.",
	"compaction.memoryFlush": "Pre-compaction memory flush (ctxtool flush, compact --memory-flush), docs/design/openclaw-compaction.md:\nflush when the session's tokens >= window - reserveTokensFloor - softThresholdTokens,\nonce per compaction; notes go to <workspace>/memory/YYYY-MM-DD.md.",
	"contextManagement":      "VS7 context budget (docs/design/context-budget.md), used by ctxtool budget. The window is split by\nthese ratios; what no ratio claims is the reserve, which history gets together\nwith any system-prompt or bootstrap budget left unused.",
	"recall":                 "",
	"checkpoint":             "",
	"agent":                  "Inside the agent's loop (ctxtool install pi|openclaw, docs/agent-contract.md).",
	"lint":                   "ctxtool lint: the CI gate for transcripts (`ctxtool lint --list-rules`).",
}

// keys is every configuration key, in the order of config.example.yaml.
var keys = []Key{
	{Name: "stateDir", Kind: String, Default: "", Flag: "state-dir",
		Doc: "Checkpoints and the recall index live here. Default: $XDG_STATE_HOME/ctxtool (or ~/.local/state/ctxtool). Also env CTXTOOL_STATE_DIR."},

	{Name: "model", Kind: String, Default: "", Flag: "model",
		Doc: `Model id used to look up the context window; "" = the session's last model.`},
	{Name: "contextWindow", Kind: Int, Default: 0, Flag: "context-window", Range: nonNegative(),
		Doc: "Context window in tokens; 0 = from the model table (200000 for unknown models)."},
	{Name: "contextTokens", Kind: Int, Default: 0, Range: nonNegative(),
		Doc: "Cap on every model's context window, as OpenClaw's agents.defaults.contextTokens (read from --openclaw-config too); 0 = no cap. --context-window wins over it."},
	{Name: "models", Kind: Map,
		Doc: "Per-model overrides of the built-in model table: models.<name>.contextWindow."},

	{Name: "estimate.tokenizer", Kind: String, Default: "auto", Flag: "tokenizer",
		Enum: []string{"auto", "heuristic", "usage", "calibrated", "o200k", "cl100k"},
		Doc:  "How tokens are measured: auto (calibrated from the session's usage records, else o200k) | heuristic (pi's chars/4) | usage | calibrated | o200k | cl100k."},

	{Name: "llm.baseURL", Kind: String, Default: "", Doc: "Base URL of the OpenAI-compatible API; \"\" = OPENAI_BASE_URL, else OpenAI."},
	{Name: "llm.model", Kind: String, Default: "", Flag: "llm-model", Doc: "Summarizer model; needed for --summarizer llm."},
	{Name: "llm.apiKey", Kind: String, Default: "", Doc: "API key; \"\" = OPENAI_API_KEY."},
	{Name: "llm.embeddingModel", Kind: String, Default: "", Doc: `Embedding model for hybrid recall search; "" = keyword search only.`},
	{Name: "llm.timeout", Kind: Duration, Default: "120s", Doc: "Timeout of one LLM call."},
	{Name: "llm.deadline", Kind: Duration, Default: "10m", Doc: "Overall deadline of one command's LLM work."},
	{Name: "llm.maxRetries", Kind: Int, Default: 4, Range: nonNegative(),
		Doc: "Retries on 429/5xx, exponential backoff with jitter, Retry-After honoured."},

	{Name: "compaction.mode", Kind: String, Default: "default", Flag: "strategy",
		Enum: []string{"default", "safeguard", "summarize"},
		Doc:  "Compaction strategy: default (pi) | safeguard (OpenClaw) | summarize (single pass)."},
	{Name: "compaction.summarizer", Kind: String, Default: "auto", Flag: "summarizer",
		Enum: []string{"auto", "llm", "extractive", "exec:"},
		Doc:  "auto (llm when configured, else extractive) | llm | extractive (built in, offline) | exec:COMMAND (COMMAND reads the preparation as JSON on stdin and writes the summary)."},
	{Name: "compaction.reserveTokens", Kind: Int, Default: 16384, Flag: "reserve-tokens", Range: nonNegative(),
		Doc: "pi: tokens reserved below the window; --if-needed compacts when tokens > window - reserveTokens."},
	{Name: "compaction.keepRecentTokens", Kind: Int, Default: 20000, Flag: "keep-recent-tokens", Range: nonNegative(),
		Doc: "Tokens of recent history kept verbatim."},
	{Name: "compaction.reserveTokensFloor", Kind: Int, Default: 20000, Range: nonNegative(),
		Doc: "OpenClaw safeguard: reserve floor (0 disables it)."},
	{Name: "compaction.maxHistoryShare", Kind: Float, Default: 0.5, Range: share(),
		Doc: "OpenClaw safeguard: largest share of the window the summarized history may take."},
	{Name: "compaction.recentTurnsPreserve", Kind: Int, Default: 3, Range: nonNegative(),
		Doc: "OpenClaw safeguard: recent user turns kept verbatim."},
	{Name: "compaction.identifierPolicy", Kind: String, Default: "strict", Enum: []string{"strict", "off", "custom"},
		Doc: "strict | off | custom (then identifierInstructions is used)."},
	{Name: "compaction.identifierInstructions", Kind: String, Default: "", Doc: "Identifier instructions for identifierPolicy: custom."},
	{Name: "compaction.customInstructions", Kind: String, Default: "", Flag: "instructions",
		Doc: "Extra instructions appended to the summarizer instruction."},
	{Name: "compaction.qualityGuard.enabled", Kind: Bool, Default: false, Doc: "Check LLM summaries and retry weak ones."},
	{Name: "compaction.qualityGuard.maxRetries", Kind: Int, Default: 1, Range: nonNegative(), Doc: "Retries of the quality guard."},
	{Name: "compaction.summarize.protectedTail", Kind: Int, Default: 6, Range: nonNegative(), Doc: "Messages kept verbatim at the end."},
	{Name: "compaction.summarize.maxInputChars", Kind: Int, Default: 100000, Range: positive(), Doc: "Characters of history sent to the summarizer."},
	{Name: "compaction.summarize.maxOutputTokens", Kind: Int, Default: 4096, Range: positive(), Doc: "Longest summary, in tokens."},
	{Name: "compaction.summarize.thresholdTokens", Kind: Int, Default: 80000, Range: nonNegative(), Doc: "Compact (with --if-needed) above this many tokens."},
	{Name: "compaction.summarize.fallback", Kind: String, Default: "trim", Enum: []string{"trim", "fail"},
		Doc: "trim: on summarizer failure, trim with a fallback note | fail."},
	{Name: "compaction.extractive.budgetTokens", Kind: Int, Default: 0, Range: nonNegative(),
		Doc: "Budget of the offline extractive summary in o200k tokens (history, split-turn prefix and file lists together); 0 = the larger of 4000 and keepRecentTokens/4. When it binds, constraints, open requests, decisions, errors, numbers and identifiers are kept in that order, the user's own words before tool output."},
	{Name: "compaction.identifierRetry", Kind: Bool, Default: true,
		Doc: "When a model's summary drops identifiers of the summarised region (paths, URLs, hashes, ids), ask it once more, listing them."},
	{Name: "compaction.hooks.beforeCompaction", Kind: String, Default: "",
		Doc: "Shell command run while the summary is written; stdin: {hook, messageCount, tokenCount, sessionFile, toSummarize}. Failures and timeouts are logged, never fatal."},
	{Name: "compaction.hooks.afterCompaction", Kind: String, Default: "",
		Doc: "Shell command run after the entry is written; stdin: {hook, messageCount, tokenCount, compactedCount, sessionFile, firstKeptEntryId, tokensBefore, backup}."},
	{Name: "compaction.hooks.timeout", Kind: Duration, Default: "30s", Doc: "A hook still running after this is killed (with what it started)."},

	{Name: "compaction.memoryFlush.enabled", Kind: Bool, Default: true,
		Doc: "Run the memory flush (false: flush and compact --memory-flush do nothing)."},
	{Name: "compaction.memoryFlush.softThresholdTokens", Kind: Int, Default: 4000, Flag: "soft-threshold-tokens", Range: nonNegative(),
		Doc: "Flush this many tokens before the compaction reserve (window - reserveTokensFloor)."},
	{Name: "compaction.memoryFlush.forceFlushTranscriptBytes", Kind: Int, Default: 2097152, Range: nonNegative(),
		Doc: "Flush also when the session file has reached this many bytes, whatever its token count says (OpenClaw's 2 MiB: token counts can be stale or pinned); 0 = tokens only."},
	{Name: "compaction.memoryFlush.prompt", Kind: String,
		Default: "Pre-compaction memory flush. Store durable memories now (use memory/YYYY-MM-DD.md; create memory/ if needed). If nothing to store, reply with NO_REPLY.",
		Doc:     "User prompt of the flush turn sent to an LLM (the offline flush ignores it)."},
	{Name: "compaction.memoryFlush.systemPrompt", Kind: String,
		Default: "Pre-compaction memory flush turn. The session is near auto-compaction; capture durable memories to disk. You may reply, but usually NO_REPLY is correct.",
		Doc:     "System prompt of the flush turn sent to an LLM."},

	{Name: "compaction.rolling.targetUtilization", Kind: Float, Default: 0.8, Flag: "target-utilization", Range: share(),
		Doc: "Fraction of the context window kept after a roll (eviction note included)."},
	{Name: "compaction.rolling.minKeepMessages", Kind: Int, Default: 10, Flag: "min-keep-messages", Range: nonNegative(),
		Doc: "Always keep at least this many recent messages."},
	{Name: "compaction.rolling.evictionNote", Kind: Bool, Default: true, Flag: "eviction-note",
		Doc: "Write the eviction note as the compaction summary (false: empty summary)."},
	{Name: "compaction.rolling.trigger", Kind: Float, Default: 0.0, Flag: "trigger", Range: unit(),
		Doc: "Roll at utilization >= trigger; 0 = at pi's compaction threshold (on the command line, --trigger 0 rolls every session above the target)."},

	{Name: "recall.enabled", Kind: Bool, Default: true, Doc: "Index and search transcripts; roll falls back to a summary when false."},
	{Name: "recall.url", Kind: String, Default: "", Flag: "index",
		Doc: `Where the recall index lives: "" = <stateDir>/recall/index.sqlite; a SQLite file path; or postgres://user:password@host:5432/db for one index shared by a fleet (tables ctxtool_recall_*; add ?search_path=name for a namespace).`},
	{Name: "recall.maxResults", Kind: Int, Default: 6, Flag: "max-results", Range: positive(), Doc: "Hits returned by search."},
	{Name: "recall.minScore", Kind: Float, Default: 0.35, Flag: "min-score", Range: unit(), Doc: "Lowest score of a search hit (0-1)."},
	{Name: "recall.toolOutputChars", Kind: Int, Default: 0, Range: nonNegative(),
		Doc: "Indexed characters of one tool result / tool call / bash run (head + tail); 0 indexes all of it up to 8 MiB (a longer piece keeps its head and tail)."},
	{Name: "recall.redact", Kind: Bool, Default: true,
		Doc: `Redact secrets (lint's detector) wherever text leaves a session: the recall index and what search and budget print, summaries and the summariser's request, checkpoints, resume text and memory-flush notes. A secret becomes [secret:<kind>:<fingerprint>] (lint's fingerprint; search finds it). false keeps them in clear (except what the checkpoint builder reads of the messages): an explicit opt-out; an index built so is rebuilt when redaction is turned back on.`},

	{Name: "contextManagement.enabled", Kind: Bool, Default: true, Doc: "VS7 context management."},
	{Name: "contextManagement.budget.systemPromptRatio", Kind: Float, Default: 0.15, Range: unit(), Doc: "Share of the window for the system prompt (tools, runtime info, semantic history)."},
	{Name: "contextManagement.budget.bootstrapRatio", Kind: Float, Default: 0.10, Range: unit(),
		Doc: "Share of the window for bootstrap files; each file is cut at this budget × 4 characters."},
	{Name: "contextManagement.budget.historyRatio", Kind: Float, Default: 0.45, Range: unit(), Doc: "Share of the window for conversation history (before reclaim)."},
	{Name: "contextManagement.budget.responseRatio", Kind: Float, Default: 0.20, Range: unit(), Doc: "Share of the window reserved for the response."},
	{Name: "contextManagement.budget.minResponseTokens", Kind: Int, Default: 4096, Range: nonNegative(),
		Doc: "The response never gets less; history gives up the difference."},
	{Name: "contextManagement.rollingSummary.enabled", Kind: Bool, Default: true, Doc: "Summarize history older than the last windowSize user turns when it grows past the trigger."},
	{Name: "contextManagement.rollingSummary.windowSize", Kind: Int, Default: 5, Range: nonNegative(),
		Doc: "User turns kept verbatim (also the turns history limiting always preserves)."},
	{Name: "contextManagement.rollingSummary.summaryMaxTokens", Kind: Int, Default: 2000, Range: nonNegative(), Doc: "Longest rolling summary, in tokens."},
	{Name: "contextManagement.rollingSummary.triggerThreshold", Kind: Int, Default: 30000, Range: nonNegative(),
		Doc: "Summarize when history exceeds min(triggerThreshold, 80% of the history budget) tokens."},
	{Name: "contextManagement.semanticHistory.enabled", Kind: Bool, Default: true,
		Doc: "Inject recall hits for the last user prompt as <relevant-prior-context>, within 30% of the bootstrap budget."},
	{Name: "contextManagement.semanticHistory.maxRetrievedChunks", Kind: Int, Default: 5, Range: nonNegative(), Doc: "Most chunks injected."},
	{Name: "contextManagement.semanticHistory.minRelevanceScore", Kind: Float, Default: 0.6, Range: unit(), Doc: "Lowest score of an injected chunk (0-1)."},
	{Name: "contextManagement.semanticHistory.scope", Kind: String, Default: "workspace", Enum: []string{"workspace", "agent", "all"},
		Doc: "Sessions semantic history searches: the session's agent and project (workspace), its agent, or all."},

	{Name: "checkpoint.keep", Kind: Int, Default: 5, Flag: "keep", Range: positive(), Doc: "Checkpoints kept per session."},
	{Name: "checkpoint.dedupeThreshold", Kind: Float, Default: 0.05, Flag: "dedupe-threshold", Range: unit(),
		Doc: "No new checkpoint when input tokens changed by less than this share."},

	{Name: "agent.summarySource", Kind: String, Default: "auto", Enum: []string{"auto", "ctxtool", "augment"},
		Doc: "Whose summary an agent's compaction stores (ctxtool install pi|openclaw): augment (the agent's own model summarizes; ctxtool audits it and adds what it dropped, the pins and the checkpoint's resume text) | ctxtool (compaction.summarizer's) | auto (augment where the agent has a model, as it has inside pi and OpenClaw; else ctxtool)."},
	{Name: "agent.window", Kind: Bool, Default: false,
		Doc: "Rolling window inside the agent (ctxtool install pi|openclaw): every model request leaves out its oldest messages down to compaction.rolling.targetUtilization, with a note and a recall tool; the session keeps every message."},

	{Name: "lint.failOn", Kind: String, Default: "error", Flag: "fail-on", Enum: []string{"error", "warning", "note", "never"},
		Doc: "Exit 3 when a finding at or above this severity is found (only new ones with --baseline): error | warning | note | never."},
	{Name: "lint.enable", Kind: String, Default: "",
		Doc: `Rules to turn on, comma-separated ids from --list-rules ("all" for every rule); the --enable flag adds to it.`},
	{Name: "lint.disable", Kind: String, Default: "",
		Doc: "Rules to turn off, comma-separated; the --disable flag adds to it."},
	{Name: "lint.severity", Kind: String, Default: "",
		Doc: `Per-rule severity overrides, comma-separated rule=error|warning|note|off (e.g. "unreachable-entries=off,pending-tool-call=error").`},
	{Name: "lint.maxLineBytes", Kind: Int, Default: 4194304, Flag: "max-line-bytes", Range: nonNegative(),
		Doc: "oversized-line: a single line over this many bytes (0 = off)."},
	{Name: "lint.maxImageBytes", Kind: Int, Default: 1048576, Flag: "max-image-bytes", Range: nonNegative(),
		Doc: "large-inline-image: an inline image over this many decoded bytes (0 = off)."},
	{Name: "lint.maxTokens", Kind: Int, Default: 0, Flag: "max-tokens", Range: nonNegative(),
		Doc: "context-over-budget: the active context may hold at most this many tokens, counted with estimate.tokenizer (0 = no limit)."},
	{Name: "lint.maxUtilization", Kind: Float, Default: 0.0, Range: nonNegative(),
		Doc: "context-over-budget: at most this share of the context window (0.8 = 80%; 0 = no limit); flag --max-utilization 0.8 or 80%."},
	{Name: "lint.fixIdle", Kind: Duration, Default: "10m", Flag: "idle",
		Doc: "lint --fix leaves alone sessions written to more recently than this (a tool may still be running; standalone pi takes no lock)."},

	// prune: archiving old sessions (docs/prune-cron.md).
	{Name: "prune.olderThan", Kind: String, Default: "30d", Flag: "older-than",
		Doc: `prune archives sessions last written longer ago than this (30d, 2w, 36h; "0" = off).`},
	{Name: "prune.keepLast", Kind: Int, Default: 3, Flag: "keep-last", Range: nonNegative(),
		Doc: "prune never archives the newest N sessions of each agent and project."},
	{Name: "prune.maxTotal", Kind: String, Default: "", Flag: "max-total",
		Doc: `prune archives further sessions, oldest first, while all sessions found take more than this (20GB, 500MiB; "" = no limit).`},
	{Name: "prune.idle", Kind: Duration, Default: "1h", Flag: "idle",
		Doc: "prune leaves alone sessions written to more recently than this (possibly live; standalone pi takes no lock)."},
	{Name: "prune.archiveDir", Kind: String, Default: "", Flag: "archive-dir",
		Doc: `prune writes archives to <dir>/<agent>/<project>/ instead of beside each session ("" = in place, NAME.jsonl.zst).`},
	{Name: "prune.dedupe", Kind: Bool, Default: false, Flag: "dedupe",
		Doc: "prune moves the inline images of the pi/OpenClaw sessions it archives to a content-addressed store beside the archives (ctxtool-blobs/), one file per distinct image."},
	{Name: "prune.deleteAfter", Kind: String, Default: "180d", Flag: "delete-after",
		Doc: "with --delete, prune removes the archives it made longer ago than this (30d, 2w)."},

	{Name: "mcp.allProjects", Kind: Bool, Default: false,
		Doc: "ctxtool mcp: let an agent's search ask for every project (all_projects). Off, searches stay in the agent's current project: the agent's arguments are untrusted (a prompt it read may ask it to look elsewhere)."},
}

// envOnly are environment variables that are not config keys but belong to
// ctxtool (documented, so they are not reported as mistakes).
var envOnly = map[string]string{
	"CTXTOOL_STATE_DIR": "state directory (same as stateDir / --state-dir)",
	"CTXTOOL_FORCE_TTY": "draw progress bars even when stderr is not a terminal",
}

var keyIndex = func() map[string]int {
	m := make(map[string]int, len(keys))
	for i, k := range keys {
		m[strings.ToLower(k.Name)] = i
	}
	return m
}()

// Lookup returns the key of that name (case-insensitive, as viper reads it).
func Lookup(name string) (Key, bool) {
	i, ok := keyIndex[strings.ToLower(name)]
	if !ok {
		return Key{}, false
	}
	return keys[i], true
}

// mustKey is Lookup for names written in the code: an unknown name is a
// programming error that every test of the command reports.
func mustKey(name string) Key {
	k, ok := Lookup(name)
	if !ok {
		panic(fmt.Sprintf("config: %q is not in the key table (add it to keys in pkg/config/keys.go)", name))
	}
	return k
}

// Env is the environment variable that sets the key: CTXTOOL_ + the name
// in upper case with dots as underscores.
func (k Key) Env() string {
	return "CTXTOOL_" + strings.ToUpper(strings.ReplaceAll(k.Name, ".", "_"))
}

// Defaults returns every key's default value, by name (Map keys excluded).
func Defaults() map[string]any {
	m := make(map[string]any, len(keys))
	for _, k := range keys {
		if k.Kind != Map {
			m[k.Name] = k.Default
		}
	}
	return m
}

// section reports whether name is a section (a prefix of some key).
func section(name string) bool {
	p := strings.ToLower(name) + "."
	for _, k := range keys {
		if strings.HasPrefix(strings.ToLower(k.Name), p) {
			return true
		}
	}
	return false
}

// suggest names the key closest to a mistyped one, or "".
func suggest(name string) string {
	best, bestD := "", 4
	for _, k := range keys {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k.Name)); d < bestD {
			best, bestD = k.Name, d
		}
	}
	// Also a key under a different section with the same last element.
	if best == "" {
		last := name[strings.LastIndex(name, ".")+1:]
		for _, k := range keys {
			if strings.EqualFold(k.Name[strings.LastIndex(k.Name, ".")+1:], last) {
				return k.Name
			}
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
