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
async function compact(params) {
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

// storeOf is the session's place in OpenClaw's SQLite store: the agent's
// database and the session key, as ctxtool names it (db#key).
function storeOf(ctx) {
	const state = process.env.OPENCLAW_STATE_DIR || path.join(os.homedir(), ".openclaw");
	const agent = ctx?.agentId || "main";
	const key = ctx?.sessionKey || ctx?.sessionId;
	if (!key) return null;
	return { db: path.join(state, "agents", agent, "agent", "openclaw-agent.sqlite"), key };
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
					const got = await compact(params ?? {});
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
