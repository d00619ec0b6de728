#!/usr/bin/env node
// pi-check.mjs - load session transcripts with pi's own SessionManager and print what pi sees.
//
// ctxtool's own copy of the conformance harness (the reference copy is ../shared/oracle);
// install its pinned packages with internal/oracle/js/install.sh.
//
//   node internal/oracle/js/pi-check.mjs [--no-text] [--per-message] FILE [FILE...]   (from the project root)
//
// One JSON object per FILE, one per line. pi = @mariozechner/pi-coding-agent 0.73.1,
// installed by install.sh next to this script. Each FILE is copied to a temp dir first, because
// SessionManager.open() rewrites v1/v2 files when it migrates them (and replaces a file that
// has no valid header); your file is never modified.
//
// Fields:
//   file, bytes, loads (pi loaded it as a session), error (when it did not),
//   version (header version in the file; no version = 1), entries (pi's getEntries().length),
//   lines, malformedLines (1-based lines pi skipped because JSON.parse failed),
//   brokenParents (entries whose parentId is not among the loaded entries; the context
//   pi rebuilds stops there), leafId, leafType, pathEntries (entries root..leaf),
//   contextMessages, heuristicTokens (Σ estimateTokens over the context: pi's chars/4 rule),
//   usageTokens (pi's estimateContextTokens: last assistant usage + estimate of what follows),
//   firstRole, lastRole, roles {role: count},
//   orphanToolResults (toolResult messages whose toolCallId has no earlier assistant toolCall
//   with that id in the context), orphanToolCalls (assistant toolCall ids, except in the very
//   last assistant message, with no later toolResult), model, thinkingLevel,
//   compactionsInFile, compactionsOnPath,
//   lastCompaction {id, line, summary, firstKeptEntryId, tokensBefore, details} or null,
//   contextText (the text of all context messages; omit with --no-text),
//   messages [{entryId, line, role, tokens}] with --per-message.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
// PI_CHECK_CORE: another pi's dist/core (pi 1.6.0, @earendil-works/pi-coding-agent, under Node 24).
const CORE = process.env.PI_CHECK_CORE || path.join(HERE, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core");

const args = process.argv.slice(2);
const opts = { text: !args.includes("--no-text"), perMessage: args.includes("--per-message") };
const files = args.filter((a) => !a.startsWith("--"));
if (!files.length || args.includes("--help") || args.includes("-h")) {
	process.stderr.write("usage: node pi-check.mjs [--no-text] [--per-message] FILE [FILE...]\n");
	process.exit(files.length ? 0 : 2);
}

let pi;
try {
	pi = {
		...(await import(pathToFileURL(path.join(CORE, "session-manager.js")).href)),
		...(await import(pathToFileURL(path.join(CORE, "compaction", "compaction.js")).href)),
	};
} catch (e) {
	process.stderr.write(`pi-check: cannot load pi (${e.message}); run ${path.join(HERE, "install.sh")} first\n`);
	process.exit(2);
}

// pi's loader: content.trim().split("\n"), JSON.parse per line, failures skipped.
function scan(content) {
	const lead = content.slice(0, content.length - content.trimStart().length).split("\n").length - 1;
	const loaded = [];
	const malformed = [];
	const lines = content.trim().split("\n");
	lines.forEach((l, i) => {
		if (!l.trim()) return;
		try {
			loaded.push({ line: i + 1 + lead, obj: JSON.parse(l) });
		} catch {
			malformed.push(i + 1 + lead);
		}
	});
	return { loaded, malformed, lineCount: lines.length };
}

function text(m) {
	const blocks = (c) =>
		typeof c === "string" ? c : (c || []).map((b) => (b.type === "text" ? b.text : b.type === "image" ? "[image]" : "")).join("\n");
	switch (m.role) {
		case "user":
		case "custom":
		case "toolResult":
			return blocks(m.content);
		case "assistant":
			return m.content
				.map((b) => (b.type === "text" ? b.text : b.type === "thinking" ? b.thinking : b.type === "toolCall" ? `${b.name}(${JSON.stringify(b.arguments)})` : ""))
				.join("\n");
		case "bashExecution":
			return `${m.command}\n${m.output}`;
		case "branchSummary":
		case "compactionSummary":
			return m.summary;
		default:
			return "";
	}
}

// The entries behind the context messages, walked the way buildSessionContext walks them.
function contextEntries(pathEntries) {
	const comp = pathEntries.filter((e) => e.type === "compaction").pop();
	const emits = (e) => e.type === "message" || e.type === "custom_message" || (e.type === "branch_summary" && e.summary);
	if (!comp) return pathEntries.filter(emits);
	const idx = pathEntries.indexOf(comp);
	const k = pathEntries.findIndex((e, i) => i < idx && e.id === comp.firstKeptEntryId);
	const kept = k < 0 ? [] : pathEntries.slice(k, idx).filter(emits);
	return [comp, ...kept, ...pathEntries.slice(idx + 1).filter(emits)];
}

function check(file, tmpRoot) {
	const res = { file, bytes: 0, loads: false };
	const content = fs.readFileSync(file, "utf8");
	res.bytes = Buffer.byteLength(content);
	const s = scan(content);
	res.lines = s.lineCount;
	res.malformedLines = s.malformed;
	const header = s.loaded[0]?.obj;
	if (!header || header.type !== "session" || typeof header.id !== "string") {
		res.error = "no valid session header (pi would start a new, empty session)";
		return res;
	}
	res.version = typeof header.version === "number" ? header.version : 1;
	const dir = fs.mkdtempSync(path.join(tmpRoot, "s-"));
	const copy = path.join(dir, path.basename(file));
	fs.copyFileSync(file, copy);
	const sm = pi.SessionManager.open(copy, path.join(dir, "sessions"));
	const entries = sm.getEntries();
	const lineOf = new Map();
	if (s.loaded.length === entries.length + 1) entries.forEach((e, i) => lineOf.set(e, s.loaded[i + 1].line));
	const byId = new Map(entries.map((e) => [e.id, e]));
	res.entries = entries.length;
	res.brokenParents = entries.filter((e) => e.parentId && !byId.has(e.parentId)).length;
	res.leafId = sm.getLeafId();
	res.leafType = byId.get(res.leafId)?.type ?? null;
	const pathEntries = sm.getBranch();
	res.pathEntries = pathEntries.length;
	const ctx = sm.buildSessionContext();
	const msgs = ctx.messages;
	res.loads = true;
	res.contextMessages = msgs.length;
	const per = msgs.map((m) => pi.estimateTokens(m));
	res.heuristicTokens = per.reduce((a, b) => a + b, 0);
	res.usageTokens = pi.estimateContextTokens(msgs).tokens;
	res.firstRole = msgs[0]?.role ?? null;
	res.lastRole = msgs.at(-1)?.role ?? null;
	res.roles = {};
	for (const m of msgs) res.roles[m.role] = (res.roles[m.role] || 0) + 1;
	const calls = new Set();
	res.orphanToolResults = 0;
	for (const m of msgs) {
		if (m.role === "assistant") for (const b of m.content) if (b.type === "toolCall") calls.add(b.id);
		if (m.role === "toolResult" && !calls.has(m.toolCallId)) res.orphanToolResults++;
	}
	const lastA = msgs.map((m) => m.role).lastIndexOf("assistant");
	res.orphanToolCalls = 0;
	msgs.forEach((m, i) => {
		if (m.role !== "assistant" || i === lastA) return;
		for (const b of m.content)
			if (b.type === "toolCall" && !msgs.slice(i + 1).some((r) => r.role === "toolResult" && r.toolCallId === b.id)) res.orphanToolCalls++;
	});
	res.model = ctx.model;
	res.thinkingLevel = ctx.thinkingLevel;
	res.compactionsInFile = entries.filter((e) => e.type === "compaction").length;
	const comps = pathEntries.filter((e) => e.type === "compaction");
	res.compactionsOnPath = comps.length;
	const lc = comps.at(-1);
	res.lastCompaction = lc
		? { id: lc.id, line: lineOf.get(lc) ?? null, summary: lc.summary, firstKeptEntryId: lc.firstKeptEntryId, tokensBefore: lc.tokensBefore, details: lc.details ?? null }
		: null;
	if (opts.perMessage) {
		const ce = contextEntries(pathEntries);
		const same = ce.length === msgs.length;
		res.messages = msgs.map((m, i) => ({ entryId: same ? ce[i].id : null, line: same ? (lineOf.get(ce[i]) ?? null) : null, role: m.role, tokens: per[i] }));
	}
	if (opts.text) res.contextText = msgs.map(text).join("\n\n");
	fs.rmSync(dir, { recursive: true, force: true });
	return res;
}

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "pi-check-"));
try {
	for (const f of files) {
		let r;
		try {
			r = check(f, tmpRoot);
		} catch (e) {
			r = { file: f, loads: false, error: String(e && e.stack ? e.stack : e) };
		}
		process.stdout.write(JSON.stringify(r) + "\n");
	}
} finally {
	fs.rmSync(tmpRoot, { recursive: true, force: true });
}
