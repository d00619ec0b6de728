// Package checkpoint writes and reads structured YAML checkpoints of a
// session's working state (schema "openclaw/checkpoint" v1), builds them
// mechanically from a transcript (no model call), keeps the per-session
// store on disk, accumulates incremental state between checkpoints and
// renders the lean resume text injected after a compaction: the rules are
// in docs/design/checkpoints.md.
//
// It owns the checkpoint schema, the builder, the store under
// <state>/context (checkpoints, the incremental state and the capture mark)
// and the resume text, and restore (Store.Restore: which checkpoint, its
// text, appending it; ResolveTarget: a session FILE or a key). It must not call a model, must not change a
// checkpoint file once written, and writes to a session file only through
// AppendResume: one custom_message under the session lock.
package checkpoint

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Schema and SchemaVersion identify the document format.
const (
	Schema        = "openclaw/checkpoint"
	SchemaVersion = 1
)

// Triggers accepted for meta.trigger.
const (
	TriggerAuto80     = "auto-80pct"
	TriggerCompaction = "compaction"
	TriggerSessionEnd = "session-end"
	TriggerManual     = "manual"
)

// Statuses of working.status.
const (
	StatusInProgress = "in_progress"
	StatusIdle       = "idle"
	StatusWaiting    = "waiting_for_user"
)

// Caps (docs/design/checkpoints.md): the checkpoint never grows without bound.
const (
	MaxDecisions    = 50
	MaxExchanges    = 8
	MaxTools        = 100
	MaxFiles        = 100
	MaxOpenItems    = 20
	MaxLearnings    = 20
	GistChars       = 120
	TopicChars      = 100
	SummaryEndChars = 100
)

// Checkpoint is one checkpoint document. Field order is the order written.
type Checkpoint struct {
	Schema        string     `yaml:"schema" json:"schema"`
	SchemaVersion int        `yaml:"schema_version" json:"schema_version"`
	Meta          Meta       `yaml:"meta" json:"meta"`
	Working       Working    `yaml:"working" json:"working"`
	Decisions     []Decision `yaml:"decisions" json:"decisions"`
	Resources     Resources  `yaml:"resources" json:"resources"`
	Thread        Thread     `yaml:"thread" json:"thread"`
	OpenItems     []string   `yaml:"open_items" json:"open_items"`
	Learnings     []string   `yaml:"learnings" json:"learnings"`
}

// Meta identifies the checkpoint and the context size it was taken at.
type Meta struct {
	CheckpointID string `yaml:"checkpoint_id" json:"checkpoint_id"`
	SessionKey   string `yaml:"session_key" json:"session_key"`
	SessionFile  string `yaml:"session_file" json:"session_file"`
	// SessionID is the session header's id: the identity restore --append
	// checks, so one session's state never lands in another.
	SessionID          string     `yaml:"session_id,omitempty" json:"session_id,omitempty"`
	CreatedAt          string     `yaml:"created_at" json:"created_at"`
	Trigger            string     `yaml:"trigger" json:"trigger"`
	CompactionCount    int        `yaml:"compaction_count" json:"compaction_count"`
	TokenUsage         TokenUsage `yaml:"token_usage" json:"token_usage"`
	PreviousCheckpoint string     `yaml:"previous_checkpoint" json:"previous_checkpoint"`
	Channel            string     `yaml:"channel" json:"channel"`
	AgentID            string     `yaml:"agent_id" json:"agent_id"`
}

// TokenUsage is the context size when the checkpoint was taken.
type TokenUsage struct {
	InputTokens   int     `yaml:"input_tokens" json:"input_tokens"`
	ContextWindow int     `yaml:"context_window" json:"context_window"`
	Utilization   float64 `yaml:"utilization" json:"utilization"`
}

// Working is what the agent was doing.
type Working struct {
	Topic        string       `yaml:"topic" json:"topic"`
	Status       string       `yaml:"status" json:"status"`
	Interrupted  bool         `yaml:"interrupted" json:"interrupted"`
	LastToolCall *ToolCallRef `yaml:"last_tool_call" json:"last_tool_call"`
	NextAction   string       `yaml:"next_action" json:"next_action"`
}

// ToolCallRef names the tool call a turn was interrupted in.
type ToolCallRef struct {
	Name          string `yaml:"name" json:"name"`
	ParamsSummary string `yaml:"params_summary" json:"params_summary"`
}

// Decision is a decision point found structurally (or recorded in state).
type Decision struct {
	ID   string `yaml:"id" json:"id"`
	What string `yaml:"what" json:"what"`
	When string `yaml:"when" json:"when"`
}

// Resources are the files and tools the session touched.
type Resources struct {
	FilesRead     []string `yaml:"files_read" json:"files_read"`
	FilesModified []string `yaml:"files_modified" json:"files_modified"`
	ToolsUsed     []string `yaml:"tools_used" json:"tools_used"`
}

// Thread is the conversation in brief.
type Thread struct {
	Summary      string     `yaml:"summary" json:"summary"`
	KeyExchanges []Exchange `yaml:"key_exchanges" json:"key_exchanges"`
}

// Exchange is one subsampled turn; Role is "user" or "agent".
type Exchange struct {
	Role string `yaml:"role" json:"role"`
	Gist string `yaml:"gist" json:"gist"`
}

// Marshal writes cp as YAML. The node tree is built by hand so that the
// safety rules of docs/design/checkpoints.md hold whatever the content: free text is a literal
// block scalar (yaml falls back to a double-quoted scalar with escapes when
// a block cannot represent it), identifiers and tool names are double-quoted,
// and no key ever comes from content.
func Marshal(cp *Checkpoint) ([]byte, error) {
	m := mapping()
	add(m, "schema", quoted(cp.Schema))
	add(m, "schema_version", plainInt(cp.SchemaVersion))
	add(m, "meta", metaNode(&cp.Meta))
	add(m, "working", workingNode(&cp.Working))
	add(m, "decisions", decisionsNode(cp.Decisions))
	add(m, "resources", resourcesNode(&cp.Resources))
	add(m, "thread", threadNode(&cp.Thread))
	add(m, "open_items", quotedList(cp.OpenItems))
	add(m, "learnings", quotedList(cp.Learnings))

	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m},
		HeadComment: "OpenClaw Checkpoint Schema v1 (written by ctxtool)"}
	var sb strings.Builder
	enc := yaml.NewEncoder(&sb)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode checkpoint %s: %w", cp.Meta.CheckpointID, err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(sb.String()), nil
}

func metaNode(meta *Meta) *yaml.Node {
	n := mapping()
	add(n, "checkpoint_id", quoted(meta.CheckpointID))
	add(n, "session_key", quoted(meta.SessionKey))
	add(n, "session_file", quoted(meta.SessionFile))
	if meta.SessionID != "" {
		add(n, "session_id", quoted(meta.SessionID))
	}
	add(n, "created_at", quoted(meta.CreatedAt))
	add(n, "trigger", quoted(meta.Trigger))
	add(n, "compaction_count", plainInt(meta.CompactionCount))
	tu := mapping()
	add(tu, "input_tokens", plainInt(meta.TokenUsage.InputTokens))
	add(tu, "context_window", plainInt(meta.TokenUsage.ContextWindow))
	add(tu, "utilization", plainFloat(meta.TokenUsage.Utilization))
	add(n, "token_usage", tu)
	add(n, "previous_checkpoint", quotedOrNull(meta.PreviousCheckpoint))
	add(n, "channel", quotedOrNull(meta.Channel))
	add(n, "agent_id", quoted(meta.AgentID))
	return n
}

func workingNode(w *Working) *yaml.Node {
	n := mapping()
	add(n, "topic", blockScalar(w.Topic))
	add(n, "status", quoted(w.Status))
	add(n, "interrupted", plainBool(w.Interrupted))
	if tc := w.LastToolCall; tc != nil {
		t := mapping()
		add(t, "name", quoted(tc.Name))
		add(t, "params_summary", blockScalar(tc.ParamsSummary))
		add(n, "last_tool_call", t)
	} else {
		add(n, "last_tool_call", null())
	}
	add(n, "next_action", blockScalar(w.NextAction))
	return n
}

func decisionsNode(decisions []Decision) *yaml.Node {
	ds := sequence()
	for _, d := range decisions {
		dm := mapping()
		add(dm, "id", quoted(d.ID))
		add(dm, "what", blockScalar(d.What))
		add(dm, "when", quoted(d.When))
		ds.Content = append(ds.Content, dm)
	}
	return ds
}

func resourcesNode(r *Resources) *yaml.Node {
	n := mapping()
	add(n, "files_read", quotedList(r.FilesRead))
	add(n, "files_modified", quotedList(r.FilesModified))
	add(n, "tools_used", quotedList(r.ToolsUsed))
	return n
}

func threadNode(th *Thread) *yaml.Node {
	n := mapping()
	add(n, "summary", blockScalar(th.Summary))
	ex := sequence()
	for _, e := range th.KeyExchanges {
		em := mapping()
		add(em, "role", quoted(e.Role))
		add(em, "gist", blockScalar(e.Gist))
		ex.Content = append(ex.Content, em)
	}
	add(n, "key_exchanges", ex)
	return n
}

// Unmarshal parses and validates a checkpoint document.
func Unmarshal(data []byte) (*Checkpoint, error) {
	var cp Checkpoint
	if err := yaml.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if cp.Schema != Schema {
		return nil, fmt.Errorf("schema is %q, want %q", cp.Schema, Schema)
	}
	if cp.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("schema_version %d is not supported (want %d)", cp.SchemaVersion, SchemaVersion)
	}
	cp.trimBlocks()
	if !ValidID(cp.Meta.CheckpointID) {
		return nil, fmt.Errorf("meta.checkpoint_id %q is not of the form cp_NNN", cp.Meta.CheckpointID)
	}
	return &cp, nil
}

// trimBlocks drops the newline a literal block scalar ends with, so that a
// parsed checkpoint holds the text it was built from.
func (cp *Checkpoint) trimBlocks() {
	t := func(s *string) { *s = strings.TrimRight(*s, "\n") }
	t(&cp.Working.Topic)
	t(&cp.Working.NextAction)
	if cp.Working.LastToolCall != nil {
		t(&cp.Working.LastToolCall.ParamsSummary)
	}
	for i := range cp.Decisions {
		t(&cp.Decisions[i].What)
	}
	t(&cp.Thread.Summary)
	for i := range cp.Thread.KeyExchanges {
		t(&cp.Thread.KeyExchanges[i].Gist)
	}
}

func mapping() *yaml.Node  { return &yaml.Node{Kind: yaml.MappingNode} }
func sequence() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode} }

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func quoted(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: Clean(s)}
}

func quotedOrNull(s string) *yaml.Node {
	if s == "" {
		return null()
	}
	return quoted(s)
}

// blockScalar is a literal block scalar ending in one newline, as in the schema's examples.
func blockScalar(s string) *yaml.Node {
	s = strings.TrimRight(Clean(s), " \t\n")
	if s == "" {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: ""}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: s + "\n"}
}

func null() *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"} }

func plainInt(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(n)}
}

func plainFloat(f float64) *yaml.Node {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	v := strconv.FormatFloat(math.Round(f*10000)/10000, 'f', -1, 64)
	if !strings.Contains(v, ".") {
		v += ".0"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: v}
}

func plainBool(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func quotedList(items []string) *yaml.Node {
	s := sequence()
	if len(items) == 0 {
		s.Style = yaml.FlowStyle
	}
	for _, it := range items {
		s.Content = append(s.Content, quoted(it))
	}
	return s
}

// Clean makes content safe to store: valid UTF-8, no control characters
// other than newline and tab (NUL, escape sequences and the like are
// replaced by a space), no byte-order marks.
func Clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	clean := true
	for _, r := range s {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\uFEFF' || r == '\u2028' || r == '\u2029') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' {
			return -1
		}
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\uFEFF' || r == '\u2028' || r == '\u2029') {
			return ' '
		}
		return r
	}, s)
}
