package facts

import (
	"strings"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// What a user message holds besides the user's words. OpenClaw wraps
// channel messages in an envelope — a "System: [time] Channel[agent] DM |
// sender" line, "Conversation info (untrusted metadata):" and "Sender
// (untrusted metadata):" JSON blocks, a "[Channel sender +2m time]" prefix,
// a trailing "[message_id: …]" — and agents inject prompts as user
// messages: heartbeats, the pre-compaction memory flush, the /new greeting
// prompt, task notifications, queued announcements, environment blocks.
// None of it is what the user asked.
var (
	reEnvelopeMetadata = lazyre.New("(?s)[^\\n]*\\(untrusted[^)\\n]*\\):\\s*```[a-z]*\\n.*?```[ \\t]*\\n?")
	reEnvelopePrefix   = lazyre.New(`^\[[^\]\n]*\d{4}-\d\d-\d\d[^\]\n]*\]\s*`)
	reMessageID        = lazyre.New(`(?m)^\s*\[message_id: [^\]\n]*\]\s*$\n?`)
	reInjected         = lazyre.New(`(?i)^(?:<task-notification>|<environment_context>|<system-reminder>|<local-command-|<command-name>|<user_instructions>|\[Queued announce messages|Pre-compaction memory flush|A new session was started via /new or /reset|Caveat: The messages below were generated)|Read HEARTBEAT\.md if it exists|reply HEARTBEAT_OK|reply with NO_REPLY`)
	reGreeting         = lazyre.New(`(?i)^(?:hi|hello|hey|ahoy|yo|hiya|howdy|greetings|good (?:morning|afternoon|evening|night)|thanks|thank you|你好|您好|嗨|哈喽|早上好|晚上好|谢谢)(?:\s+(?:there|all|team|everyone|again|friend))?[\s!,.。！~～?？]*$`)
)

// CleanUserText returns the user's own words in a user message: OpenClaw's
// inbound envelope and metadata blocks removed the way OpenClaw strips them
// before showing a message. injected is true when the whole message is a
// prompt an agent or runtime wrote (heartbeat, memory flush, task
// notification, …): it says nothing the user asked.
func CleanUserText(s string) (text string, injected bool) {
	t := strings.TrimSpace(s)
	if strings.Contains(t, "(untrusted") {
		t = reEnvelopeMetadata().ReplaceAllString(t, "")
	}
	if strings.HasPrefix(t, "System:") {
		// OpenClaw's system events (the channel line, cron and exec
		// notices) are queued as "System: …" lines before the user's
		// words
		for strings.HasPrefix(t, "System:") {
			i := strings.IndexByte(t, '\n')
			if i < 0 {
				t = ""
				break
			}
			t = strings.TrimLeft(t[i+1:], " \t\r\n")
		}
		if t == "" {
			return "", true
		}
	}
	if strings.Contains(t, "[message_id: ") {
		t = reMessageID().ReplaceAllString(t, "")
	}
	for i := 0; i < 3; i++ {
		t2 := reEnvelopePrefix().ReplaceAllString(strings.TrimSpace(t), "")
		if t2 == t {
			break
		}
		t = t2
	}
	t = strings.TrimSpace(t)
	return t, reInjected().MatchString(t)
}

// reContinue asks to go on with earlier work: not a task of its own.
var reContinue = lazyre.New(`(?i)^(?:ok,? |okay,? |please |can we |could we |let's )?(?:continue|resume|keep going|go on|carry on)\b`)

// reAck is a bare acknowledgement: yes, ok, go ahead, …
var reAck = lazyre.New(`(?i)^(?:yes|yep|yeah|ok(?:ay)?|sure|no|nope|go ahead|continue|proceed|do it|sounds good|done|好的?|可以|继续|是的?|对)\b?[\s\p{P}]{0,3}(?:please|pls)?[\s\p{P}]*$`)

// minAskRunes: a shorter message ("ok", "继续") names no task.
const minAskRunes = 8

// IsAck reports whether a (cleaned) user message only acknowledges: yes,
// ok, go ahead, 好的.
func IsAck(s string) bool { return reAck().MatchString(strings.TrimSpace(s)) }

// IsAsk reports whether a (cleaned) user message names a task: the topic
// detector of summaries ("## Goal") and checkpoints ("Working on"). A
// greeting, an acknowledgement, "continue" or a message of a few
// characters does not.
func IsAsk(s string) bool {
	s = strings.TrimSpace(s)
	return !IsGreeting(s) && !IsAck(s) && !reContinue().MatchString(s) && utf8.RuneCountInString(s) >= minAskRunes
}

// IsGreeting reports whether a (cleaned) user message is only a greeting
// or thanks: not a task.
func IsGreeting(s string) bool { return reGreeting().MatchString(strings.TrimSpace(s)) }

// IsInjectedReply reports whether an assistant text is only the token an
// injected prompt asks for (HEARTBEAT_OK, NO_REPLY).
func IsInjectedReply(s string) bool {
	switch strings.TrimSpace(s) {
	case "HEARTBEAT_OK", "NO_REPLY":
		return true
	}
	return false
}
