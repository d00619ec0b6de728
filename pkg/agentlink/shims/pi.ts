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
import { spawn } from "node:child_process";

const CTXTOOL = "__CTXTOOL_BINARY__";
const CONTRACT = 1;
// CTXTOOL_PI_TIMEOUT_MS overrides the time ctxtool gets (an LLM summariser
// may need a while; the extractive one takes well under a second).
const TIMEOUT_MS = Number(process.env.CTXTOOL_PI_TIMEOUT_MS) > 0 ? Number(process.env.CTXTOOL_PI_TIMEOUT_MS) : 120000;
const MAX_ANSWER = 16 * 1024 * 1024;

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
	let file, id, cwd;
	try {
		file = ctx.sessionManager.getSessionFile();
		id = ctx.sessionManager.getSessionId();
	} catch {}
	try {
		cwd = ctx.cwd;
	} catch {}
	return {
		version: CONTRACT,
		agent: "pi",
		reason: event.reason,
		session: { file, id, cwd },
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
	};
}

// run sends the request to ctxtool and resolves with its parsed answer, or
// rejects with one line saying what went wrong.
function run(req, signal) {
	return new Promise((resolve, reject) => {
		let child;
		try {
			// its own process group, so a timeout or an abort kills what it
			// started too (an exec summariser, hooks)
			child = spawn(CTXTOOL, ["agent", "compact"], {
				stdio: ["pipe", "pipe", "pipe"],
				detached: process.platform !== "win32",
				env: { ...process.env, CTXTOOL_AGENT: "pi" },
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
		const timer = setTimeout(() => finish(new Error(`${CTXTOOL} did not answer within ${TIMEOUT_MS} ms (killed)`)), TIMEOUT_MS);
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
				finish(new Error(`${CTXTOOL} ${why}: ${oneLine(errText, 300) || "no message"}`));
				return;
			}
			let answer;
			try {
				answer = JSON.parse(out);
			} catch {
				finish(new Error(`${CTXTOOL} answered something that is not JSON: ${JSON.stringify(oneLine(out, 80))}`));
				return;
			}
			if (!answer || typeof answer !== "object" || answer.version !== CONTRACT) {
				finish(new Error(`${CTXTOOL} answered in contract version ${answer?.version}, this extension speaks ${CONTRACT}: run ctxtool install pi`));
				return;
			}
			if (!answer.decline && (typeof answer.summary !== "string" || answer.summary.trim() === "")) {
				finish(new Error(`${CTXTOOL} answered without a summary`));
				return;
			}
			finish(null, answer);
		});
		child.stdin.on("error", () => {}); // a child that exits early; close reports it
		child.stdin.end(JSON.stringify(req));
	});
}

export default function (pi) {
	pi.on("session_before_compact", async (event, ctx) => {
		let answer;
		try {
			answer = await run(request(event, ctx), event.signal);
		} catch (err) {
			log(`compaction failed, pi compacts by itself: ${oneLine(err && err.message, 400)}`);
			return undefined;
		}
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
