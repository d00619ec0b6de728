// ctxtool install openclaw --check: load the installed plugin the way the
// Gateway does (its default export's register(api)), call the registered
// compaction provider's summarize() with tiny params, and print what it
// returned as one JSON line.
// The round trip is ctxtool's own summary, whatever agent.summarySource
// says (in augment mode the agent's model writes it, which --check cannot run).
process.env.CTXTOOL_AGENT_SUMMARYSOURCE = "ctxtool";
const [, , plugin, payload] = process.argv;
const mod = await import(plugin);
const providers = [], hooks = {}, logs = [];
const log = (m) => logs.push(String(m));
mod.default.register({
	logger: { info: log, warn: log, error: log, debug: () => {} },
	registerCompactionProvider: (p) => providers.push(p),
	registerContextEngine: () => {},
	registerTool: () => {},
	on: (name, fn) => ((hooks[name] ??= []).push(fn)),
});
const p = providers.find((p) => p.id === "ctxtool");
if (!p) {
	console.log(JSON.stringify({ error: "the plugin registers no compaction provider \"ctxtool\"" }));
	process.exit(0);
}
const params = JSON.parse(payload);
params.signal = new AbortController().signal;
const summary = await p.summarize(params);
console.log(JSON.stringify({ summary, hooks: Object.keys(hooks).sort(), logs }));
process.exit(0);
