package rolling

import "strings"

// WindowNote is the eviction note for a window an agent assembles itself
// on every request (pi's `context` event, OpenClaw's context engine): the
// evicted messages stay in the agent's session, and, when tool is not
// empty, the agent's tool of that name searches them.
func WindowNote(session string, contextWindow int, target float64, evicted []Message, tool string) string {
	if target <= 0 {
		target = DefaultTargetUtilization
	}
	note := renderNote(noteInput{File: session, ContextWindow: contextWindow, Target: target, This: rangeOf(evicted)})
	if tool == "" {
		return note
	}
	if i := strings.LastIndex(note, "\nIf you need anything"); i >= 0 {
		note = note[:i]
	}
	return note + "\nIf you need anything from them (a decision, a file, an error, what the user asked), call the `" + tool + "` tool with a few keywords instead of guessing."
}
