package compaction

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/oracle"
	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/formats"
)

// A probe is one thing a resumed engineer must know about the part of a
// session a default compaction summarises, with a short answer that must be
// in pi's rebuilt context (summary + kept tail) afterwards. Answers were
// written by reading the sessions; none of them is in the kept tail (the
// test checks), so only the summary can carry them. A "superseded" answer
// is a fact the region replaced: it scores when the context no longer
// says it.
type probe struct {
	class  string // goal, constraint, decision, error, todo, file, identifier, superseded
	answer string
}

var probeClasses = []string{"goal", "constraint", "decision", "error", "todo", "file", "identifier", "superseded"}

// wildProbes are keyed by the fixture's path under ../shared/fixtures/wild
// (Claude Code and Codex files are exported to pi first). Only the short
// answers are here: the sessions themselves stay outside the repository.
var wildProbes = map[string][]probe{
	// A Windows vault keeper: persona conflicts, then game-dev notes, then
	// installing Git Bash; bash is missing all along.
	"pi/idahovault-pi-019da8eb.jsonl": {
		{"goal", "struggles in the vaulted systems"},
		{"goal", "Find Game Dev notes about the CIVIC ENGINES"},
		{"constraint", "you're in a PowerShell terminal window"},
		{"constraint", "via CLI if able"},
		{"decision", "HARD REGISTRY ALIGNMENT"},
		{"decision", "Exorcism of the Nomina"},
		{"decision", "Which path do you want to pursue?"},
		{"error", "No bash shell found"},
		{"error", "Set shellPath"},
		{"todo", "CLAUDE_CODE_GIT_BASH_PATH"},
		{"file", ".google/GOOGLE.md"},
		{"file", ".zagreus/ZAGREUS.md"},
		{"identifier", "Decision 23"},
		{"identifier", "LAF-ADDENDUM"},
		{"identifier", "Decision 21"},
	},
	// A Telegram OpenClaw agent on qwen3:8b: tailscale, plans, brave search,
	// a name, a skill to install.
	"openclaw/archeoneocode-fad751fa.jsonl": {
		{"goal", "how do I configure tailscale?"},
		{"goal", "Can you make some plans when I sleep"},
		{"constraint", "Write in .md"},
		{"constraint", "Your name will be archeo"},
		{"decision", "do not require OpenAI or Google API keys"},
		{"error", "missing_brave_api_key"},
		{"error", "Gateway restart is disabled"},
		{"error", "JSON5: invalid character"},
		{"todo", "configure brave search"},
		{"todo", "spam subagents with specific roles"},
		{"identifier", "commands.restart=true"},
		{"identifier", "9e6b2a3f-e944-4c3a-99b5-ea722195206d"},
		{"identifier", "openclaw configure --section web"},
	},
	// A Feishu fitness coach in Chinese, two OpenClaw compactions before.
	"openclaw/rs-anuo-0139686e-2compactions.jsonl": {
		{"goal", "以后每天都告诉我这周计划和今天计划"},
		{"constraint", "周计划不变，只改变后面的备注"},
		{"constraint", "有氧每天都做"},
		{"constraint", "不要让翔宇提醒我"},
		{"decision", "推→拉→腿"},
		{"decision", "先补三头"},
		{"error", "编造了数据"},
		{"error", "日期全错了一天"},
		{"todo", "每天晚上八点记得提醒我俯卧撑"},
		{"todo", "一定记得加进去"},
		{"file", "week-2026-W15.md"},
		{"file", "2026-04-10.md"},
		{"identifier", "0 20 * * *"},
		{"identifier", "0 7 * * *"},
		{"identifier", "lynch-pushup-reminder"},
	},
	// A Windows OpenClaw agent backing its workspace up to GitHub (3
	// compactions): the previous summary carries most of the task.
	"openclaw/muskfanx-d27ecd5a-3compactions.jsonl": {
		{"goal", "Complete Git commit and push"},
		{"constraint", "Default workspace is `workspace/workspace-assistant/`"},
		{"constraint", "only when explicitly requested"},
		{"decision", "Default to workspace-assistant directory"},
		{"error", "src refspec main does not match any"},
		{"error", "contact:contact.base:readonly"},
		{"todo", "Push committed changes to `backup/master`"},
		{"file", "scripts/auto-backup.ps1"},
		{"file", "STRUCTURE.md"},
		{"identifier", "LRN-20260306-001"},
		{"identifier", "dawn-prairie"},
		{"identifier", "credential.helper=manager"},
	},
	// Claude Code on an Elixir app (exported to pi), autonomous work on
	// an epic's subtasks after one Claude Code compaction.
	"claude-code/spotter-4d5611e5-compact.jsonl": {
		{"goal", "work on bead `spotter-dov`"},
		{"decision", "I don't need a manual handler"},
		{"decision", "merge TranscriptSelection into TranscriptHighlighter"},
		{"decision", "@default_visible_lines 10"},
		{"error", "Access.get/2"},
		{"error", "nested too deep"},
		{"identifier", "transcript_view_toggle_tool_result_group"},
	},
	// Codex on a 3D-printing toolkit (exported to pi): CLI subcommands, a
	// GUI, printers, the PDL schema.
	"codex/monotoba-openprintkit-rollout-2025-10-31.jsonl": {
		{"goal", "add opk rules and opk workspace init subcommands"},
		{"goal", "we are supposed to have a gui tool as well as the cli"},
		{"constraint", "be sure to commit all your changes to the local repo"},
		{"constraint", "Commit changes as each task is completed and tests pass"},
		{"constraint", "Perhaps up to 32 colors of filament"},
		{"decision", "add a simple Cura→OPK converter"},
		{"todo", "we also need to add additional printers Prusa"},
		{"todo", "custom tool change"},
		{"file", "docs/quickstart.md"},
		{"file", "opk/core/install.py"},
		{"file", "schemas/pdl.schema.json"},
		{"file", "opk/plugins/converters/cura.py"},
		{"identifier", "38a965e"},
		{"identifier", "opk-gui"},
	},
}

// probeRun is one session of the probe set: the file to compact and its
// probes.
type probeRun struct {
	name   string
	file   string
	probes []probe
}

// probeScore compacts every session (default strategy, extractive), asks
// pi's loader for the rebuilt context and counts the answers it carries,
// per class. A probe whose answer is missing from the session before, or
// present in the kept tail after, is a broken probe: the test fails.
func probeScore(t *testing.T, runs []probeRun) (kept, total map[string]int, sizes map[string]int) {
	t.Helper()
	kept, total, sizes = map[string]int{}, map[string]int{}, map[string]int{}
	var originals, compacted []string
	dir := t.TempDir()
	for i, r := range runs {
		data, err := os.ReadFile(r.file)
		if err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(dir, fmt.Sprintf("%02d-%s", i, filepath.Base(r.file)))
		if err := os.WriteFile(c, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := CompactFile(context.Background(), c, Options{Settings: Settings{Strategy: StrategyDefault, Force: true}, Summarizer: Extractive{}})
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if !res.Compacted {
			t.Fatalf("%s: not compacted: %s", r.name, res.Reason)
		}
		originals = append(originals, r.file)
		compacted = append(compacted, c)
	}
	pis := oracle.Check(t, false, true, append(originals, compacted...)...)
	before, after := pis[:len(runs)], pis[len(runs):]
	for i, r := range runs {
		if after[i].LastCompaction == nil {
			t.Fatalf("%s: pi sees no compaction", r.name)
		}
		summary := after[i].LastCompaction.Summary
		ctx := after[i].ContextText
		tail := strings.Replace(ctx, summary, "", 1)
		if tail == ctx {
			t.Fatalf("%s: the summary is not in pi's context", r.name)
		}
		sizes[r.name] = countTokens(summary)
		for _, p := range r.probes {
			if !probeIn(before[i].ContextText, p.answer) {
				t.Errorf("%s: broken probe %s %q: not in the session", r.name, p.class, p.answer)
				continue
			}
			if probeIn(tail, p.answer) {
				t.Errorf("%s: broken probe %s %q: the kept tail repeats it", r.name, p.class, p.answer)
				continue
			}
			total[p.class]++
			if probeIn(ctx, p.answer) == (p.class != "superseded") {
				kept[p.class]++
			} else {
				t.Logf("%s: lost %s %q", r.name, p.class, p.answer)
			}
		}
	}
	return kept, total, sizes
}

// wildProbeRuns are the wild fixtures with probes, Claude Code and Codex
// ones exported to pi in dir.
func wildProbeRuns(t *testing.T, dir string) []probeRun {
	wild := oracle.WildDir(t)
	names := make([]string, 0, len(wildProbes))
	for n := range wildProbes {
		names = append(names, n)
	}
	sort.Strings(names)
	var runs []probeRun
	for _, n := range names {
		src := filepath.Join(wild, n)
		file := src
		if strings.HasPrefix(n, "codex/") || strings.HasPrefix(n, "claude-code/") {
			file = filepath.Join(dir, strings.ReplaceAll(n, "/", "-"))
			if _, err := formats.ExportFile(src, file, true); err != nil {
				t.Fatalf("%s: export: %v", n, err)
			}
		}
		runs = append(runs, probeRun{name: n, file: file, probes: wildProbes[n]})
	}
	return runs
}

// TestProbesOnRealSessions is issue 32's measure: after a default
// extractive compaction, pi's rebuilt context carries at least 90 % of the
// probe answers overall and 80 % in every class, on the wild sessions and
// the generated ones.
func TestProbesOnRealSessions(t *testing.T) {
	oracle.Require(t)
	dir := t.TempDir()
	runs := wildProbeRuns(t, dir)
	runs = append(runs, generatedProbeRuns(t, dir)...)
	kept, total, sizes := probeScore(t, runs)
	var table strings.Builder
	table.WriteString("| class | kept |\n|---|---|\n")
	k, n := 0, 0
	for _, c := range probeClasses {
		k += kept[c]
		n += total[c]
		fmt.Fprintf(&table, "| %s | %d/%d |\n", c, kept[c], total[c])
	}
	fmt.Fprintf(&table, "| all | %d/%d (%.0f %%) |\n\nsummary o200k tokens:", k, n, 100*float64(k)/float64(max(n, 1)))
	for _, r := range runs {
		fmt.Fprintf(&table, " %s %d;", r.name, sizes[r.name])
	}
	t.Log("\n" + table.String())
	if os.Getenv("CTXTOOL_MEASURE") != "" {
		fmt.Println(table.String())
	}
	if n == 0 {
		t.Fatal("no probes scored")
	}
	// Issue 32's bar: 90 % overall and 80 % in every class (before issue
	// 32 the summariser kept 57 %).
	overall, class := 0.9, 0.8
	if float64(k) < overall*float64(n) {
		t.Errorf("overall %d/%d < %.0f %%", k, n, 100*overall)
	}
	for _, c := range probeClasses {
		if total[c] > 0 && float64(kept[c]) < class*float64(total[c]) {
			t.Errorf("%s: %d/%d < %.0f %%", c, kept[c], total[c], 100*class)
		}
	}
}

// The generated sessions of the probe set: the noise real sessions hold
// (greetings, OpenClaw channel envelopes, heartbeat and memory-flush
// prompts, task notifications, long tool dumps full of identifiers nobody
// mentions, hard-wrapped tool output, a previous summary whose schedule
// the region changes) around a task whose facts a resumed engineer needs.
// Each session ends with ~30,000 tokens of unrelated work, so the facts
// are all in the summarised part.
func generatedProbeRuns(t *testing.T, dir string) []probeRun {
	type gen struct {
		name   string
		build  func(b *sessiongen.Builder, call func(name string, args sessiongen.Obj, out string, isErr bool))
		probes []probe
	}
	envelope := func(sender, text string) string {
		return "System: [2026-04-18 16:07:01 GMT+8] Feishu[ops] DM | " + sender + " (ou_4f1c2a9e0b7d) [msg:om_x100b51]\n" +
			"Conversation info (untrusted metadata):\n```json\n{\n  \"message_id\": \"om_x100b51\",\n  \"sender_id\": \"ou_4f1c2a9e0b7d\",\n  \"sender\": \"" + sender + "\"\n}\n```\n\n" +
			"Sender (untrusted metadata):\n```json\n{\n  \"label\": \"" + sender + "\",\n  \"id\": \"ou_4f1c2a9e0b7d\"\n}\n```\n\n" + text
	}
	dump := func(seed int) string {
		var b strings.Builder
		for i := 0; i < 120; i++ {
			fmt.Fprintf(&b, "asset-%03d.tar.gz sha256 %064x https://downloads.example.org/r/%d/asset-%03d.tar.gz\n", i, uint64(seed*7919+i)*0x9e3779b97f4a7c15, seed, i)
		}
		return b.String()
	}
	wrapped := "The migration tool rewrites every row of the ledger table in\nplace and must not be interrupted once it has started, because the\nbatch marker lives only in memory and a restart begins again from\nthe first row. Use --resume-from when a run was cut short.\n"
	gens := []gen{
		{name: "generated/channel-ops", build: func(b *sessiongen.Builder, call func(string, sessiongen.Obj, string, bool)) {
			b.UserText(envelope("ops-lead", "Hi there!"))
			b.AssistantText("Hello! What can I do for you today?")
			b.UserText(envelope("ops-lead", "Please migrate the billing ledger from MySQL to Postgres 16 before Friday. Keep the old ledger read-only until finance signs off, and never run the migration during business hours (09:00-18:00 CET)."))
			call("read", sessiongen.Obj{{K: "path", V: "docs/ledger/MIGRATION.md"}}, wrapped+strings.Repeat("Background: the ledger predates the current billing service and\n", 20), false)
			call("bash", sessiongen.Obj{{K: "command", V: "curl -s https://downloads.example.org/releases"}}, dump(1), false)
			b.AssistantText("I read docs/ledger/MIGRATION.md. We decided to use pgloader for the copy instead of a hand-written script, because it keeps the types. The plan is to run it from the batch host ledger-batch-02.")
			call("bash", sessiongen.Obj{{K: "command", V: "pgloader mysql://ledger@db1/ledger postgresql://ledger@pg16/ledger"}}, "ERROR pgloader: could not connect to MySQL: Access denied for user 'ledger'@'10.0.4.17'\n", true)
			b.AssistantText("pgloader failed: Access denied for user 'ledger' from 10.0.4.17. The grant is missing on db1; I will ask for it rather than use the root account.")
			b.UserText(envelope("ops-lead", "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. Do not infer or repeat old tasks from prior chats. If nothing needs attention, reply HEARTBEAT_OK."))
			b.AssistantText("HEARTBEAT_OK")
			b.UserText(envelope("ops-lead", "The grant is there now. Also add a row-count check per table after the copy, and write the runbook to docs/ledger/RUNBOOK.md."))
			call("bash", sessiongen.Obj{{K: "command", V: "pgloader mysql://ledger@db1/ledger postgresql://ledger@pg16/ledger"}}, "table ledger_entries copied 1843221 rows\ntable ledger_accounts copied 9120 rows\n", false)
			call("write", sessiongen.Obj{{K: "path", V: "docs/ledger/RUNBOOK.md"}, {K: "content", V: "# Ledger migration runbook\n"}}, "Wrote docs/ledger/RUNBOOK.md", false)
			b.AssistantText("The copy ran; ledger_entries has 1843221 rows on both sides. I wrote docs/ledger/RUNBOOK.md. Still open: the per-table row-count check is not automated yet.")
		}, probes: []probe{
			{"goal", "migrate the billing ledger from MySQL to Postgres 16"},
			{"constraint", "Keep the old ledger read-only until finance signs off"},
			{"constraint", "never run the migration during business hours"},
			{"decision", "use pgloader for the copy"},
			{"error", "Access denied for user 'ledger'"},
			{"todo", "add a row-count check per table"},
			{"file", "docs/ledger/RUNBOOK.md"},
			{"file", "docs/ledger/MIGRATION.md"},
			{"identifier", "ledger-batch-02"},
			{"identifier", "1843221"},
		}},
		{name: "generated/previous-summary", build: func(b *sessiongen.Builder, call func(string, sessiongen.Obj, string, bool)) {
			first := b.UserText("Set up the nightly report job for the sales dashboard.")
			b.AssistantText("I will set it up with cron.")
			b.Compaction(sessiongen.Compaction{FirstKeptEntryID: first, Summary: "## Goal\nSet up the nightly report job for the sales dashboard.\n\n" +
				"## Constraints & Preferences\n- The report must be emailed to sales-leads@example.com.\n- The report job runs every day at 12:00.\n\n" +
				"## Progress\n### Done\n- [x] Wrote jobs/report.py\n\n### In Progress\n- [ ] Schedule the job\n\n### Blocked\n- None.\n\n" +
				"## Key Decisions\n- **Renderer**: weasyprint for the PDF.\n\n## Next Steps\n1. Schedule the job\n\n## Critical Context\n- Job id rpt-7731"})
			b.UserText("<task-notification>\n<task-id>bg-4412</task-id>\n<status>completed</status>\n<summary>Background command \"npm run build\" completed (exit code 0).</summary>\n</task-notification>")
			b.AssistantText("The background build finished.")
			b.UserText("Change of plan: the report job runs every day at 07:00, not at noon. Also attach the CSV, not only the PDF.")
			call("edit", sessiongen.Obj{{K: "path", V: "deploy/crontab"}, {K: "oldText", V: "0 12 * * *"}, {K: "newText", V: "0 7 * * *"}}, "Edited deploy/crontab", false)
			b.AssistantText("Done: deploy/crontab now says 0 7 * * *, and jobs/report.py attaches report.csv next to the PDF.")
			b.UserText("Pre-compaction memory flush. Store durable memories now (use memory/2026-04-18.md; create memory/ if needed). If nothing to store, reply with NO_REPLY.")
			b.AssistantText("NO_REPLY")
		}, probes: []probe{
			{"goal", "nightly report job for the sales dashboard"},
			{"constraint", "sales-leads@example.com"},
			{"constraint", "runs every day at 07:00"},
			{"constraint", "attach the CSV"},
			{"decision", "weasyprint"},
			{"file", "deploy/crontab"},
			{"file", "jobs/report.py"},
			{"identifier", "rpt-7731"},
			{"superseded", "every day at 12:00"},
		}},
	}
	var runs []probeRun
	for i, g := range gens {
		file := filepath.Join(dir, fmt.Sprintf("gen-%d.jsonl", i))
		sessiongen.ToTestFile(t, file, func(w io.Writer) (struct{}, error) {
			b := sessiongen.NewBuilder(w, sessiongen.Config{Seed: uint64(42 + i)})
			call := func(name string, args sessiongen.Obj, out string, isErr bool) {
				id := b.ToolCallID()
				b.Assistant(sessiongen.Assistant{Content: []sessiongen.Block{sessiongen.ToolCall(id, name, args)}})
				b.ToolResult(sessiongen.ToolResult{ToolCallID: id, ToolName: name, Content: []sessiongen.Block{sessiongen.Text(out)}, IsError: isErr})
			}
			g.build(b, call)
			// unrelated later work: the kept tail
			for k := 0; k < 30; k++ {
				b.UserText(fmt.Sprintf("Next, look at module m%02d.", k))
				call("read", sessiongen.Obj{{K: "path", V: fmt.Sprintf("src/m%02d.go", k)}}, strings.Repeat(fmt.Sprintf("func helper%02d() int { return %d }\n", k, k), 110), false)
				b.AssistantText(fmt.Sprintf("Module m%02d looks fine; nothing to change there.", k))
			}
			_, err := b.Close()
			return struct{}{}, err
		})
		runs = append(runs, probeRun{name: g.name, file: file, probes: g.probes})
	}
	return runs
}
