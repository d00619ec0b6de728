package compaction

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// RegionRequest sets what SummarizeRegion asks of the summariser.
type RegionRequest struct {
	// Instructions are added to the summariser's instruction.
	Instructions string
	// MaxOutputTokens bounds the model's answer; MaxChars the extractive
	// summary (0: its default token budget, DefaultSummaryBudgetTokens).
	MaxOutputTokens int
	MaxChars        int
	// KeepSecrets sends and returns the text unredacted (recall.redact:
	// false).
	KeepSecrets bool
}

// SummarizeRegion summarises context messages without writing a compaction:
// the entries are decoded, serialised the way a history summary sees them
// (tool results cut to their first 2,000 characters) and summarised in pi's
// checkpoint layout. VS7's rolling summary uses it for the history older
// than the verbatim window.
func SummarizeRegion(ctx context.Context, s *transcript.Session, entries []*transcript.Entry, sum Summarizer, r RegionRequest) (string, error) {
	msgs, err := loadMsgs(s, entries)
	if err != nil {
		return "", err
	}
	if !r.KeepSecrets {
		redactMsgs(msgs)
	}
	if len(msgs) == 0 {
		return "", fmt.Errorf("nothing to summarise")
	}
	sum = withRedaction(sum, r.KeepSecrets)
	text, err := sum.Summarize(ctx, &Request{Kind: KindHistory, Layout: LayoutCheckpoint, Messages: msgs,
		Transcript: regionText(msgs), Instructions: r.Instructions,
		MaxOutputTokens: r.MaxOutputTokens, MaxChars: r.MaxChars})
	if err != nil {
		return "", err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "", fmt.Errorf("the %s summariser returned an empty summary", sum.Name())
	}
	return text, nil
}

// RegionTranscript is the text a summariser sees of context messages: each
// message labelled by role, tool results cut to their first 2,000
// characters, secrets redacted first unless keepSecrets, and — when
// maxChars > 0 — the middle cut out beyond maxChars
// (the start and the latest state survive). The memory flush sends it to a
// model.
func RegionTranscript(s *transcript.Session, entries []*transcript.Entry, maxChars int, keepSecrets bool) (string, error) {
	msgs, err := loadMsgs(s, entries)
	if err != nil {
		return "", err
	}
	if !keepSecrets {
		redactMsgs(msgs)
	}
	return capMiddle(regionText(msgs), maxChars), nil
}

func regionText(msgs []*Msg) string { return serialize(msgs, headPreview(2000), 4000) }
