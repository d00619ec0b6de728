package agentkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With agent.summarySource auto (the default: pi has a model), pi's own
// model writes the summary (the extension runs pi's own compaction) and
// ctxtool adds what its fact audit says that summary dropped, the user's
// pins and the resume text of the checkpoint taken just before: the
// compaction entry in pi's JSONL carries the fake model's summary and the
// planted constraint, and the next request starts with both.
func TestPiAugmentsItsOwnSummary(t *testing.T) {
	r := newPiRun(t, 128000, map[string]any{"keepRecentTokens": 40})
	r.summarySource = "" // the default
	xdg, state := filepath.Join(r.home, "xdg"), filepath.Join(r.home, "state")
	os.MkdirAll(filepath.Join(xdg, "ctxtool"), 0o755)
	os.WriteFile(filepath.Join(xdg, "ctxtool", "config.yaml"),
		[]byte("compaction:\n  keepRecentTokens: 40\n"), 0o644)
	const pin = "ship the ledger migration behind the LEDGER_V2 flag"
	if out, err := r.ctxtool("pin", "--state-dir", state, "--dir", r.home, pin); err != nil {
		t.Fatalf("pin: %v\n%s", err, out)
	}
	if out, err := r.ctxtool("install", "pi"); err != nil {
		t.Fatalf("install pi: %v\n%s", err, out)
	}
	p := r.start("XDG_CONFIG_HOME="+xdg, "CTXTOOL_STATE_DIR="+state)
	for _, m := range prompts[:3] {
		if err := p.Prompt(m, turn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Command(map[string]any{"type": "compact"}, turn); err != nil {
		t.Fatal(err)
	}
	file, err := SessionFile(r.sessions)
	if err != nil {
		t.Fatal(err)
	}
	cs := compactionEntries(t, file)
	if len(cs) != 1 {
		t.Fatalf("%d compaction entries, want 1; stderr:\n%s", len(cs), p.Stderr())
	}
	summary, _ := cs[0]["summary"].(string)
	const own, planted = "Summary from the test model (pi's own compaction).", "/etc/billing/secrets.yaml"
	for _, want := range []string{own, planted, "Also from the summarized history", pin, "[Post-compaction checkpoint restore: "} {
		if !strings.Contains(summary, want) {
			t.Errorf("the compaction entry's summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Index(summary, own) > strings.Index(summary, planted) {
		t.Errorf("pi's own summary does not come first:\n%s", summary)
	}
	details, _ := cs[0]["details"].(map[string]any)
	ct, _ := details["ctxtool"].(map[string]any)
	if cs[0]["fromHook"] != true || ct["summarySource"] != "augment" {
		t.Errorf("compaction entry: fromHook %v, details %v", cs[0]["fromHook"], details)
	}
	if lines := ctxtoolLines(p.Stderr()); len(lines) != 0 {
		t.Errorf("[ctxtool] lines: %q", lines)
	}
	if err := p.Prompt(prompts[3], turn); err != nil {
		t.Fatal(err)
	}
	first := firstConversationMessage(lastTurnRequest(t, r.srv))
	if !strings.Contains(first.Content, own) || !strings.Contains(first.Content, planted) {
		t.Errorf("the next request does not start with the augmented summary: %.400q", first.Content)
	}
}
