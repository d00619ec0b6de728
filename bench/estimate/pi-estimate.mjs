// pi-estimate.mjs FILE — what pi itself does to size a session: load it with
// SessionManager, rebuild the context, sum estimateTokens. Prints JSON with
// the wall time of that work. Run with node from the repo root.
import path from "node:path";
import fs from "node:fs";
import os from "node:os";
import { pathToFileURL } from "node:url";

// The harness pi's loader is installed in (internal/oracle/js/install.sh), as
// for the tests and bench/curve.sh; PI_ORACLE points elsewhere.
const oracle = process.env.PI_ORACLE || path.resolve("internal/oracle/js");
const core = path.join(oracle, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core");
const sm = await import(pathToFileURL(path.join(core, "session-manager.js")).href);
const cp = await import(pathToFileURL(path.join(core, "compaction", "compaction.js")).href);

const file = process.argv[2];
// pi rewrites v1/v2 files on open: work on a copy.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-est-"));
const copy = path.join(dir, path.basename(file));
fs.copyFileSync(file, copy);
// The copy goes whatever happens: pi throws on a file over V8's string
// limit (1 GB), and each failed run used to leave a 1 GB copy in TMPDIR.
let result;
try {
	const t0 = process.hrtime.bigint();
	const m = sm.SessionManager.open(copy, path.join(dir, "sessions"));
	const ctx = m.buildSessionContext();
	let tokens = 0;
	for (const msg of ctx.messages) tokens += cp.estimateTokens(msg);
	const ms = Number(process.hrtime.bigint() - t0) / 1e6;
	result = { tokens, messages: ctx.messages.length, ms };
} finally {
	fs.rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result) + "\n");
