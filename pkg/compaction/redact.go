package compaction

import (
	"context"
	"slices"

	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Summaries leave the session twice: the summariser's request goes to a
// model, and the summary is written into the session, where every later
// compaction, checkpoint and index reads it. Both are redacted with the
// one detector (pkg/secrets) unless Settings.KeepSecrets opts out.

// redacting hands its Summarizer a request with every secret replaced by
// its marker and redacts what comes back (a model may quote what it saw
// elsewhere; the extractive summary reads the messages themselves). The
// wrapped summariser's Name and Capabilities pass through.
type redacting struct{ Summarizer }

func (r redacting) Summarize(ctx context.Context, req *Request) (string, error) {
	q := *req
	q.Transcript = secrets.Redact(q.Transcript)
	q.PreviousSummary = secrets.Redact(q.PreviousSummary)
	q.Instructions = secrets.Redact(q.Instructions)
	q.Partials = make([]string, len(req.Partials))
	for i, p := range req.Partials {
		q.Partials[i] = secrets.Redact(p)
	}
	text, err := r.Summarizer.Summarize(ctx, &q)
	return secrets.Redact(text), err
}

// withRedaction wraps sum unless secrets are kept. An external
// summariser (exec) sees the session itself; its summary is redacted
// when it comes back (region.summarize).
func withRedaction(sum Summarizer, keep bool) Summarizer {
	if keep || sum == nil || sum.Capabilities().Whole != nil {
		return sum
	}
	if _, ok := sum.(redacting); ok {
		return sum
	}
	return redacting{sum}
}

// redactMsgs replaces each message holding a secret by a redacted copy,
// before any preview or cap can cut a secret in two (half a key is no
// longer recognised, and still half given away). The session's own
// messages are left as they are.
func redactMsgs(msgs []*Msg) {
	for _, m := range msgs {
		m.M = redactMessage(m.M)
	}
}

func redactMessage(m *transcript.Message) *transcript.Message {
	c := *m
	changed := false
	red := func(s *string) {
		if r := secrets.Redact(*s); r != *s {
			*s, changed = r, true
		}
	}
	red(&c.Command)
	red(&c.Output)
	red(&c.Summary)
	red(&c.ErrorMsg)
	var blocks []transcript.Block
	for i, b := range m.Content {
		nb := b
		text, thinking, args := secrets.Redact(b.Text), secrets.Redact(b.Thinking), secrets.RedactJSON(b.Arguments)
		if text == b.Text && thinking == b.Thinking && len(args) == len(b.Arguments) && (len(args) == 0 || &args[0] == &b.Arguments[0]) {
			continue
		}
		nb.Text, nb.Thinking, nb.Arguments = text, thinking, args
		if blocks == nil {
			blocks = slices.Clone(m.Content)
		}
		blocks[i] = nb
	}
	if blocks != nil {
		c.Content, changed = blocks, true
	}
	if !changed {
		return m
	}
	return &c
}
