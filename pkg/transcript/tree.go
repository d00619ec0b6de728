package transcript

// Leaf is pi's leaf after loading: the last entry in file order.
func (s *Session) Leaf() *Entry {
	if len(s.Entries) == 0 {
		return nil
	}
	return s.Entries[len(s.Entries)-1]
}

// Branch returns the root→leaf path of the leaf.
func (s *Session) Branch() []*Entry { return s.PathTo(s.Leaf()) }

// PathTo returns the root→e path, walking parentId until a root or a parent
// that does not exist (pi stops there too). Cycles end the walk.
func (s *Session) PathTo(e *Entry) []*Entry {
	var rev []*Entry
	seen := map[*Entry]bool{}
	for cur := e; cur != nil && !seen[cur]; {
		seen[cur] = true
		rev = append(rev, cur)
		if cur.ParentID == "" {
			break
		}
		cur = s.byID[cur.ParentID]
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// ContextMessage is one message of the rebuilt context and the entry that
// produced it.
type ContextMessage struct {
	Entry *Entry
	// Role: user, assistant, toolResult, bashExecution, custom,
	// compactionSummary or branchSummary.
	Role string
}

// Tokens is pi's heuristic estimate of the message.
func (m ContextMessage) Tokens() int { return m.Entry.Tokens() }

// ModelRef is the model pi derives from the path.
type ModelRef struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// Context is the result of pi's buildSessionContext.
type Context struct {
	Messages      []ContextMessage
	Path          []*Entry
	Compaction    *Entry // the compaction in force, nil if none
	Model         *ModelRef
	ThinkingLevel string
	// KeptStart is the path index of the first kept entry before the
	// compaction (-1 when nothing before the compaction is kept).
	KeptStart int
	// CompactionIndex is the path index of Compaction (-1 if none).
	CompactionIndex int
}

// Context rebuilds the active context exactly as pi's buildSessionContext.
func (s *Session) Context() *Context { return BuildContext(s.Branch()) }

// BuildContext rebuilds the context from a root→leaf path.
func BuildContext(path []*Entry) *Context {
	c := &Context{Path: path, ThinkingLevel: "off", KeptStart: -1, CompactionIndex: -1}
	for i, e := range path {
		switch e.Type {
		case "thinking_level_change":
			c.ThinkingLevel = e.ThinkingLevel
		case "model_change":
			c.Model = &ModelRef{Provider: e.Provider, ModelID: e.Model}
		case "message":
			if e.Role == "assistant" {
				c.Model = &ModelRef{Provider: e.Provider, ModelID: e.Model}
			}
		case "compaction":
			c.Compaction = e
			c.CompactionIndex = i
		}
	}
	if c.Compaction == nil {
		for _, e := range path {
			c.appendEntry(e)
		}
		return c
	}
	// pi finds the compaction's index by id: the first path entry with that id.
	for i, e := range path {
		if e.Type == "compaction" && e.ID == c.Compaction.ID {
			c.CompactionIndex = i
			break
		}
	}
	c.Messages = append(c.Messages, ContextMessage{Entry: c.Compaction, Role: "compactionSummary"})
	for i := 0; i < c.CompactionIndex; i++ {
		if c.KeptStart < 0 && c.Compaction.FirstKeptEntryID != "" && path[i].ID == c.Compaction.FirstKeptEntryID {
			c.KeptStart = i
		}
		if c.KeptStart >= 0 {
			c.appendEntry(path[i])
		}
	}
	for _, e := range path[c.CompactionIndex+1:] {
		c.appendEntry(e)
	}
	return c
}

func (c *Context) appendEntry(e *Entry) {
	switch e.Type {
	case "message":
		c.Messages = append(c.Messages, ContextMessage{Entry: e, Role: e.Role})
	case "custom_message":
		c.Messages = append(c.Messages, ContextMessage{Entry: e, Role: "custom"})
	case "branch_summary":
		if e.Role == "branchSummary" {
			c.Messages = append(c.Messages, ContextMessage{Entry: e, Role: "branchSummary"})
		}
	}
}

// HeuristicTokens is Σ pi estimateTokens over the context.
func (c *Context) HeuristicTokens() int {
	n := 0
	for _, m := range c.Messages {
		n += m.Tokens()
	}
	return n
}

// UsageEstimate is pi's estimateContextTokens: the last trusted assistant
// usage plus the heuristic of the messages after it.
type UsageEstimate struct {
	Tokens         int
	UsageTokens    int
	TrailingTokens int
	// LastUsageIndex is the context index of the anchor, -1 without one.
	LastUsageIndex int
}

// EstimateContextTokens reproduces pi's estimateContextTokens.
func (c *Context) EstimateContextTokens() UsageEstimate {
	u := UsageEstimate{LastUsageIndex: -1}
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if e := c.Messages[i].Entry; c.Messages[i].Role == "assistant" && e.UsageTrusted() {
			u.LastUsageIndex = i
			u.UsageTokens = e.Usage.ContextTokens()
			break
		}
	}
	for i := u.LastUsageIndex + 1; i < len(c.Messages); i++ {
		u.TrailingTokens += c.Messages[i].Tokens()
	}
	u.Tokens = u.UsageTokens + u.TrailingTokens
	return u
}

// UsageStale reports pi's getContextUsage "unknown" case: the path has a
// compaction and no trusted assistant usage after it, so any usage anchor
// predates the compaction and overstates the context.
func (c *Context) UsageStale() bool {
	if c.Compaction == nil {
		return false
	}
	after := c.Path[c.CompactionIndex+1:]
	for i := len(after) - 1; i >= 0; i-- {
		if e := after[i]; e.Type == "message" && e.Role == "assistant" && e.StopReason != "aborted" && e.StopReason != "error" {
			return e.Usage.ContextTokens() <= 0
		}
	}
	return true
}
