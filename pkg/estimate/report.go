package estimate

import (
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// FileReport is one session file measured: the session's shape and its
// estimate, as estimate --json prints them (the command adds its gates and
// per-file errors around it).
type FileReport struct {
	File            string `json:"file"`
	Version         int    `json:"version"`
	Entries         int    `json:"entries"`
	ContextMessages int    `json:"contextMessages"`
	Compactions     int    `json:"compactions"`
	LeafID          string `json:"leafId"`
	Model           string `json:"model"`
	ContextWindow   int    `json:"contextWindow"`
	WindowSource    string `json:"contextWindowSource"`
	// WindowFrom is WindowSource with what matched (windowSource, as in
	// every command's JSON).
	WindowFrom     string         `json:"windowSource"`
	Tokens         int            `json:"tokens"`
	Method         string         `json:"method"`
	Utilization    float64        `json:"utilization"`
	ByRole         map[string]int `json:"byRole"`
	UsageTokens    int            `json:"usageTokens,omitempty"`
	TrailingTokens int            `json:"trailingTokens,omitempty"`
	AnchorLine     int            `json:"anchorLine,omitempty"`
	Overhead       int            `json:"overheadTokens,omitempty"`
	UsageStale     bool           `json:"usageStale"`
	// UsageRejected is the usage record pi would anchor on when ctxtool
	// does not trust it (pinned, flat, zero, a mirror reply, stale…).
	UsageRejected  *Rejection             `json:"usageRejected,omitempty"`
	MalformedLines []transcript.Malformed `json:"malformedLines"`
	Warnings       []string               `json:"warnings,omitempty"`
	Messages       []MessageTokens        `json:"messages,omitempty"`
}

// MessageTokens is one context message and its tokens (--per-message).
type MessageTokens struct {
	EntryID string `json:"entryId"`
	Line    int    `json:"line"`
	Role    string `json:"role"`
	Tokens  int    `json:"tokens"`
}

// MeasureFile reads file and measures its context with opts; perMessage
// adds each context message's tokens. Only the exact tokenizers read every
// message, so the others load the session lazily.
func MeasureFile(file string, opts Options, perMessage bool) (*FileReport, error) {
	load := transcript.LoadLazy
	if opts.Method == O200k || opts.Method == Cl100k {
		load = transcript.Load
	}
	s, err := load(file)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ctx := s.Context()
	res, err := Measure(s, ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	r := &FileReport{
		File: file, Version: s.Version, Entries: len(s.Entries), ContextMessages: len(ctx.Messages),
		Model: res.Window.Model, ContextWindow: res.Window.Tokens, WindowSource: string(res.Window.Source), WindowFrom: res.Window.SourceText(), Tokens: res.Tokens, Method: res.Method,
		Utilization: res.Utilization, ByRole: res.ByRole, UsageTokens: res.UsageTokens, TrailingTokens: res.TrailingTokens,
		AnchorLine: res.AnchorLine, Overhead: res.Overhead, UsageStale: res.Stale, UsageRejected: res.Rejected,
		MalformedLines: append([]transcript.Malformed{}, s.Malformed...), Warnings: append(res.Notes, s.Notes()...),
	}
	for _, e := range s.Entries {
		if e.Type() == "compaction" {
			r.Compactions++
		}
	}
	if leaf := s.Leaf(); leaf != nil {
		r.LeafID = leaf.ID()
	}
	if perMessage {
		for i, m := range ctx.Messages {
			r.Messages = append(r.Messages, MessageTokens{EntryID: m.Entry.ID(), Line: m.Entry.Line, Role: m.Role, Tokens: res.PerMessage[i]})
		}
	}
	return r, nil
}
