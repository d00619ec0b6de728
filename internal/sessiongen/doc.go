// Package sessiongen writes synthetic pi / OpenClaw session transcripts
// (JSONL) exactly the way pi writes them, for tests and benchmarks.
//
// Two layers:
//
//   - Builder appends hand-made entries (User, Assistant, ToolResult,
//     BashExecution, CustomMessage, Custom, ModelChange, Compaction,
//     Branch + BranchSummary, Label, SessionInfo, and malformed lines via
//     Garbage, Glued and Torn). Tests use it for edge cases; it reproduces
//     the format reference's two worked examples, vendored as
//     testdata/format-13-1.jsonl (v3) and testdata/format-13-2.jsonl (v1),
//     byte for byte.
//   - Generate streams a whole realistic coding session from Options
//     (turns, tool density, result sizes up to several MB per line, CJK
//     share, images, compactions, branches, aborted/error assistants,
//     planted facts, malformed lines, a seed). Memory stays flat, so 1 GB
//     files are fine; named Presets describe the files in testdata/.
//
// # Encoding
//
// Every line is what JSON.stringify would produce: keys in pi's write order
// per entry type and message role (as in testdata/format-13-1.jsonl), compact, only
// '"', '\\' and control characters escaped (no HTML escaping, raw U+2028/
// U+2029 and non-ASCII), numbers in JavaScript's shortest form. Entry ids are
// 8 random hex digits unique in the file, entry timestamps ISO-8601 with
// milliseconds, message timestamps epoch milliseconds. v1 files have no
// id/parentId and point compactions at firstKeptEntryIndex (pi's loader
// index: header = 0, malformed lines not counted).
//
// # What pi will see
//
// Close (and Generate) return a Result that predicts what pi's loader
// reports for the file (internal/oracle/js/pi-check.mjs): entries, malformed
// lines, leaf, path length, the rebuilt context (messages, roles, pi's
// heuristic tokens, pi's usage-anchored estimate, orphaned tool calls and
// results, model, thinking level) and the entry id/line behind each context
// message. The package tests check all of it against pi itself. Records in a
// malformed line (Glued, Torn) are lost to pi, so they never become the
// leaf: the session continues from the entry before them.
//
// # Ground-truth tokens
//
// Assistant usage records are not random: they are what a provider that
// tokenises with the following rule would report, so calibrated estimators
// have an exact target. For one text piece:
//
//	tokens(s, kind) = cjk(s) + ceil((utf16(s) - utf16CJK(s)) / r(kind))
//	r(prose) = 4.2  (user text, assistant text and thinking, custom
//	                 messages, summaries, markdown/doc tool results)
//	r(code)  = 3.3  (tool-call names and JSON arguments, tool results,
//	                 bash commands and output)
//
// cjk(s) counts CJK ideographs, kana, Hangul, bopomofo, CJK punctuation and
// fullwidth forms (IsCJK); each is one token. A message sent to the provider
// costs:
//
//	user / custom / toolResult: 4 + Σ tokens(text blocks) + Σ image tokens
//	assistant:  4 + Σ tokens(text) + Σ tokens(thinking)
//	              + Σ per toolCall (8 + tokens(name) + tokens(JSON arguments))
//	bashExecution: 4 + 6 + tokens(command) + tokens(output)  (0 if excludeFromContext)
//	compactionSummary: 4 + 26 + tokens(summary)   (26 = pi's 107-char wrapper)
//	branchSummary:     4 + 24 + tokens(summary)   (24 = pi's 99-char wrapper)
//	aborted / error assistants: 0 (the provider layer drops them)
//	image: ceil(w*h/750) after scaling to ≤1568 px long edge and ≤1.15 MP
//
// A request made at some leaf costs SystemTokens (default 4200: system
// prompt + tool definitions) + Σ over the messages of the context pi rebuilds
// for that leaf (after compactions and branches). Each assistant's usage is:
//
//	input + cacheRead + cacheWrite = request cost at its parent
//	output       = the assistant message's own cost (formula above)
//	totalTokens  = input + output + cacheRead + cacheWrite
//	             = SystemTokens + Σ context up to and including this assistant
//
// split the way Anthropic prompt caching reports it (the previous prompt is
// read from cache, the new part written, 1–3 tokens uncached; after a
// compaction, branch or model change only the system prompt is a cache hit;
// non-Anthropic providers report cacheWrite 0). Error and aborted assistants
// carry all-zero usage, as pi records them. Context.TrueTokens is the same
// ground truth for the file's final context, so for a file ending in a
// normal assistant message pi's usage-anchored estimate equals it exactly.
// Costs follow list prices per model, computed like pi ((price/1e6)·tokens,
// float artefacts included).
package sessiongen
