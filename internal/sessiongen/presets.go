package sessiongen

import (
	"fmt"
	"sort"
)

//go:generate go run ../../bench/gen -all -dir ../../testdata

// Preset is a named Options set. The "sample-*" and "edge-*" presets are
// the files committed in testdata/ (File is their name there); the others
// are shapes for benchmarks and stress tests.
type Preset struct {
	Name    string
	File    string // testdata file name, "" for benchmark shapes
	About   string
	Options Options
}

var presets = []Preset{
	{Name: "sample-v3", File: "sample-v3.jsonl",
		About: "realistic v3 coding session: tool calls, thinking, an earlier compaction, an abandoned branch + branch_summary, bashExecution, custom_message, custom entry, model/thinking changes, planted facts",
		Options: Options{Seed: 27, Version: 3, Turns: 13, MinToolCallsPerTurn: 3, ToolCallsPerTurn: 5, ToolResultBytes: 4000,
			Thinking: true, SignatureBytes: 80, Compactions: 1, CompactionsWithin: 0.2, KeepTurns: 1, Branches: 1,
			BashExecutions: 2, CustomMessages: 1, CustomEntries: 1, ModelChanges: 1, ThinkingLevelChanges: 1, ToolErrors: 1,
			ToolImages: 8, UserImages: 1, Facts: 7, FactsWithin: 0.1, SessionName: "acme-api: importer hardening"}},
	{Name: "sample-v1", File: "sample-v1.jsonl",
		About: "v1 session (no ids, firstKeptEntryIndex) with a compaction, bashExecution, a thinking level change and an aborted assistant",
		Options: Options{Seed: 1, Version: 1, Turns: 14, ToolCallsPerTurn: 5, ToolResultBytes: 1800, Thinking: true, SignatureBytes: 120,
			Compactions: 1, BashExecutions: 1, ThinkingLevelChanges: 1, AbortedAssistants: 1, Facts: 4}},
	{Name: "edge-truncated", File: "edge-truncated.jsonl",
		About:   "a garbage line mid-file and a torn last line without a final newline",
		Options: Options{Seed: 11, Turns: 6, ToolCallsPerTurn: 3, ToolResultBytes: 900, GarbageLines: 1, TruncatedTail: true}},
	{Name: "edge-glued", File: "edge-glued.jsonl",
		About:   "two lines each holding two complete records glued together (pi drops both records)",
		Options: Options{Seed: 12, Turns: 8, ToolCallsPerTurn: 3, ToolResultBytes: 900, GluedLines: 2}},
	{Name: "edge-images", File: "edge-images.jsonl",
		About:   "PNG screenshots in user messages (0 heuristic tokens) and in read tool results (1,200 each)",
		Options: Options{Seed: 13, Turns: 6, ToolCallsPerTurn: 3, ToolResultBytes: 900, UserImages: 2, ToolImages: 3}},
	{Name: "edge-cjk", File: "edge-cjk.jsonl",
		About:   "mostly Chinese conversation and docs (chars/4 undercounts ~3-4x), with a CJK planted fact",
		Options: Options{Seed: 14, Turns: 8, ToolCallsPerTurn: 3, ToolResultBytes: 1500, CJKShare: 0.9, Facts: 6, FactsWithin: 0.8}},
	{Name: "edge-trailing-toolcall", File: "edge-trailing-toolcall.jsonl",
		About:   "ends with an assistant tool call that has no result; also an aborted and an error assistant with unanswered calls mid-file",
		Options: Options{Seed: 15, Turns: 6, ToolCallsPerTurn: 3, ToolResultBytes: 900, AbortedAssistants: 1, ErrorAssistants: 1, TrailingToolCall: true}},
	{Name: "bench", About: "benchmark shape; use with a target size",
		Options: Options{Seed: 42, TargetBytes: 100 << 20, Thinking: true, Compactions: 4, Branches: 2, BashExecutions: 10,
			CustomMessages: 10, ModelChanges: 2, ToolImages: 10, Facts: 7, NoLineIndex: true}},
	{Name: "tool-dense", About: "20-30 tool calls per turn, up to 5 in parallel",
		Options: Options{Seed: 43, Turns: 30, MinToolCallsPerTurn: 20, ToolCallsPerTurn: 30, ParallelToolCalls: 5}},
	{Name: "huge-results", About: "several multi-MB JSON tool results on single lines",
		Options: Options{Seed: 44, Turns: 24, HugeToolResults: 4, HugeToolResultBytes: 6 << 20, Compactions: 1}},
}

// Presets lists the named option sets, sorted by name.
func Presets() []Preset {
	out := append([]Preset(nil), presets...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PresetOptions returns the Options of a named preset.
func PresetOptions(name string) (Options, error) {
	for _, p := range presets {
		if p.Name == name {
			return p.Options, nil
		}
	}
	return Options{}, fmt.Errorf("sessiongen: unknown preset %q", name)
}
