// ctxtool's pi extension: pi's compactions are made by ctxtool.
//
// Written by `ctxtool install pi`; `ctxtool uninstall pi` removes it, and a
// later `ctxtool install pi` replaces it (do not edit it: changes are lost).
// On session_before_compact it runs `ctxtool agent compact` with pi's
// preparation as JSON on stdin (contract version 1, docs/agent-contract.md
// in the ctxtool repository) and returns ctxtool's summary as the
// compaction. When ctxtool fails, hangs past the timeout or answers
// something else, it returns nothing, pi makes its own compaction, and one
// line starting "[ctxtool]" goes to stderr.
//
// The code is plain JavaScript (a .ts file pi loads as is), so
// `ctxtool install --check` can run it under node too.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const CTXTOOL = "__CTXTOOL_BINARY__";
const CONTRACT = 1;
// CTXTOOL_PI_TIMEOUT_MS overrides the time ctxtool gets (an LLM summariser
// may need a while; the extractive one takes well under a second).
const TIMEOUT_MS = Number(process.env.CTXTOOL_PI_TIMEOUT_MS) > 0 ? Number(process.env.CTXTOOL_PI_TIMEOUT_MS) : 120000;
const MAX_ANSWER = 16 * 1024 * 1024;
// The rolling window runs on every model request: it must be quick.
const WINDOW_TIMEOUT_MS = Number(process.env.CTXTOOL_PI_WINDOW_TIMEOUT_MS) > 0 ? Number(process.env.CTXTOOL_PI_WINDOW_TIMEOUT_MS) : 10000;
const RECALL_TIMEOUT_MS = 60000;
// The checkpoint and the memory flush before a compaction.
const HOOK_TIMEOUT_MS = 20000;

function log(msg) {
	process.stderr.write(`[ctxtool] ${msg}\n`);
}

function list(set) {
	return set ? Array.from(set) : [];
}

function oneLine(s, n) {
	s = String(s ?? "").replace(/\s+/g, " ").trim();
	return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// messageOf is the context message of a session entry (null: none).
function messageOf(e) {
	if (!e) return null;
	if (e.type === "message") return e.message && e.message.role !== "system" ? e.message : null;
	if (e.type === "custom_message")
		return { role: "custom", customType: e.customType, content: e.content, display: e.display, details: e.details };
	if (e.type === "branch_summary") return { role: "branchSummary", summary: e.summary, fromId: e.fromId };
	return null;
}

// request is the contract's request for one session_before_compact event.
function request(event, ctx) {
	const p = event.preparation;
	const entries = Array.isArray(event.branchEntries) ? event.branchEntries : [];
	const at = entries.findIndex((e) => e && e.id === p.firstKeptEntryId);
	const kept = at < 0 ? [] : entries.slice(at).map(messageOf).filter((m) => m);
	let previousDetails;
	for (let i = entries.length - 1; i >= 0; i--) {
		const e = entries[i];
		if (e && e.type === "compaction") {
			if (e.details && typeof e.details === "object" && !Array.isArray(e.details)) previousDetails = e.details;
			break;
		}
	}
	return {
		version: CONTRACT,
		agent: "pi",
		reason: event.reason,
		session: sessionOf(ctx),
		preparation: {
			firstKeptEntryId: p.firstKeptEntryId,
			messagesToSummarize: p.messagesToSummarize ?? [],
			turnPrefixMessages: p.turnPrefixMessages ?? [],
			isSplitTurn: !!p.isSplitTurn,
			tokensBefore: p.tokensBefore ?? 0,
			previousSummary: p.previousSummary,
			fileOps: { read: list(p.fileOps?.read), written: list(p.fileOps?.written), edited: list(p.fileOps?.edited) },
			settings: p.settings ?? {},
		},
		keptMessages: kept,
		previousDetails,
		customInstructions: event.customInstructions,
		agentModel: modelName(ctx),
	};
}

// modelName is the session's model, "provider/id": pi's own summary is
// made with it (agent.summarySource auto then means augment).
function modelName(ctx) {
	try {
		const m = ctx.model;
		return m && m.id ? `${m.provider}/${m.id}` : undefined;
	} catch {
		return undefined;
	}
}

// spawnCtxtool runs ctxtool with args and input on stdin and resolves with
// its stdout when it exits 0; otherwise rejects with one line saying what
// went wrong. A timeout or an abort kills its whole process group.
function spawnCtxtool(args, input, signal, timeoutMs) {
	return new Promise((resolve, reject) => {
		let child;
		try {
			// its own process group, so a timeout or an abort kills what it
			// started too (an exec summariser, hooks)
			child = spawn(CTXTOOL, args, {
				stdio: ["pipe", "pipe", "pipe"],
				detached: process.platform !== "win32",
				env: process.env, // (no CTXTOOL_AGENT: ctxtool would read it as its config key "agent")
			});
		} catch (err) {
			reject(new Error(`cannot start ${CTXTOOL}: ${err.message}`));
			return;
		}
		let out = "", errText = "", done = false;
		const finish = (err, value) => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			signal?.removeEventListener?.("abort", onAbort);
			if (err) {
				try {
					process.kill(-child.pid, "SIGKILL");
				} catch {
					try { child.kill("SIGKILL"); } catch {}
				}
				reject(err);
			} else resolve(value);
		};
		const timer = setTimeout(() => finish(new Error(`${CTXTOOL} did not answer within ${timeoutMs} ms (killed)`)), timeoutMs);
		const onAbort = () => finish(new Error("aborted"));
		signal?.addEventListener?.("abort", onAbort);
		child.on("error", (err) => finish(new Error(`cannot run ${CTXTOOL}: ${err.message}`)));
		child.stdout.on("data", (d) => {
			out += d;
			if (out.length > MAX_ANSWER) finish(new Error(`${CTXTOOL} answered more than ${MAX_ANSWER} bytes`));
		});
		child.stderr.on("data", (d) => {
			if (errText.length < 4096) errText += d;
		});
		child.on("close", (code, sig) => {
			if (code !== 0) {
				const why = sig ? `was killed by ${sig}` : `exited with ${code}`;
				finish(new Error(`${CTXTOOL} ${why}: ${oneLine(errText, 300) || "no message"}`));
				return;
			}
			finish(null, out);
		});
		child.stdin.on("error", () => {}); // a child that exits early; close reports it
		child.stdin.end(input);
	});
}

// answerOf parses a contract answer, or throws saying why it is not one.
function answerOf(out) {
	let answer;
	try {
		answer = JSON.parse(out);
	} catch {
		throw new Error(`${CTXTOOL} answered something that is not JSON: ${JSON.stringify(oneLine(out, 80))}`);
	}
	if (!answer || typeof answer !== "object" || answer.version !== CONTRACT)
		throw new Error(`${CTXTOOL} answered in contract version ${answer?.version}, this extension speaks ${CONTRACT}: run ctxtool install pi`);
	return answer;
}

// run sends the compaction request to ctxtool and resolves with its
// parsed answer, or rejects with one line saying what went wrong.
async function run(req, signal) {
	const answer = answerOf(await spawnCtxtool(["agent", "compact"], JSON.stringify(req), signal, TIMEOUT_MS));
	if (!answer.decline && (typeof answer.summary !== "string" || answer.summary.trim() === ""))
		throw new Error(`${CTXTOOL} answered without a summary`);
	return answer;
}

function sessionOf(ctx) {
	let file, id, cwd;
	try {
		file = ctx.sessionManager.getSessionFile();
		id = ctx.sessionManager.getSessionId();
	} catch {}
	try {
		cwd = ctx.cwd;
	} catch {}
	return { file, id, cwd };
}

// beforeCompaction takes a checkpoint of the session (ctxtool's state
// directory) and, when the project keeps notes in <cwd>/memory, does the
// memory flush there (memory/YYYY-MM-DD.md, once per compaction). It never
// rejects and never stops the compaction: it resolves with what failed.
async function beforeCompaction(ctx) {
	const s = sessionOf(ctx);
	if (!s.file) return [];
	const jobs = [
		spawnCtxtool(["checkpoint", "--json", "--trigger", "compaction", "--force", s.file], "", undefined, HOOK_TIMEOUT_MS).then(
			() => null,
			(err) => `checkpoint failed: ${oneLine(err && err.message, 300)}`,
		),
	];
	if (s.cwd && existsSync(join(s.cwd, "memory"))) {
		jobs.push(
			spawnCtxtool(["flush", "--json", "--force", "--workspace", s.cwd, s.file], "", undefined, HOOK_TIMEOUT_MS).then(
				() => null,
				(err) => `memory flush failed: ${oneLine(err && err.message, 300)}`,
			),
		);
	}
	return (await Promise.all(jobs)).filter((p) => p);
}

// windowOn asks ctxtool once, when pi loads the extension, whether the
// rolling window is on (agent.window in ctxtool's config): an empty window
// request is declined when it is off.
function windowOn() {
	try {
		const r = spawnSync(CTXTOOL, ["agent", "window"], {
			input: JSON.stringify({ version: CONTRACT, agent: "pi", messages: [], contextWindow: 1 }),
			timeout: WINDOW_TIMEOUT_MS,
			encoding: "utf8",
		});
		if (r.status !== 0) return false;
		const a = JSON.parse(r.stdout);
		return a && a.version === CONTRACT && !a.decline;
	} catch {
		return false;
	}
}

// rollingWindow registers the `context` handler that leaves the oldest
// messages out of each request (ctxtool's eviction plan and note; the
// session keeps them) and the `recall` tool that searches them.
function rollingWindow(pi) {
	let offUntil = 0;
	pi.on("context", async (event, ctx) => {
		const messages = event.messages;
		const window = ctx?.model?.contextWindow;
		if (Date.now() < offUntil || !window || !Array.isArray(messages) || messages.length === 0) return undefined;
		let overhead = 0;
		try {
			overhead = Math.ceil((ctx.getSystemPrompt()?.length ?? 0) / 4);
		} catch {}
		const req = { version: CONTRACT, agent: "pi", session: sessionOf(ctx), messages, contextWindow: window, overheadTokens: overhead };
		let answer;
		try {
			answer = answerOf(await spawnCtxtool(["agent", "window"], JSON.stringify(req), ctx?.signal, WINDOW_TIMEOUT_MS));
		} catch (err) {
			offUntil = Date.now() + 60000;
			log(`rolling window failed, requests are sent whole for a minute: ${oneLine(err && err.message, 400)}`);
			return undefined;
		}
		if (answer.decline) {
			offUntil = Date.now() + 60000;
			return undefined;
		}
		if (!(answer.firstKept > 0) || typeof answer.note !== "string") return undefined;
		const note = { role: "compactionSummary", summary: answer.note, tokensBefore: answer.tokensBefore ?? 0, timestamp: Date.now() };
		return { messages: [note, ...messages.slice(answer.firstKept)] };
	});
	pi.registerTool({
		name: "recall",
		label: "Recall",
		description:
			"Search the earlier messages of this conversation that are no longer in your context (ctxtool's rolling window left them out; they are kept). Give a few distinctive keywords; you get the best matching passages.",
		parameters: {
			type: "object",
			properties: { query: { type: "string", description: "keywords to look for in the earlier conversation" } },
			required: ["query"],
			additionalProperties: false,
		},
		async execute(_id, params, signal, _onUpdate, ctx) {
			const req = { version: CONTRACT, agent: "pi", session: sessionOf(ctx), query: String(params?.query ?? "") };
			try {
				const answer = answerOf(await spawnCtxtool(["agent", "recall"], JSON.stringify(req), signal, RECALL_TIMEOUT_MS));
				return { content: [{ type: "text", text: String(answer.text ?? "") }], details: { hits: answer.hits?.length ?? 0 } };
			} catch (err) {
				log(`recall failed: ${oneLine(err && err.message, 400)}`);
				return { content: [{ type: "text", text: `recall failed: ${oneLine(err && err.message, 300)}` }], details: { hits: 0 }, isError: true };
			}
		},
	});
}

// augment makes pi's own compaction (pi's compact(), with the session's
// model) and adds what ctxtool's fact audit says it dropped, the pins and
// the resume text of the checkpoint taken before it (`ctxtool agent
// augment`). pi's summary stands alone when the augmentation fails; a
// failure of pi's own summary rejects (pi then tries by itself).
async function augment(event, ctx, before) {
	const { compact } = await import("@earendil-works/pi-coding-agent");
	const model = ctx.model;
	if (!model) throw new Error("no model selected for pi's own summary");
	const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
	if (!auth?.ok) throw new Error(`pi's own summary: ${auth?.error ?? "no API key"}`);
	const own = await compact(event.preparation, auth.baseUrl ? { ...model, baseUrl: auth.baseUrl } : model, auth.apiKey, auth.headers, event.customInstructions, event.signal);
	for (const problem of await before) log(problem);
	const req = { ...request(event, ctx), agentSummary: own.summary };
	let a;
	try {
		a = answerOf(await spawnCtxtool(["agent", "augment"], JSON.stringify(req), event.signal, TIMEOUT_MS));
	} catch (err) {
		log(`augment failed, pi's own summary stands alone: ${oneLine(err && err.message, 400)}`);
		return own;
	}
	const additions = typeof a.additions === "string" ? a.additions.trim() : "";
	return {
		...own,
		summary: additions ? `${own.summary}\n\n${additions}` : own.summary,
		details: { ...(own.details ?? {}), ctxtool: { contract: CONTRACT, summarySource: "augment", audit: a.audit } },
	};
}

export default function (pi) {
	if (windowOn()) rollingWindow(pi);
	pi.on("session_before_compact", async (event, ctx) => {
		const before = beforeCompaction(ctx);
		let answer;
		try {
			answer = await run(request(event, ctx), event.signal);
		} catch (err) {
			// the checkpoint and flush finish (or time out) on their own;
			// their failures are not logged: this line says ctxtool failed
			log(`compaction failed, pi compacts by itself: ${oneLine(err && err.message, 400)}`);
			return undefined;
		}
		if (answer.decline && answer.augment) {
			try {
				const c = await augment(event, ctx, before);
				return { compaction: { summary: c.summary, firstKeptEntryId: c.firstKeptEntryId, tokensBefore: c.tokensBefore, details: c.details, usage: c.usage } };
			} catch (err) {
				log(`augment failed, pi compacts by itself: ${oneLine(err && err.message, 400)}`);
				return undefined;
			}
		}
		for (const problem of await before) log(problem);
		if (answer.decline) {
			log(`declined, pi compacts by itself: ${oneLine(answer.decline, 300)}`);
			return undefined;
		}
		const p = event.preparation;
		return {
			compaction: {
				summary: answer.summary,
				firstKeptEntryId: p.firstKeptEntryId,
				tokensBefore: typeof answer.tokensBefore === "number" ? answer.tokensBefore : p.tokensBefore,
				details: answer.details,
			},
		};
	});
}
