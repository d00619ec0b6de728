package agentlink

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The agent's own summary, audited: the facts of the summarised messages
// it dropped are added, those it kept are not; a summary that keeps
// everything gets no additions.
func TestAugment(t *testing.T) {
	user := func(s string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": s}}, "timestamp": 1})
		return b
	}
	req := &Request{Version: 1, Agent: "openclaw", Preparation: Preparation{MessagesToSummarize: []json.RawMessage{
		user("The database URL is postgres://billing@db-7.internal:5432/ledger and ticket JIRA-4242 tracks it."),
		user("Never touch /etc/billing/secrets.yaml by hand."),
	}}}
	res, err := Augment(context.Background(), req, "## Goal\n- migrate the billing DB (JIRA-4242)", Options{}, AugmentContext{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Additions, "db-7.internal:5432") || !strings.Contains(res.Additions, "/etc/billing/secrets.yaml") {
		t.Errorf("additions miss dropped facts:\n%s", res.Additions)
	}
	if strings.Contains(res.Additions, "JIRA-4242") {
		t.Errorf("additions repeat a fact the summary kept:\n%s", res.Additions)
	}
	full := "Goal: migrate postgres://billing@db-7.internal:5432/ledger (JIRA-4242). Never touch /etc/billing/secrets.yaml by hand."
	if res, err = Augment(context.Background(), req, full, Options{}, AugmentContext{}); err != nil || res.Additions != "" {
		t.Errorf("a complete summary got additions %q (%v)", res.Additions, err)
	}
	if _, err := Augment(context.Background(), req, " ", Options{}, AugmentContext{}); err == nil {
		t.Error("an empty agent summary was accepted")
	}
	// pins and the checkpoint's resume text come after the dropped facts,
	// also when the summary dropped nothing
	more := AugmentContext{Pins: []string{"deploy only from main"}, Resume: "## Resume\nNext: run the invoices_v2 migration."}
	if res, err = Augment(context.Background(), req, full, Options{}, more); err != nil ||
		!strings.Contains(res.Additions, "- deploy only from main") || !strings.HasSuffix(res.Additions, "Next: run the invoices_v2 migration.") {
		t.Errorf("additions with pins and a resume text: %q (%v)", res.Additions, err)
	}
}
