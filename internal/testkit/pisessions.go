package testkit

import "github.com/ctxtool/ctxtool/pkg/transcript"

// EdgeCases are hand-written sessions exercising what the fixtures lack.
var EdgeCases = map[string]string{
	// Truncated last line (a crash mid-write), blank lines, CRLF line ends.
	"truncated.jsonl": `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"00000001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello there","timestamp":1}}

{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"x","provider":"p","model":"m","usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12},"stopReason":"stop","timestamp":2}}` + "\r" + `
{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":[{"type":"text","text":"more"`,
	// Non-canonical JSON: spaces, escapes, numbers JS prints differently,
	// emoji, lone surrogates, nested arguments — pi counts the
	// JSON.stringify form of tool-call arguments.
	"noncanonical.jsonl": `{"type":"session","version":3,"id":"s2","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{ "type" : "message", "id":"00000001","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"\u00e9t\u00e9 😀 \ud83d\ude00 \ud800 tab\there \/ slash"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":1}}
{"message":{"content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},{"arguments":{ "path" : "a\/b.go", "n": 1.50, "big": 1e21, "small": 0.0000001, "neg": -0, "e": 1E3, "list": [ 1 , 2.0 , "x\u0001" , null, true ], "o": {}, "q": "\"q\"\\", "lone": "\udc00", "u": "\u2028" }, "id":"call_1","name":"edit","type":"toolCall"}],"role":"assistant","api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"toolUse","timestamp":2},"type":"message","id":"00000002","parentId":"00000001","timestamp":"t"}
{"type":"message","id":"00000003","parentId":"00000002","timestamp":"t","message":{"role":"toolResult","toolCallId":"call_1","toolName":"edit","content":[{"type":"text","text":"ok"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"isError":false,"timestamp":3}}
{"type":"message","id":"00000004","parentId":"00000003","timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"legacy hook message","display":true,"timestamp":4}}
`,
	// v1 with blank and malformed lines before the compaction target: the
	// index counts parsed records only.
	"v1-shifted.jsonl": `{"type":"session","id":"s3","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"one"}],"timestamp":1}}

not json at all
{"type":"message","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"api":"a","provider":"p","model":"m","usage":{"input":5,"output":5,"cacheRead":0,"cacheWrite":0},"stopReason":"stop","timestamp":2}}
{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"three three"}],"timestamp":3}}
{"type":"compaction","timestamp":"t","summary":"sum","firstKeptEntryIndex":3,"tokensBefore":100}
{"type":"message","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"four"}],"timestamp":4}}
`,
	// Orphan parent, duplicate id, unknown entry type, later compaction
	// pointing at an id after it, a branch whose leaf is not the longest.
	"tree-oddities.jsonl": `{"type":"session","version":3,"id":"s4","timestamp":"t","cwd":"/x"}
{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"root msg","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"first b","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"second b wins","timestamp":1}}
{"type":"mystery","id":"c","parentId":"b","timestamp":"t","payload":{"x":1}}
{"type":"message","id":"d","parentId":"missing","timestamp":"t","message":{"role":"user","content":"orphan","timestamp":1}}
{"type":"compaction","id":"e","parentId":"c","timestamp":"t","summary":"keeps nothing","firstKeptEntryId":"z","tokensBefore":5}
{"type":"message","id":"z","parentId":"e","timestamp":"t","message":{"role":"bashExecution","command":"ls","output":"a b","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1,"excludeFromContext":true}}
{"type":"branch_summary","id":"f","parentId":"a","timestamp":"t","fromId":"a","summary":""}
{"type":"custom_message","customType":"k","content":[{"type":"text","text":"injected"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"display":false,"id":"g","parentId":"z","timestamp":"t"}
`,
	// The header is not the first line: a malformed line precedes it.
	"late-header.jsonl": `{"broken
{"type":"session","version":2,"id":"s5","timestamp":"t","cwd":"/x"}
{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}
`,
}

// KeepFrom picks a user message about two thirds into the context to keep from.
func KeepFrom(ctx *transcript.Context) *transcript.Entry {
	for i := len(ctx.Messages) * 2 / 3; i < len(ctx.Messages); i++ {
		if e := ctx.Messages[i].Entry; e.Type() == "message" && e.Role() == "user" {
			return e
		}
	}
	return nil
}
