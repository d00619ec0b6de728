package sessiongen

import "time"

// Meta is the per-entry envelope. Every field is optional.
type Meta struct {
	// ID of the entry; "" = a fresh random 8-hex id unique in the file.
	// v1 files do not store ids; the builder still assigns one so that
	// callers can refer to entries (e.g. Compaction.FirstKeptEntryID).
	ID string
	// ParentID overrides the parent ("" = the current leaf, which is what
	// pi does). It is written verbatim, so a missing id makes a broken
	// parent on purpose. Ignored in v1 files. Use Builder.Branch to move
	// the leaf instead when you want a real branch.
	ParentID string
	// Time of the entry; zero = the builder clock plus a small step.
	Time time.Time
}

// meta is promoted to every entry type, as each embeds its Meta.
func (m *Meta) meta() *Meta { return m }

// Entry is anything the Builder can append: User, Assistant, ToolResult,
// BashExecution, CustomRole, CustomMessage, Custom, ModelChange,
// ThinkingLevelChange, Compaction, BranchSummary, Label, SessionInfo.
type Entry interface {
	meta() *Meta
	entryType() string
}

// Block is one content block. Build them with Text, Thinking, ImageBlock,
// ToolCall, or fill the fields directly.
type Block struct {
	Type string // "text", "thinking", "image", "toolCall"

	Text      string // text block text, thinking block thinking
	Signature string // textSignature / thinkingSignature / thoughtSignature (toolCall)
	Redacted  bool   // thinking: redacted
	// Kind tells the ground-truth tokenizer what the text is (prose/code).
	Kind Kind

	Data     string // image: base64
	MimeType string // image
	// Width and Height of the image for ground-truth tokens; 0 = read from
	// the PNG header (PNGSize).
	Width, Height int

	ID          string // toolCall id
	Name        string // toolCall name
	Args        Obj    // toolCall arguments
	PartialJSON string // toolCall partialJson (streaming leftover)
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// TextKind returns a text block with an explicit ground-truth kind.
func TextKind(s string, k Kind) Block { return Block{Type: "text", Text: s, Kind: k} }

// Thinking returns a thinking block; sig may be "".
func Thinking(s, sig string) Block { return Block{Type: "thinking", Text: s, Signature: sig} }

// ImageBlock returns a PNG image block.
func ImageBlock(p PNG) Block {
	return Block{Type: "image", Data: p.Base64, MimeType: "image/png", Width: p.Width, Height: p.Height}
}

// ToolCall returns a toolCall block.
func ToolCall(id, name string, args Obj) Block {
	if args == nil {
		args = Obj{}
	}
	return Block{Type: "toolCall", ID: id, Name: name, Args: args}
}

// User is a role-user message. Blocks != nil writes the array form
// (what pi writes); otherwise Text is written as a plain string content.
type User struct {
	Meta
	Text      string
	Blocks    []Block
	Timestamp int64 // message epoch ms; 0 = entry time - 10 ms
}

// Usage is an assistant usage record. Cost nil = computed from the token
// counts and the model's list prices.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int
	TotalTokens                          int
	// OmitTotal drops totalTokens, like older pi files.
	OmitTotal bool
	Cost      *Cost
}

// Cost is the usage cost in US dollars.
type Cost struct {
	Input, Output, CacheRead, CacheWrite, Total float64
}

// Assistant is a role-assistant message.
type Assistant struct {
	Meta
	Content []Block
	// API, Provider, Model default to the builder's current model
	// (Config or the last ModelChange).
	API, Provider, Model string
	// NoModel writes no api, provider and model (old v1 files, whose model
	// is only in the header).
	NoModel bool
	// Usage nil = ground-truth usage (see package doc); error assistants
	// get all-zero usage.
	Usage *Usage
	// StopReason "" = "toolUse" when Content has a toolCall, else "stop".
	StopReason   string
	Timestamp    int64 // 0 = entry time - generation time
	ErrorMessage string
}

// ToolResult is a role-toolResult message.
type ToolResult struct {
	Meta
	ToolCallID string
	ToolName   string
	Content    []Block
	Details    any // written when non-nil (Obj, RawJSON, …)
	IsError    bool
	Timestamp  int64 // 0 = entry time - 5 ms
}

// BashExecution is a role-bashExecution message (a user "!cmd").
type BashExecution struct {
	Meta
	Command, Output    string
	ExitCode           *int // nil = absent (unknown)
	Cancelled          bool
	Truncated          bool
	FullOutputPath     string
	ExcludeFromContext bool
	Timestamp          int64
}

// CustomRole is a message entry with role "custom" (role "hookMessage"
// when Hook is set, as v2 files have).
type CustomRole struct {
	Meta
	CustomBody
	Timestamp int64
	Hook      bool
}

// CustomMessage is a custom_message entry (extension-injected context).
type CustomMessage struct {
	Meta
	CustomBody
}

// CustomBody is what pi's two custom carriers hold alike: a role-custom
// message and a custom_message entry.
type CustomBody struct {
	CustomType string
	Text       string  // used when Blocks == nil
	Blocks     []Block // text/image
	Display    bool
	Details    any
}

// Custom is a custom entry (extension state; never in the context).
type Custom struct {
	Meta
	CustomType string
	Data       any // omitted when nil
}

// ModelChange is a model_change entry. It also becomes the builder's
// current model for later Assistant entries.
type ModelChange struct {
	Meta
	Provider, ModelID string
}

// ThinkingLevelChange is a thinking_level_change entry.
type ThinkingLevelChange struct {
	Meta
	ThinkingLevel string
}

// Compaction is a compaction entry.
type Compaction struct {
	Meta
	Summary string
	// FirstKeptEntryID names the first kept entry. In v1 files the builder
	// converts it to firstKeptEntryIndex (pi's loader index: header = 0,
	// malformed lines not counted).
	FirstKeptEntryID string
	// FirstKeptEntryIndex is written as is in v1 files when
	// FirstKeptEntryID is "" (use it to point at the header or past the end).
	FirstKeptEntryIndex int
	TokensBefore        int // 0 = ground-truth context size at this point
	Details             any
	// FromHook nil = pi 0.58 behaviour: false in v2/v3, absent in v1.
	FromHook *bool
}

// BranchSummary is a branch_summary entry. Append it right after
// Builder.Branch(point): its parent is the current leaf (the branch point).
type BranchSummary struct {
	Meta
	// FromID "" = the current leaf's id, or "root" when the leaf is unset.
	FromID   string
	Summary  string
	Details  any
	FromHook *bool // nil = false
}

// Label is a label entry.
type Label struct {
	Meta
	TargetID string
	Label    string // "" = omitted (clears the label)
}

// SessionInfo is a session_info entry.
type SessionInfo struct {
	Meta
	Name string // "" = omitted
}

func (*User) entryType() string                { return "message" }
func (*Assistant) entryType() string           { return "message" }
func (*ToolResult) entryType() string          { return "message" }
func (*BashExecution) entryType() string       { return "message" }
func (*CustomRole) entryType() string          { return "message" }
func (*CustomMessage) entryType() string       { return "custom_message" }
func (*Custom) entryType() string              { return "custom" }
func (*ModelChange) entryType() string         { return "model_change" }
func (*ThinkingLevelChange) entryType() string { return "thinking_level_change" }
func (*Compaction) entryType() string          { return "compaction" }
func (*BranchSummary) entryType() string       { return "branch_summary" }
func (*Label) entryType() string               { return "label" }
func (*SessionInfo) entryType() string         { return "session_info" }

// Int returns a pointer to v (for ExitCode).
func Int(v int) *int { return &v }
