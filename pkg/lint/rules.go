// Package lint checks session transcripts for the defects that brick agent
// sessions or leak data: torn and glued lines, broken trees, tool calls and
// results that lose their partner on the path pi sends, compactions that
// cut a tool pair or reclaim nothing, contexts over a budget, oversized
// lines and inline images, and live credentials. It is the engine behind
// `ctxtool lint`, the CI gate for transcripts.
//
// Every rule has an id, a default severity, a one-line summary and a remedy;
// every finding names its file and 1-based line (and column where the
// defect sits inside a line). Rules read what the transcript core already
// parsed (transcript.Session: entries, malformed lines, the rebuilt
// context), so lint agrees with estimate/compact/roll and with pi's loader;
// only the secret scan reads the raw bytes again, streaming.
//
// It must not change a session except through Fix: append-only repairs under
// the session lock.
package lint

import (
	"fmt"
	"sort"
	"strings"
)

// Severity of a finding. The zero value is Off (the rule does not run).
type Severity int

const (
	Off Severity = iota
	Note
	Warning
	Error
)

var severityNames = [...]string{Off: "off", Note: "note", Warning: "warning", Error: "error"}

func (s Severity) String() string {
	if s < Off || s > Error {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads "error", "warning", "note" or "off" (also "none").
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error":
		return Error, nil
	case "warning", "warn":
		return Warning, nil
	case "note", "info":
		return Note, nil
	case "off", "none", "never":
		return Off, nil
	}
	return Off, fmt.Errorf("severity %q: use error, warning, note or off", s)
}

// MarshalText writes the severity name (JSON, YAML).
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	*s = v
	return err
}

// Rule describes one check.
type Rule struct {
	ID string
	// Severity is the default; findings of some rules carry a lower one
	// where the defect is harmless in context (e.g. an orphaned tool call
	// of an aborted assistant, which pi never sends).
	Severity Severity
	// Summary says in one line what the rule finds.
	Summary string
	// Remedy says what to do about a finding (a finding may refine it).
	Remedy string
	// Fixable rules have a safe append-only repair (`lint --fix`).
	Fixable bool
	// Needs names the setting without which the rule has nothing to check
	// (it then runs but finds nothing), e.g. "--max-tokens".
	Needs string
}

// The rule ids. They are part of the CLI contract (--enable/--disable,
// config lint.severity.<id>, SARIF ruleId, baselines): never rename one.
const (
	RuleMalformedLine     = "malformed-line"
	RuleGluedLine         = "glued-line"
	RuleTornLine          = "torn-line"
	RuleMissingNewline    = "missing-final-newline"
	RuleNonObjectLine     = "non-object-line"
	RuleInvalidHeader     = "invalid-header"
	RuleExtraHeader       = "extra-header"
	RuleMissingID         = "missing-id"
	RuleDuplicateID       = "duplicate-id"
	RuleBrokenParent      = "broken-parent"
	RuleParentCycle       = "parent-cycle"
	RuleUnreachable       = "unreachable-entries"
	RuleDanglingRef       = "dangling-reference"
	RuleOrphanToolCall    = "orphan-tool-call"
	RulePendingToolCall   = "pending-tool-call"
	RuleOrphanToolResult  = "orphan-tool-result"
	RuleCompactionKeptOff = "compaction-kept-off-path"
	RuleCompactionSplits  = "compaction-splits-tool-pair"
	RuleCompactionNoGain  = "compaction-reclaims-nothing"
	RuleCompactionEmpty   = "compaction-empty-summary"
	RuleUsageSuspect      = "usage-suspect"
	RuleContextOverBudget = "context-over-budget"
	RuleOversizedLine     = "oversized-line"
	RuleLargeImage        = "large-inline-image"
	RuleSecret            = "secret"
)

// rules is the catalogue, in the order they are documented.
var rules = []*Rule{
	{ID: RuleMalformedLine, Severity: Error,
		Summary: "a line that is not valid JSON: pi's loader skips it silently",
		Remedy:  "the line is kept as it is (ctxtool never rewrites it); if its record matters, restore it from a backup — pi loads the session without it"},
	{ID: RuleGluedLine, Severity: Error,
		Summary: "several JSON records glued on one line (an append after a missing final newline): pi drops all of them",
		Remedy:  "the records are lost to pi; re-append the ones that matter (the next append must start on its own line) — a glued compaction never took effect"},
	{ID: RuleTornLine, Severity: Error, Fixable: true,
		Summary: "the last line was cut short by a crash: no final newline and it does not parse",
		Remedy:  "run `ctxtool lint --fix` to end the line with a newline (the torn bytes stay; pi keeps skipping them) so the next append does not glue onto it"},
	{ID: RuleMissingNewline, Severity: Warning, Fixable: true,
		Summary: "the file does not end with a newline: the next append (pi does not check) glues onto the last record and both are lost",
		Remedy:  "run `ctxtool lint --fix` to append the missing newline"},
	{ID: RuleNonObjectLine, Severity: Warning,
		Summary: "a line that is valid JSON but not an object: pi loads it as an entry without type or id",
		Remedy:  "remove it from a copy of the session (`ctxtool` never rewrites lines), or leave it: it produces no message"},
	{ID: RuleInvalidHeader, Severity: Error,
		Summary: "the first record is not a valid session header: pi treats the file as empty and overwrites it on open",
		Remedy:  "check that this is a pi/OpenClaw session; restore the header line ({\"type\":\"session\",\"version\":3,\"id\":…}) from a backup before pi opens it"},
	{ID: RuleExtraHeader, Severity: Warning,
		Summary: "a second session header inside the file (two sessions concatenated?): pi loads it as a plain entry",
		Remedy:  "split the file at that line into two sessions, or drop the second header from a copy"},
	{ID: RuleMissingID, Severity: Error,
		Summary: "a v2/v3 entry without an id: nothing can point at it and pi's tree lookups fail",
		Remedy:  "the writer that produced it is broken; re-append the entry through pi or ctxtool"},
	{ID: RuleDuplicateID, Severity: Error,
		Summary: "two entries share an id: pi keeps only the later one, so parents and the context can silently change (and pi can hang)",
		Remedy:  "repair a copy so every id is unique (`ctxtool` refuses to write into such a file); find the writer that reused the id"},
	{ID: RuleBrokenParent, Severity: Error,
		Summary: "parentId names an entry that does not exist: pi's path stops there and everything before it leaves the context",
		Remedy:  "restore the missing parent line from a backup, or accept the shorter context; the entry acts as a root"},
	{ID: RuleParentCycle, Severity: Error,
		Summary: "parent links form a cycle: pi's path walk never ends (the session hangs on load)",
		Remedy:  "repair the parentId of one entry of the cycle in a copy of the session; do not open it in pi before"},
	{ID: RuleUnreachable, Severity: Note,
		Summary: "entries not on the path to the leaf (an abandoned branch): pi never sends them",
		Remedy:  "nothing to do if the branch was abandoned on purpose (/tree); otherwise an append went under the wrong parent"},
	{ID: RuleDanglingRef, Severity: Warning,
		Summary: "a label's targetId or a branch summary's fromId names no entry",
		Remedy:  "harmless for the context; the tool that wrote it referred to an entry that was never written"},
	{ID: RuleOrphanToolCall, Severity: Warning,
		Summary: "a tool call on the context path with no result before the conversation moves on",
		Remedy:  "pi inserts a synthetic \"No result provided\" error at request time; other clients and OpenClaw's repair paths may not — avoid cutting turns mid-tool"},
	{ID: RulePendingToolCall, Severity: Warning, Fixable: true,
		Summary: "the last assistant's tool calls have no result: the tool is still running, or the session died mid-tool",
		Remedy:  "if the agent is not running, `ctxtool lint --fix` appends the synthetic error results pi would insert in memory"},
	{ID: RuleOrphanToolResult, Severity: Error,
		Summary: "a tool result on the context path whose tool call is not in the context: the provider rejects every request (Anthropic 400)",
		Remedy:  "the session is bricked for Anthropic models; compact again so the cut lands before the tool call (`ctxtool compact`), or branch from before the result"},
	{ID: RuleCompactionKeptOff, Severity: Error,
		Summary: "a compaction whose firstKeptEntryId is not on the path before it: nothing before it is kept",
		Remedy:  "the messages it meant to keep are gone from the context; compact again (`ctxtool compact`) so the summary covers them"},
	{ID: RuleCompactionSplits, Severity: Error,
		Summary: "a compaction's kept region starts between a tool call and its result: the result is sent without its call",
		Remedy:  "compact again with a cut before the tool call (`ctxtool compact` never cuts inside a tool turn)"},
	{ID: RuleCompactionNoGain, Severity: Warning,
		Summary: "a compaction that reclaims nothing: the context after it is not smaller than before",
		Remedy:  "the summariser likely failed or there was nothing to summarise; check its output and the compaction settings (reserveTokens, keepRecentTokens)"},
	{ID: RuleCompactionEmpty, Severity: Warning,
		Summary: "a compaction whose summary is empty or an empty skeleton: the summarised history is lost",
		Remedy:  "compact again from a copy taken before this compaction, or re-summarise with `ctxtool compact`; check the summariser's model and limits"},
	{ID: RuleUsageSuspect, Severity: Warning,
		Summary: "provider usage records that cannot measure their context: pinned (a truncation cap such as Ollama's num_ctx), flat while the transcript grows, zero, or implausibly small",
		Remedy:  "do not trust token counts from this provider's usage: ctxtool estimates from the content instead; fix the provider setting (e.g. raise Ollama's num_ctx) if the prompt was truncated"},
	{ID: RuleContextOverBudget, Severity: Error, Needs: "--max-tokens or --max-utilization",
		Summary: "the active context is over the budget set with --max-tokens / --max-utilization",
		Remedy:  "compact or roll the session (`ctxtool compact`, `ctxtool roll`)"},
	{ID: RuleOversizedLine, Severity: Warning,
		Summary: "a single line over lint.maxLineBytes: slow to load, and usually an inline blob",
		Remedy:  "keep large outputs out of the transcript (truncate tool output, store files on disk); compact with --truncate to drop old ones"},
	{ID: RuleLargeImage, Severity: Warning,
		Summary: "an inline base64 image over lint.maxImageBytes: transcripts grow to gigabytes this way",
		Remedy:  "resize screenshots before sending them; compact with --truncate to drop old images from the file (a backup is kept)"},
	{ID: RuleSecret, Severity: Error,
		Summary: "a credential in the transcript (provider API key, AWS key, private key, JWT, bearer token)",
		Remedy:  "revoke and rotate the credential now; then scrub the file (and every backup or upload of it) before sharing it"},
}

var byID = func() map[string]*Rule {
	m := map[string]*Rule{}
	for _, r := range rules {
		m[r.ID] = r
	}
	return m
}()

// Rules returns the catalogue in documentation order.
func Rules() []*Rule { return append([]*Rule(nil), rules...) }

// RuleSet is which rules run and at what severity.
type RuleSet struct {
	sev map[string]Severity
}

// DefaultRuleSet runs every rule at its default severity.
func DefaultRuleSet() *RuleSet {
	rs := &RuleSet{sev: map[string]Severity{}}
	for _, r := range rules {
		rs.sev[r.ID] = r.Severity
	}
	return rs
}

// ruleIDs expands a list of rule ids (comma-separated items allowed, "all"
// for every rule) and rejects unknown ones.
func ruleIDs(list []string) ([]string, error) {
	var out []string
	for _, item := range list {
		for _, id := range strings.Split(item, ",") {
			id = strings.TrimSpace(id)
			switch {
			case id == "":
			case id == "all":
				for _, r := range rules {
					out = append(out, r.ID)
				}
			case byID[id] != nil:
				out = append(out, id)
			default:
				return nil, fmt.Errorf("unknown lint rule %q (rules: %s)", id, strings.Join(ruleNames(), ", "))
			}
		}
	}
	return out, nil
}

func ruleNames() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.ID
	}
	return names
}

// ApplySeverities reads per-rule overrides written as
// "rule=level,rule=level" (config lint.severity).
func ApplySeverities(rs *RuleSet, spec string) error {
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, level, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("%q: write rule=level (error, warning, note or off)", item)
		}
		sev, err := ParseSeverity(level)
		if err != nil {
			return fmt.Errorf("%s: %w", strings.TrimSpace(id), err)
		}
		if err := rs.SetSeverity(strings.TrimSpace(id), sev); err != nil {
			return err
		}
	}
	return nil
}

// Disable turns rules off.
func (rs *RuleSet) Disable(ids ...string) error {
	list, err := ruleIDs(ids)
	for _, id := range list {
		rs.sev[id] = Off
	}
	return err
}

// Enable turns rules on at their default severity (or keeps a severity set
// before).
func (rs *RuleSet) Enable(ids ...string) error {
	list, err := ruleIDs(ids)
	for _, id := range list {
		if rs.sev[id] == Off {
			rs.sev[id] = byID[id].Severity
		}
	}
	return err
}

// SetSeverity overrides a rule's severity (Off disables it).
func (rs *RuleSet) SetSeverity(id string, s Severity) error {
	if byID[id] == nil {
		return fmt.Errorf("unknown lint rule %q (rules: %s)", id, strings.Join(ruleNames(), ", "))
	}
	rs.sev[id] = s
	return nil
}

// Severity is the configured severity of a rule (Off when disabled).
func (rs *RuleSet) Severity(id string) Severity { return rs.sev[id] }

// severityFor applies the configured severity to a finding's own one: a
// rule configured below its default lowers every finding to at most that;
// a rule raised above its default raises its findings by the same steps.
func (rs *RuleSet) severityFor(id string, found Severity) Severity {
	conf := rs.sev[id]
	if conf == Off {
		return Off
	}
	def := byID[id].Severity
	s := found + (conf - def)
	if s < Note {
		s = Note
	}
	if s > Error {
		s = Error
	}
	return s
}

// sortFindings orders findings by file, line, column, rule.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Rule < b.Rule
	})
}
