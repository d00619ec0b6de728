package lint

import (
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// tools pairs tool calls and results over the context pi rebuilds, with
// the same definitions as the conformance oracle (pi-check.mjs):
//   - an orphaned result has no tool call with its id in an earlier
//     assistant message of the context;
//   - an orphaned call (in any assistant but the last one) has no later
//     result with its id.
//
// The last assistant's unanswered calls are pending, not orphaned: the
// tool may still run, or the session died mid-tool (pending-tool-call).
// Calls of aborted/error assistants are orphans by design — pi's provider
// layer drops those messages — so they are reported as notes.
func (c *checker) tools() {
	msgs := c.ctx.Messages
	calls := map[string]bool{}
	lastResult := map[string]int{} // tool call id → index of its last result
	lastAssistant := -1
	for i, m := range msgs {
		switch m.Role {
		case "assistant":
			lastAssistant = i
			for _, id := range m.Entry.ToolCallIDs {
				calls[id] = true
			}
		case "toolResult":
			id := m.Entry.ToolCallID
			lastResult[id] = i
			if !calls[id] {
				f := c.report(RuleOrphanToolResult, m.Entry.Line, "result:"+id+"@"+m.Entry.ID(),
					"tool result for %q (%s) has no tool call in the context before it: the provider rejects every request with it (Anthropic: \"unexpected tool_use_id\")",
					id, toolName(m.Entry))
				setEntry(f, m.Entry)
			}
		}
	}
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		e := m.Entry
		dropped := e.StopReason() == "aborted" || e.StopReason() == "error"
		for _, id := range e.ToolCallIDs {
			if r, ok := lastResult[id]; ok && r > i {
				continue
			}
			switch {
			case i != lastAssistant && dropped:
				f := c.reportAt(RuleOrphanToolCall, Note, e.Line, "call:"+id,
					"tool call %q has no result; harmless: the assistant stopped with %q, and pi does not send it", id, e.StopReason())
				setEntry(f, e)
			case i != lastAssistant:
				f := c.report(RuleOrphanToolCall, e.Line, "call:"+id,
					"tool call %q has no result before the conversation moves on (pi sends a synthetic \"No result provided\" error in its place)", id)
				setEntry(f, e)
			case !dropped && onlyResultsAfter(msgs, i):
				f := c.report(RulePendingToolCall, e.Line, "pending:"+id,
					"tool call %q of the last assistant message has no result: the tool is still running, or the session stopped mid-tool", id)
				setEntry(f, e)
			case !dropped:
				f := c.report(RulePendingToolCall, e.Line, "pending:"+id,
					"tool call %q of the last assistant message has no result, and the conversation moved on after it (pi sends a synthetic \"No result provided\" error in its place)", id)
				setEntry(f, e)
				if f != nil {
					f.Fixable = false // a result appended now would land after the user's message
				}
			}
		}
	}
}

// pendingCalls returns the last assistant message of the context and its
// tool call ids that have no result after it (what --fix answers).
func pendingCalls(ctx *transcript.Context) (*transcript.Entry, []string) {
	msgs := ctx.Messages
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			last = i
			break
		}
	}
	if last < 0 {
		return nil, nil
	}
	a := msgs[last].Entry
	if a.StopReason() == "aborted" || a.StopReason() == "error" || !onlyResultsAfter(msgs, last) {
		return nil, nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[last+1:] {
		if m.Role == "toolResult" {
			answered[m.Entry.ToolCallID] = true
		}
	}
	var ids []string
	for _, id := range a.ToolCallIDs {
		if !answered[id] {
			ids = append(ids, id)
		}
	}
	return a, ids
}

func toolName(e *transcript.Entry) string {
	if e.ToolName() == "" {
		return "unnamed tool"
	}
	return e.ToolName()
}

// onlyResultsAfter reports whether every context message after index i is
// a tool result: results appended now still answer the assistant at i.
func onlyResultsAfter(msgs []transcript.ContextMessage, i int) bool {
	for _, m := range msgs[i+1:] {
		if m.Role != "toolResult" {
			return false
		}
	}
	return true
}
