// ctxtool's OpenClaw plugin: OpenClaw's compactions are summarised by ctxtool.
//
// Written by `ctxtool install openclaw`; `ctxtool uninstall openclaw` removes
// it (do not edit it: a later install replaces it). It registers the
// compaction provider "ctxtool" (selected by agents.defaults.compaction.provider):
// summarize() runs `ctxtool agent compact` with OpenClaw's messages as JSON on
// stdin (contract version 1, docs/agent-contract.md in the ctxtool
// repository) and returns ctxtool's summary. When ctxtool fails, hangs past
// the timeout or answers something else, it returns "" — OpenClaw then makes
// its own summary — and logs one line starting "[ctxtool]".
//
// before_compaction does the memory flush (memory/YYYY-MM-DD.md in the
// agent's workspace, once per compaction) and takes a checkpoint, both by
// running ctxtool on the session in OpenClaw's store (read-only).
//
// The context engine "ctxtool" (selected by plugins.slots.contextEngine,
// which `ctxtool install openclaw` sets while agent.window is on) is the
// rolling window: before every model request it asks `ctxtool agent window`
// which oldest messages to leave out and sends ctxtool's note in their
// place. OpenClaw's store keeps every message, compactions stay OpenClaw's
// (through the provider above), and the `recall` tool searches what the
// window left out.
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";

const CTXTOOL = "__CTXTOOL_BINARY__";
const CONTRACT = 1;
const env = (k, d) => (Number(process.env[k]) > 0 ? Number(process.env[k]) : d);
// CTXTOOL_OPENCLAW_TIMEOUT_MS: the time ctxtool gets to summarise (an LLM
// summariser may need a while; the extractive one takes well under a second).
const TIMEOUT_MS = env("CTXTOOL_OPENCLAW_TIMEOUT_MS", 120000);
// The flush and the checkpoint share before_compaction's 30 s budget.
const HOOK_TIMEOUT_MS = env("CTXTOOL_OPENCLAW_HOOK_TIMEOUT_MS", 12000);
const MAX_ANSWER = 16 * 1024 * 1024;

function oneLine(s, n) {
	s = String(s ?? "").replace(/\s+/g, " ").trim();
	return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// run starts ctxtool with args, input on stdin, and resolves with its
// stdout when it exits 0; otherwise rejects with one line saying why. A
// timeout or an abort kills its whole process group.
function run(args, input, { signal, timeoutMs }) {
	return new Promise((resolve, reject) => {
		let child;
		try {
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
		const timer = setTimeout(() => finish(new Error(`${CTXTOOL} ${args.join(" ")} did not answer within ${timeoutMs} ms (killed)`)), timeoutMs);
		const onAbort = () => finish(new Error("the compaction was aborted"));
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
				finish(new Error(`${CTXTOOL} ${args[0]} ${why}: ${oneLine(errText, 300) || "no message"}`));
				return;
			}
			finish(null, out);
		});
		child.stdin.on("error", () => {}); // a child that exits early; close reports it
		child.stdin.end(input ?? "");
	});
}

// compact asks ctxtool for the summary of OpenClaw's summarize() params.
async function compact(params, agentModel) {
	const req = {
		version: CONTRACT,
		agent: "openclaw",
		reason: "compaction",
		session: {},
		preparation: {
			messagesToSummarize: Array.isArray(params.messages) ? params.messages : [],
			turnPrefixMessages: [],
			previousSummary: typeof params.previousSummary === "string" ? params.previousSummary : undefined,
			fileOps: { read: [], written: [], edited: [] },
			settings: {},
		},
		customInstructions: params.customInstructions || undefined,
		summarizationInstructions: params.summarizationInstructions || undefined,
		// OpenClaw summarises with the agent's model when the provider
		// returns "" (agent.summarySource auto then means augment)
		agentModel,
	};
	const out = await run(["agent", "compact"], JSON.stringify(req), { signal: params.signal, timeoutMs: TIMEOUT_MS });
	let answer;
	try {
		answer = JSON.parse(out);
	} catch {
		throw new Error(`${CTXTOOL} answered something that is not JSON: ${JSON.stringify(oneLine(out, 80))}`);
	}
	if (!answer || typeof answer !== "object" || answer.version !== CONTRACT)
		throw new Error(`${CTXTOOL} answered in contract version ${answer?.version}, this plugin speaks ${CONTRACT}: run ctxtool install openclaw`);
	if (answer.decline && answer.augment) return { augment: true };
	if (answer.decline) throw new Error(`declined: ${oneLine(answer.decline, 300)}`);
	if (typeof answer.summary !== "string" || answer.summary.trim() === "") throw new Error(`${CTXTOOL} answered without a summary`);
	return { summary: answer.summary };
}

// modelOf is the agents' default model in OpenClaw's config, or
// "openclaw" when it names none (OpenClaw still has one to summarise with).
function modelOf(config) {
	const m = config?.agents?.defaults?.model;
	const id = typeof m === "string" ? m : m?.primary;
	return typeof id === "string" && id ? id : "openclaw";
}

// storeOf is the session's place in OpenClaw's SQLite store: the agent's
// database and the session key, as ctxtool names it (db#key).
function storeOf(ctx) {
	const state = process.env.OPENCLAW_STATE_DIR || path.join(os.homedir(), ".openclaw");
	const agent = ctx?.agentId || "main";
	const key = ctx?.sessionKey || ctx?.sessionId;
	if (!key) return null;
	return { db: path.join(state, "agents", agent, "agent", "openclaw-agent.sqlite"), key };
}

// The rolling window: OpenClaw's messages before a request, as OpenClaw's
// context engine assemble() gets them, go to `ctxtool agent window`, which
// answers how many of the oldest to leave out and the note that replaces
// them (pkg/agentlink, the same plan as pi's). OpenClaw's store is not
// touched.
const WINDOW_TIMEOUT_MS = env("CTXTOOL_OPENCLAW_WINDOW_TIMEOUT_MS", 10000);
const RECALL_TIMEOUT_MS = env("CTXTOOL_OPENCLAW_RECALL_TIMEOUT_MS", 60000);

// Shared state: OpenClaw loads the plugin more than once (a registry per
// purpose).
const shared = (globalThis[Symbol.for("ctxtool.openclaw")] ??= { committed: new Set(), offUntil: 0 });

function registerWindow(api, warn) {
	if (typeof api.registerContextEngine !== "function") return;
	api.registerContextEngine("ctxtool", (factoryCtx) => ({
		info: {
			id: "ctxtool",
			name: "ctxtool rolling window",
			ownsCompaction: false,
			transcriptSemantics: { currentTurnFence: "before-current-turn-entry-v1", turnAdvancementIdempotency: "atomic-idempotent-v1" },
		},
		// OpenClaw's store keeps the messages: nothing of ours to store
		async ingest() {
			return { ingested: false };
		},
		async commitTurn({ advancementKey }) {
			if (advancementKey && shared.committed.has(advancementKey)) return { status: "duplicate" };
			if (advancementKey) {
				shared.committed.add(advancementKey);
				// a retry comes right after its turn: the last keys suffice
				if (shared.committed.size > 4096) shared.committed.delete(shared.committed.values().next().value);
			}
			return { status: "committed" };
		},
		// compactions stay OpenClaw's (and its provider's: ctxtool's summary)
		async compact(params) {
			const { delegateCompactionToRuntime } = await import("openclaw/plugin-sdk/core");
			return delegateCompactionToRuntime(params);
		},
		async assemble(params) {
			const messages = Array.isArray(params?.messages) ? params.messages : [];
			const whole = { messages, estimatedTokens: estimate(messages) };
			const key = params?.sessionKey || params?.sessionId;
			const window = contextWindowOf(params, factoryCtx?.config ?? api.config);
			if (Date.now() < shared.offUntil || messages.length === 0 || !window) return whole;
			// the request's overhead (system prompt, tools, the prompt being
			// sent) is what OpenClaw's budget for the messages leaves out
			// of the window besides the output
			const budget = Number(params?.tokenBudget) || 0;
			const output = Number(params?.runtimeSettings?.limits?.maxOutputTokens) || 0;
			const overheadTokens = budget > 0 ? Math.max(window - output - budget, 0) : 0;
			const where = storeOf({ agentId: agentOf(params), sessionKey: key });
			const req = {
				version: CONTRACT,
				agent: "openclaw",
				session: where ? { file: `${where.db}#${where.key}`, key: where.key, id: params?.sessionId } : { id: params?.sessionId },
				messages,
				contextWindow: window,
				overheadTokens,
			};
			let answer;
			try {
				answer = JSON.parse(await run(["agent", "window"], JSON.stringify(req), { timeoutMs: WINDOW_TIMEOUT_MS }));
				if (!answer || answer.version !== CONTRACT) throw new Error(`${CTXTOOL} answered in contract version ${answer?.version}, this plugin speaks ${CONTRACT}: run ctxtool install openclaw`);
			} catch (err) {
				shared.offUntil = Date.now() + 60000;
				warn(`rolling window failed, requests are sent whole for a minute: ${oneLine(err && err.message, 400)}`);
				return whole;
			}
			if (answer.decline) {
				shared.offUntil = Date.now() + 60000;
				return whole;
			}
			if (!(answer.firstKept > 0) || typeof answer.note !== "string") return whole;
			const note = { role: "user", content: [{ type: "text", text: answer.note }], timestamp: Date.now() };
			const kept = [note, ...messages.slice(answer.firstKept)];
			return { messages: kept, estimatedTokens: estimate(kept) };
		},
	}));
	api.registerTool(
		(toolCtx) => ({
			name: "recall",
			label: "Recall",
			// visible beside tool_search: the window's note names it
			catalogMode: "direct-only",
			description:
				"Search the earlier messages of this conversation that are no longer in your context (ctxtool's rolling window left them out; they are kept). Give a few distinctive keywords; you get the best matching passages.",
			parameters: {
				type: "object",
				properties: { query: { type: "string", description: "keywords to look for in the earlier conversation" } },
				required: ["query"],
				additionalProperties: false,
			},
			async execute(_id, params, signal) {
				const where = storeOf(toolCtx);
				if (!where) return { content: [{ type: "text", text: "recall failed: this run has no session to search" }], details: { hits: 0 }, isError: true };
				const req = { version: CONTRACT, agent: "openclaw", session: { file: `${where.db}#${where.key}`, key: where.key }, query: String(params?.query ?? "") };
				try {
					const a = JSON.parse(await run(["agent", "recall"], JSON.stringify(req), { signal, timeoutMs: RECALL_TIMEOUT_MS }));
					return { content: [{ type: "text", text: String(a?.text ?? "") }], details: { hits: a?.hits?.length ?? 0 } };
				} catch (err) {
					warn(`recall failed: ${oneLine(err && err.message, 400)}`);
					return { content: [{ type: "text", text: `recall failed: ${oneLine(err && err.message, 300)}` }], details: { hits: 0 }, isError: true };
				}
			},
		}),
		{ name: "recall" },
	);
}

// contextWindowOf is the model's context window: the model's
// contextWindow in OpenClaw's config (models.providers.<p>.models[]), else
// the budgets assemble() is told (without the overhead: smaller, safe).
function contextWindowOf(params, config) {
	const m = params?.runtimeSettings?.model;
	const models = config?.models?.providers?.[m?.provider]?.models;
	if (Array.isArray(models)) {
		const found = models.find((x) => x && (x.id === m?.resolved || x.id === m?.requested));
		if (Number(found?.contextWindow) > 0) return Math.floor(Number(found.contextWindow));
	}
	const budget = Number(params?.tokenBudget ?? params?.runtimeSettings?.limits?.promptTokenBudget);
	if (!(budget > 0)) return 0;
	return Math.floor(budget + (Number(params?.runtimeSettings?.limits?.maxOutputTokens) || 0));
}

function agentOf(params) {
	const m = /^agent:([^:]+):/.exec(String(params?.sessionKey ?? ""));
	return m ? m[1] : undefined;
}

// estimate is chars/4 of the messages, as OpenClaw's own estimate counts.
function estimate(messages) {
	try {
		return Math.ceil(JSON.stringify(messages).length / 4);
	} catch {
		return 0;
	}
}

export default {
	id: "ctxtool",
	name: "ctxtool",
	description: "Compaction summaries, memory flush and checkpoints made by ctxtool",
	register(api) {
		const logger = api.logger ?? console;
		const warn = (m) => (logger.warn ?? logger.error ?? console.error).call(logger, `[ctxtool] ${m}`);
		const info = (m) => (logger.info ?? console.log).call(logger, `[ctxtool] ${m}`);

		api.registerCompactionProvider({
			id: "ctxtool",
			label: "ctxtool",
			async summarize(params) {
				try {
					const got = await compact(params ?? {}, modelOf(api.config));
					if (got.augment) {
						// augment: OpenClaw's own summary stands; after_compaction
						// audits it against these messages
						lastMessages = Array.isArray(params?.messages) ? params.messages : [];
						return "";
					}
					return got.summary;
				} catch (err) {
					warn(`compaction failed, OpenClaw summarises by itself: ${oneLine(err && err.message, 400)}`);
					return "";
				}
			},
		});

		// Augment mode: the messages OpenClaw's summary covers (summarize()
		// gets no session, so the last ones are kept for after_compaction)
		// and, per session key, the additions for its next request.
		let lastMessages = null;
		const pending = new Map();
		api.on("after_compaction", async (event, ctx) => {
			const where = storeOf(ctx);
			if (!lastMessages || !where) return;
			const messages = lastMessages;
			lastMessages = null;
			const req = {
				version: CONTRACT,
				agent: "openclaw",
				reason: "compaction",
				session: { file: `${where.db}#${where.key}`, key: where.key, id: ctx?.sessionId },
				preparation: { messagesToSummarize: messages, turnPrefixMessages: [], fileOps: { read: [], written: [], edited: [] }, settings: {} },
			};
			try {
				const a = JSON.parse(await run(["agent", "augment"], JSON.stringify(req), { timeoutMs: HOOK_TIMEOUT_MS }));
				if (a && typeof a.additions === "string" && a.additions.trim() !== "") {
					pending.set(where.key, a.additions);
					info(`augment: ${a.audit?.dropped ?? "?"} fact(s) OpenClaw's summary dropped go into the next request`);
				}
			} catch (err) {
				warn(`augment failed, OpenClaw's summary stands alone: ${oneLine(err && err.message, 300)}`);
			}
		});
		api.on("before_prompt_build", async (_event, ctx) => {
			const key = ctx?.sessionKey || ctx?.sessionId;
			const add = key && pending.get(key);
			if (!add) return undefined;
			pending.delete(key);
			return { prependContext: add };
		});

		registerWindow(api, warn);

		api.on("before_compaction", async (event, ctx) => {
			const where = storeOf(ctx);
			if (!where) {
				warn("before_compaction without a session key: no memory flush, no checkpoint");
				return;
			}
			const target = `${where.db}#${where.key}`;
			const jobs = [];
			if (!ctx?.workspaceDir) warn("before_compaction has no workspace: no memory flush");
			else {
				jobs.push(
					run(["flush", "--json", "--force", "--workspace", ctx.workspaceDir, "--session-key", where.key, target], "", { timeoutMs: HOOK_TIMEOUT_MS })
						.then((out) => {
							const r = JSON.parse(out.trim().split("\n").pop() || "{}");
							if (r.flushed) info(`memory flush: ${r.entries?.length ?? 0} note(s) to ${r.memoryFile}`);
							else info(`no memory flush: ${r.reason || "not due"}`);
						})
						.catch((err) => warn(`memory flush failed: ${oneLine(err && err.message, 300)}`)),
				);
			}
			jobs.push(
				run(["checkpoint", "--json", "--trigger", "compaction", "--force", "--session-key", where.key, target], "", { timeoutMs: HOOK_TIMEOUT_MS })
					.catch((err) => warn(`checkpoint failed: ${oneLine(err && err.message, 300)}`)),
			);
			await Promise.all(jobs);
		});
	},
};
