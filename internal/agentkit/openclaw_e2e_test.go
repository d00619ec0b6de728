package agentkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/llmtest"
)

// needOpenClaw returns the pinned OpenClaw, or skips outside CI (CI=true
// makes its absence a failure; .ci/run installs it).
func needOpenClaw(t *testing.T) *OpenClawInstall {
	t.Helper()
	in, err := FindOpenClaw()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs the real OpenClaw: %v", err)
		}
		t.Skipf("skipping the real-OpenClaw test: %v", err)
	}
	return in
}

const ownSummary = "OPENCLAW-OWN-SUMMARY of the test model"

var identRE = regexp.MustCompile(`[a-z]+://[^\s"'<>]+|/[\w.-]{2,}(?:/[\w.-]+)+|[A-Za-z0-9._-]+\.[A-Za-z0-9._/-]+:\d{1,5}`)

// ownSummaryOf is the fake model's answer to OpenClaw's summary request:
// the sections OpenClaw's quality check requires, each once, with every
// identifier of the conversation, as a good model would write it.
func ownSummaryOf(r llmtest.Request) string {
	var all strings.Builder
	for _, m := range r.Messages {
		all.WriteString(m.Content)
		all.WriteByte('\n')
	}
	ids := identRE.FindAllString(all.String(), -1)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return ownSummary + ".\n\n## Decisions\n- none\n\n## Open TODOs\n- none\n\n## Constraints/Rules\n- none\n\n## Pending user asks\n- none\n\n## Exact identifiers\n- " +
		strings.Join(ids, "\n- ")
}

// ocRun is the shared Gateway of TestOpenClaw and what it needs.
type ocRun struct {
	t               *testing.T
	in              *OpenClawInstall
	srv             *llmtest.Server
	gw              *Gateway
	home, bin, ws   string
	modeFile, state string
	env             []string
}

// ocConfig is the user's openclaw.json before ctxtool is installed: the
// fake provider with a large-window model (agent main) and a small one
// (agent small, for the threshold), auth off on loopback.
func ocConfig(home, baseURL string, port int) []byte {
	model := func(id string, window int) map[string]any {
		return map[string]any{"id": id, "name": id, "reasoning": false, "input": []string{"text"},
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": window, "maxTokens": 1024}
	}
	c := map[string]any{
		"gateway": map[string]any{"port": port, "mode": "local", "bind": "loopback", "auth": map[string]any{"mode": "none"}},
		"agents": map[string]any{
			"defaults": map[string]any{"model": map[string]any{"primary": "fake/fake-model"}, "workspace": filepath.Join(home, "ws")},
			"list": []any{map[string]any{"id": "main", "default": true, "workspace": filepath.Join(home, "ws")},
				map[string]any{"id": "small", "model": map[string]any{"primary": "fake/fake-small"}, "workspace": filepath.Join(home, "ws-small")}},
		},
		"models": map[string]any{"mode": "merge", "providers": map[string]any{"fake": map[string]any{
			"baseUrl": baseURL, "apiKey": "fake-key", "api": "openai-completions",
			"models": []any{model("fake-model", 200000), model("fake-small", 20000)}}}},
		"ui": map[string]any{"seamColor": "#ff00aa"},
	}
	data, _ := json.MarshalIndent(c, "", "  ")
	return data
}

// The real OpenClaw 2026.9.6 Gateway, offline against the fake model
// server, with the plugin `ctxtool install openclaw` wrote: one Gateway
// for every case (it takes ~20 s to start).
func TestOpenClaw(t *testing.T) {
	in := needOpenClaw(t)
	start := time.Now()
	srv := llmtest.New()
	t.Cleanup(srv.Close)
	srv.UsageFromBody = true
	srv.Reply = func(r llmtest.Request) string {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "<conversation>") {
				return ownSummaryOf(r)
			}
		}
		return fmt.Sprintf("Noted (reply %d).", len(r.Messages))
	}
	home := t.TempDir()
	r := &ocRun{t: t, in: in, srv: srv, home: home, bin: filepath.Join(home, "bin"), ws: filepath.Join(home, "ws"),
		modeFile: filepath.Join(home, "ctxtool-mode"), state: filepath.Join(home, "ctxtool-state")}
	os.MkdirAll(r.bin, 0o755)
	if err := in.WriteCLIWrapper(r.bin); err != nil {
		t.Fatal(err)
	}
	// the binary the plugin runs: ctxtool itself, or — for `agent
	// compact` — a failure chosen by the mode file
	sw := filepath.Join(r.bin, "ctxtool-switch")
	os.WriteFile(sw, []byte(fmt.Sprintf(`#!/bin/sh
if [ "$1" = agent ]; then
	case "$(cat %q 2>/dev/null)" in
	exit1) echo "ctxtool-switch: planted failure" >&2; exit 1 ;;
	hang) sleep 600 ;;
	garbage) echo "this is not JSON"; exit 0 ;;
	esac
fi
exec %q "$@"
`, r.modeFile, ctxtoolBin)), 0o755)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(home, ".openclaw", "openclaw.json")
	os.MkdirAll(filepath.Dir(cfgPath), 0o755)
	os.WriteFile(cfgPath, ocConfig(home, srv.BaseURL(), port), 0o600)
	xdg := filepath.Join(home, "xdg")
	os.MkdirAll(filepath.Join(xdg, "ctxtool"), 0o755)
	// no kept tail, so the memory flush's region (ctxtool's cut) is the
	// history of a short session, as OpenClaw's manual compaction is
	// ctxtool's own summary (the default, auto, is augment inside OpenClaw:
	// testAugment covers it)
	os.WriteFile(filepath.Join(xdg, "ctxtool", "config.yaml"), []byte("agent:\n  summarySource: ctxtool\ncompaction:\n  keepRecentTokens: 1\n"), 0o644)
	r.env = []string{"HOME=" + home, "PATH=" + filepath.Dir(in.Node) + ":" + r.bin + ":" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + xdg, "CTXTOOL_STATE_DIR=" + r.state, "CTXTOOL_OPENCLAW_TIMEOUT_MS=5000",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "CTXTOOL_LLM_MODEL=", "NO_COLOR=1", "TMPDIR=" + os.TempDir()}

	// install, twice, and --check, against OpenClaw's own config file
	t0 := time.Now()
	out, err := r.ctxtool("install", "openclaw", "--binary", sw)
	if err != nil || !strings.Contains(out, `set agents.defaults.compaction.provider = "ctxtool"`) {
		t.Fatalf("install openclaw: %v\n%s", err, out)
	}
	installTook := time.Since(t0)
	cfg1 := mustRead(t, cfgPath)
	if !bytes.Contains(cfg1, []byte(`"seamColor": "#ff00aa"`)) {
		t.Errorf("install lost the user's ui.seamColor:\n%s", cfg1)
	}
	t0 = time.Now()
	if out, err = r.ctxtool("install", "openclaw", "--binary", sw); err != nil || !strings.Contains(out, "unchanged "+cfgPath) || strings.Contains(out, "create") {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	again := time.Since(t0)
	if !bytes.Equal(mustRead(t, cfgPath), cfg1) {
		t.Error("the second install changed openclaw.json")
	}
	if out, err = r.ctxtool("install", "openclaw", "--check", "--binary", sw); err != nil || strings.Count(out, " ok ") != 4 {
		t.Errorf("install --check: %v\n%s", err, out)
	}
	writeFigure(t, fmt.Sprintf("openclaw install: first %.1fs (openclaw config patch), second %.2fs, config byte-identical", installTook.Seconds(), again.Seconds()))

	t0 = time.Now()
	gw, err := StartGateway(in, home, port, r.env, 180*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	r.gw = gw
	writeFigure(t, fmt.Sprintf("openclaw Gateway ready in %.1fs", time.Since(t0).Seconds()))

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the Gateway's [ctxtool] lines:\n%s\nits log's end:\n%s", strings.Join(r.ctxtoolLines(0), "\n"), tail(gw.Log(), 6000))
		}
	})
	t.Run("manual", r.testManual)
	t.Run("fallback", r.testFallback)
	t.Run("augment", func(t *testing.T) { r.testAugment(t, xdg) })
	t.Run("threshold", r.testThreshold)
	t.Run("uninstall", func(t *testing.T) {
		out, err := r.ctxtool("uninstall", "openclaw")
		if err != nil || !strings.Contains(out, "unset agents.defaults.compaction.provider") {
			t.Fatalf("uninstall: %v\n%s", err, out)
		}
		cfg := mustRead(t, cfgPath)
		if bytes.Contains(cfg, []byte("ctxtool")) || !bytes.Contains(cfg, []byte(`"seamColor": "#ff00aa"`)) {
			t.Errorf("after uninstall openclaw.json is:\n%s", cfg)
		}
		if _, err := os.Stat(filepath.Join(home, ".openclaw", "ctxtool-plugin")); err == nil {
			t.Error("uninstall left the plugin folder")
		}
	})
	writeFigure(t, fmt.Sprintf("openclaw suite: %.0fs", time.Since(start).Seconds()))
}

// ctxtool runs the built binary in the Gateway's environment.
func (r *ocRun) ctxtool(args ...string) (string, error) {
	cmd := exec.Command(ctxtoolBin, args...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// turn sends one message to an agent and waits for the answer.
func (r *ocRun) turn(t *testing.T, agent, msg string) {
	t.Helper()
	r.turnIn(t, agent, "agent:"+agent+":main", msg)
}

// turnIn sends one message to the session key of an agent.
func (r *ocRun) turnIn(t *testing.T, agent, key, msg string) {
	t.Helper()
	if _, err := r.gw.CLI(240*time.Second, "agent", "--agent", agent, "--session-key", key, "--message", msg, "--json"); err != nil {
		t.Fatal(err)
	}
}

// compact runs `openclaw sessions compact` and returns the summary.
func (r *ocRun) compact(t *testing.T, key string) string {
	t.Helper()
	out, err := r.gw.CLI(240*time.Second, "sessions", "compact", key, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Compacted bool `json:"compacted"`
		Result    struct {
			Summary string `json:"summary"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &res); err != nil || !res.Compacted {
		t.Fatalf("sessions compact %s: %v\n%s", key, err, out)
	}
	return res.Result.Summary
}

// store is an agent's SQLite store; compactions reads its session's
// compaction rows (through ctxtool's reader: large rows are zstd).
func (r *ocRun) store(agent string) string {
	return filepath.Join(r.home, ".openclaw", "agents", agent, "agent", "openclaw-agent.sqlite")
}

func (r *ocRun) compactions(t *testing.T, agent string) []map[string]any {
	t.Helper()
	return r.compactionsOf(t, agent, "agent:"+agent+":main")
}

func (r *ocRun) compactionsOf(t *testing.T, agent, key string) []map[string]any {
	t.Helper()
	out, err := exec.Command(ctxtoolBin, "export", r.store(agent)+"#"+key).Output()
	if err != nil {
		t.Fatalf("ctxtool export of the store: %v", err)
	}
	var found []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var e map[string]any
		if json.Unmarshal(l, &e) == nil && e["type"] == "compaction" {
			found = append(found, e)
		}
	}
	return found
}

// lastTurn is the last request of a turn (not a summary or memory-flush request).
func lastTurn(t *testing.T, srv *llmtest.Server) llmtest.Request {
	t.Helper()
	reqs := srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		own := false
		for _, m := range reqs[i].Messages {
			own = own || strings.Contains(m.Content, "<conversation>") || strings.HasPrefix(m.Content, "Pre-compaction memory flush")
		}
		if !own {
			return reqs[i]
		}
	}
	t.Fatal("the fake server received no turn request")
	return llmtest.Request{}
}

// ctxtoolLines are the Gateway's "[ctxtool] compaction failed" lines
// after byte from (the memory flush's info lines are not counted).
func (r *ocRun) ctxtoolLines(from int) []string {
	var out []string
	for _, l := range strings.Split(r.gw.Log()[from:], "\n") {
		if strings.Contains(l, "[ctxtool] compaction failed") {
			out = append(out, l)
		}
	}
	return out
}

const ocPlanted = "postgres://billing@db-7.internal:5432/ledger"

// memPlanted is the planted URL as the fact detector notes it (host:port).
const memPlanted = "db-7.internal:5432"

func (r *ocRun) testManual(t *testing.T) {
	r.turn(t, "main", "We are migrating the billing service. The database URL is "+ocPlanted+" and the deadline is 2027-03-14.")
	r.turn(t, "main", "Decision: we keep the retry budget at 7 attempts and never touch /etc/billing/secrets.yaml by hand.")
	before := len(r.srv.Requests())
	summary := r.compact(t, "agent:main:main")
	if !strings.Contains(summary, ocPlanted) || strings.Contains(summary, ownSummary) {
		t.Fatalf("the compaction's summary is not ctxtool's:\n%s", summary)
	}
	for _, q := range r.srv.Requests()[before:] {
		for _, m := range q.Messages {
			if strings.Contains(m.Content, "<conversation>") {
				t.Error("OpenClaw asked its model for a summary although ctxtool answered")
			}
		}
	}
	cs := r.compactions(t, "main")
	if len(cs) != 1 || cs[0]["fromHook"] != true || !strings.Contains(fmt.Sprint(cs[0]["summary"]), ocPlanted) {
		t.Fatalf("store compaction rows: %v", cs)
	}
	r.turn(t, "main", "Next, write the migration plan for table invoices_v2.")
	first := firstConversationMessage(lastTurn(t, r.srv))
	if !strings.Contains(first.Content, ocPlanted) || !strings.Contains(first.Content, "## Goal") {
		t.Errorf("the next request does not start with ctxtool's summary: %.400q", first.Content)
	}

	// the memory flush and the checkpoint ran before the compaction
	mem := filepath.Join(r.ws, "memory", time.Now().Format("2006-01-02")+".md")
	if got := strings.Count(string(mustRead(t, mem)), memPlanted); got != 1 {
		t.Errorf("%s holds the planted %s %d times, want 1:\n%s", mem, memPlanted, got, mustRead(t, mem))
	}
	if cps, _ := filepath.Glob(filepath.Join(r.state, "context", "checkpoints", "*", "cp_*.yaml")); len(cps) != 1 {
		t.Errorf("checkpoints after one compaction: %v", cps)
	}

	// ctxtool estimate on the store against what OpenClaw sent
	last := lastTurn(t, r.srv)
	sent := float64(len(last.Body)) / 4
	out, err := r.ctxtool("estimate", "--json", r.store("main")+"#agent:main:main")
	var est struct {
		Tokens int `json:"tokens"`
	}
	if err != nil || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &est) != nil {
		t.Fatalf("estimate: %v\n%s", err, out)
	}
	diff := math.Abs(float64(est.Tokens)-sent) / sent
	writeFigure(t, fmt.Sprintf("openclaw estimate: store %d tokens vs last request chars/4 %.0f (body %d chars): %.1f%% apart", est.Tokens, sent, len(last.Body), diff*100))
	if diff > 0.05 {
		t.Errorf("ctxtool estimate %d vs chars/4 of the last request %.0f: %.1f%% apart (want ≤ 5%%)", est.Tokens, sent, diff*100)
	}
	// reported, not asserted: the store's messages alone, without the
	// usage OpenClaw recorded (its ~11k-token system prompt and tools are
	// in no stored message)
	if out, err := r.ctxtool("estimate", "--json", "--tokenizer", "heuristic", r.store("main")+"#agent:main:main"); err == nil && strings.Contains(out, "{") {
		var h struct {
			Tokens int `json:"tokens"`
		}
		if json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &h) == nil {
			writeFigure(t, fmt.Sprintf("openclaw estimate --tokenizer heuristic: %d tokens vs %.0f: %.1f%% apart", h.Tokens, sent, math.Abs(float64(h.Tokens)-sent)/sent*100))
		}
	}
}

// ctxtool exiting 1, hanging past the timeout, or printing garbage: each
// time OpenClaw summarises by itself, nothing is lost, and exactly one
// [ctxtool] line says why.
func (r *ocRun) testFallback(t *testing.T) {
	defer os.Remove(r.modeFile)
	mem := filepath.Join(r.ws, "memory", time.Now().Format("2006-01-02")+".md")
	for i, c := range []struct{ mode, says string }{
		{"exit1", "exited with 1: ctxtool-switch: planted failure"},
		{"hang", "did not answer within 5000 ms"},
		{"garbage", "not JSON"},
	} {
		// a session of its own: OpenClaw's quality check of its own
		// summary is not what is tested here
		key := "agent:main:fb-" + c.mode
		os.WriteFile(r.modeFile, []byte(c.mode), 0o644)
		fact := fmt.Sprintf("Fact %d: the %s pager config is /srv/pager/ops-%d.yaml.", i, c.mode, 40+i)
		r.turnIn(t, "main", key, fact)
		r.turnIn(t, "main", key, "Noted? Then list the next three steps.")
		mark := len(r.gw.Log())
		t0 := time.Now()
		out, err := r.gw.CLI(240*time.Second, "sessions", "compact", key, "--json")
		took := time.Since(t0)
		if err != nil {
			t.Errorf("%s: %v", c.mode, err)
			continue
		}
		if !strings.Contains(string(out), ownSummary) {
			t.Errorf("%s: the summary is not OpenClaw's own:\n%s", c.mode, out)
		}
		cs := r.compactionsOf(t, "main", key)
		if len(cs) != 1 || !strings.Contains(fmt.Sprint(cs[0]["summary"]), ownSummary) {
			t.Errorf("%s: compaction rows %v", c.mode, cs)
		}
		lines := r.ctxtoolLines(mark)
		if len(lines) != 1 || !strings.Contains(lines[0], "compaction failed, OpenClaw summarises by itself") || !strings.Contains(lines[0], c.says) {
			t.Errorf("%s: [ctxtool] lines %q, want one saying %q", c.mode, lines, c.says)
		}
		// nothing lost: both prompts are still in the store
		exp, err := exec.Command(ctxtoolBin, "export", r.store("main")+"#"+key).Output()
		if err != nil || !bytes.Contains(exp, []byte(fact)) || !bytes.Contains(exp, []byte("list the next three steps")) {
			t.Errorf("%s: the store lost a prompt (%v)", c.mode, err)
		}
		// the memory flush ran before this compaction, once
		if !strings.Contains(string(mustRead(t, mem)), fmt.Sprintf("/srv/pager/ops-%d.yaml", 40+i)) {
			t.Errorf("%s: the memory flush did not note /srv/pager/ops-%d.yaml:\n%s", c.mode, 40+i, mustRead(t, mem))
		}
		writeFigure(t, fmt.Sprintf("openclaw fallback %s: sessions compact took %.1fs", c.mode, took.Seconds()))
	}
	// once per compaction: the main session's cycle is its compaction
	// count before the last one, and no note was written twice
	var st struct {
		Count *int `json:"memoryFlushCompactionCount"`
	}
	data, _ := os.ReadFile(filepath.Join(r.state, "memflush", "agent_main_main.json"))
	n := len(r.compactions(t, "main"))
	if json.Unmarshal(data, &st) != nil || st.Count == nil || *st.Count != n-1 {
		t.Errorf("memory flush state %s after %d compactions, want memoryFlushCompactionCount %d", data, n, n-1)
	}
	if got := strings.Count(string(mustRead(t, mem)), memPlanted); got != 1 {
		t.Errorf("%s holds the planted %s %d times, want 1:\n%s", mem, memPlanted, got, mustRead(t, mem))
	}
}

var tokRE = regexp.MustCompile(`TOK-\d`)

// A threshold compaction (agent small: a 20k window under OpenClaw's ~11k
// system prompt) is ctxtool's, and the next request starts with it.
func (r *ocRun) testThreshold(t *testing.T) {
	filler := strings.Repeat("filler ", 900)
	r.turn(t, "small", "Turn 1: the billing token is TOK-1. "+filler)
	r.turn(t, "small", "Turn 2: the billing token is TOK-2. "+filler)
	cs := r.compactions(t, "small")
	if len(cs) == 0 {
		t.Fatalf("no threshold compaction in the small agent's store; Gateway log:\n%s", tail(r.gw.Log(), 3000))
	}
	c := cs[0]
	if c["fromHook"] != true || !strings.Contains(fmt.Sprint(c["summary"]), "TOK-1") || strings.Contains(fmt.Sprint(c["summary"]), ownSummary) {
		t.Errorf("threshold compaction row is not ctxtool's: fromHook %v, summary %.300q", c["fromHook"], c["summary"])
	}
	first := firstConversationMessage(lastTurn(t, r.srv))
	if !tokRE.MatchString(first.Content) || !strings.Contains(first.Content, "## Goal") {
		t.Errorf("the request after the threshold compaction does not start with ctxtool's summary: %.300q", first.Content)
	}
}

// With agent.summarySource auto (the default), OpenClaw's own summary stands and the
// facts it dropped reach the next request (after_compaction audits it,
// before_prompt_build adds them).
func (r *ocRun) testAugment(t *testing.T, xdg string) {
	cfg := filepath.Join(xdg, "ctxtool", "config.yaml")
	orig := mustRead(t, cfg)
	defer os.WriteFile(cfg, orig, 0o644)
	// the default, auto: augment, as OpenClaw has a model
	os.WriteFile(cfg, bytes.Replace(orig, []byte("agent:\n  summarySource: ctxtool\n"), nil, 1), 0o644)
	const rule = "never deploy the ledger service on Fridays"
	const key = "agent:main:augment"
	r.turnIn(t, "main", key, "Constraint: we "+rule+".")
	// enough turns after it that OpenClaw's "recent turns preserved
	// verbatim" no longer carry it
	for _, m := range []string{"Fine. Next, list the tables of the ledger schema.", "And count the invoices of last month.",
		"Which of them are overdue?", "Draft the reminder mail."} {
		r.turnIn(t, "main", key, m)
	}
	mark := len(r.gw.Log())
	summary := r.compact(t, key)
	if !strings.Contains(summary, ownSummary) {
		t.Fatalf("in augment mode the summary is not OpenClaw's own:\n%s", summary)
	}
	if strings.Contains(summary, rule) {
		t.Fatalf("OpenClaw's own summary kept the planted rule (nothing to augment): make more turns follow it\n%s", summary)
	}
	if lines := r.ctxtoolLines(mark); len(lines) != 0 {
		t.Errorf("augment logged failures: %q", lines)
	}
	r.turnIn(t, "main", key, "What is next?")
	body := string(lastTurn(t, r.srv).Body)
	if !strings.Contains(body, "Also from the summarized history") || !strings.Contains(body, rule) {
		t.Errorf("the request after an augmented compaction lacks ctxtool's additions; log:\n%s", tail(r.gw.Log()[mark:], 3000))
	}
}
