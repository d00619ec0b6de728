// ctxtool install --check: load the installed pi extension (copied to a
// .mjs file) the way pi calls it, fire one session_before_compact with a
// tiny preparation, and print what the handler returned as one JSON line.
// The round trip is ctxtool's own summary, whatever agent.summarySource
// says (in augment mode the agent's model writes it, which --check cannot run).
process.env.CTXTOOL_AGENT_SUMMARYSOURCE = "ctxtool";
const [, , extension, payload] = process.argv;
const mod = await import(extension);
const handlers = {};
mod.default({ on: (name, fn) => ((handlers[name] ??= []).push(fn)), registerTool: () => {} });
const fire = handlers["session_before_compact"]?.[0];
if (!fire) {
	console.log(JSON.stringify({ error: "the extension registers no session_before_compact handler" }));
	process.exit(0);
}
const event = JSON.parse(payload);
event.signal = new AbortController().signal;
const ctx = { cwd: process.cwd(), sessionManager: { getSessionFile: () => undefined, getSessionId: () => "ctxtool-check" } };
const result = await fire(event, ctx);
console.log(JSON.stringify({ result: result ?? null }));
process.exit(0); // do not wait for what the extension left running
