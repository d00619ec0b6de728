package rolling

import (
	"fmt"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// conv builds context messages from a compact spec: "u" user, "a" assistant,
// "a:x,y" assistant calling x and y, "r:x" result of x, "s" compaction summary.
func conv(tokens int, spec ...string) []Message {
	var out []Message
	for i, s := range spec {
		var role string
		var calls []string
		var result string
		switch {
		case s == "u":
			role = "user"
		case s == "s":
			role = "compactionSummary"
		case s == "a":
			role = "assistant"
		case len(s) > 2 && s[:2] == "a:":
			role = "assistant"
			calls = splitComma(s[2:])
		case len(s) > 2 && s[:2] == "r:":
			role = "toolResult"
			result = s[2:]
		default:
			panic(s)
		}
		line := fmt.Sprintf(`{"type":"message","id":"e%03d","message":{"role":%q,"timestamp":%d}}`, i, role, 1772442000000+i*1000)
		e, _, ok := transcript.ParseEntry([]byte(line))
		if !ok {
			panic(line)
		}
		e.Line, e.ToolCallIDs, e.ToolCallID = i+2, calls, result
		out = append(out, Message{Entry: e, Tokens: tokens, Role: role})
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func TestEvictTokenMath(t *testing.T) {
	msgs := conv(100, "u", "a", "u", "a", "u", "a", "u", "a", "u", "a") // 1000 tokens
	ev := Evict(EvictInput{Messages: msgs, ContextWindow: 1000, TargetUtilization: 0.5, MinKeepMessages: 2,
		NoteTokens: func(int) int { return 30 }})
	// Keep ≤ 500 with a 30-token note: 4 messages (400) + 30 = 430; 5 would be 530.
	if ev.FirstKept != 6 || ev.EvictedCount != 6 || ev.EvictedTokens != 600 || ev.KeptTokens != 430 || !ev.TargetMet {
		t.Fatalf("got firstKept %d evicted %d/%d kept %d met %v", ev.FirstKept, ev.EvictedCount, ev.EvictedTokens, ev.KeptTokens, ev.TargetMet)
	}
	if got := formatTime(ev.FirstEvicted); got != "2026-03-02T09:00:00.000Z" {
		t.Errorf("first evicted %s", got)
	}
	if got := formatTime(ev.LastEvicted); got != "2026-03-02T09:00:05.000Z" {
		t.Errorf("last evicted %s", got)
	}
	if len(ev.Kept)+len(ev.Evicted) != len(msgs) {
		t.Error("kept + evicted must partition the context")
	}
}

func TestEvictOverheadCounts(t *testing.T) {
	// TokensBefore includes 300 tokens of system prompt that never leave.
	msgs := conv(100, "u", "a", "u", "a", "u", "a", "u", "a", "u", "a")
	ev := Evict(EvictInput{Messages: msgs, TokensBefore: 1300, ContextWindow: 1000, TargetUtilization: 0.8})
	// 300 + kept ≤ 800 → keep 5.
	if ev.FirstKept != 5 || ev.KeptTokens != 800 {
		t.Fatalf("firstKept %d kept %d", ev.FirstKept, ev.KeptTokens)
	}
}

func TestEvictMinKeep(t *testing.T) {
	msgs := conv(100, "u", "a", "u", "a", "u", "a", "u", "a", "u", "a")
	ev := Evict(EvictInput{Messages: msgs, ContextWindow: 1000, TargetUtilization: 0.1, MinKeepMessages: 4})
	if ev.FirstKept != 6 || len(ev.Kept) != 4 || ev.TargetMet || ev.Reason == "" {
		t.Fatalf("minKeep: firstKept %d kept %d met %v reason %q", ev.FirstKept, len(ev.Kept), ev.TargetMet, ev.Reason)
	}
	ev = Evict(EvictInput{Messages: msgs, ContextWindow: 100, TargetUtilization: 0.5, MinKeepMessages: 10})
	if ev.EvictedCount != 0 || ev.Reason == "" {
		t.Fatalf("everything protected, still evicted %d", ev.EvictedCount)
	}
}

func TestEvictNeverOrphans(t *testing.T) {
	// A parallel call whose results span several messages, and a late
	// result after a user interjection (steering).
	msgs := conv(100, "u", "a:x,y", "r:x", "r:y", "a:z", "u", "r:z", "a", "u", "a", "u", "a")
	for target := 0.05; target < 1.2; target += 0.05 {
		for minKeep := 0; minKeep < 6; minKeep++ {
			ev := Evict(EvictInput{Messages: msgs, ContextWindow: 1200, TargetUtilization: target, MinKeepMessages: minKeep})
			if ev.FirstKept == 0 {
				continue
			}
			if ev.Kept[0].Role == "toolResult" {
				t.Fatalf("target %.2f: cut at a toolResult", target)
			}
			evictedCalls := map[string]bool{}
			for _, m := range ev.Evicted {
				for _, id := range m.Entry.ToolCallIDs {
					evictedCalls[id] = true
				}
			}
			for _, m := range ev.Kept {
				if m.Role == "toolResult" && evictedCalls[m.Entry.ToolCallID] {
					t.Fatalf("target %.2f minKeep %d: kept result %s of an evicted call (cut %d)", target, minKeep, m.Entry.ToolCallID, ev.FirstKept)
				}
			}
			if len(ev.Kept) < minKeep {
				t.Fatalf("kept %d < minKeep %d", len(ev.Kept), minKeep)
			}
		}
	}
	// Cuts 2, 3 (x, y pending) and 5, 6 (z pending) are blocked.
	ev := Evict(EvictInput{Messages: msgs, ContextWindow: 1200, TargetUtilization: 0.92})
	if ev.FirstKept != 1 {
		t.Fatalf("cut %d, want 1 (evicting the first user message is enough)", ev.FirstKept)
	}
	ev = Evict(EvictInput{Messages: msgs, ContextWindow: 1200, TargetUtilization: 0.7})
	if ev.FirstKept != 4 {
		t.Fatalf("cut %d, want 4", ev.FirstKept)
	}
	ev = Evict(EvictInput{Messages: msgs, ContextWindow: 1200, TargetUtilization: 0.6})
	if ev.FirstKept != 7 {
		t.Fatalf("cut %d, want 7", ev.FirstKept)
	}
}

func TestEvictUnderTargetAndSummaryOnly(t *testing.T) {
	msgs := conv(100, "u", "a", "u", "a")
	if ev := Evict(EvictInput{Messages: msgs, ContextWindow: 1000}); ev.EvictedCount != 0 || ev.FirstKept != 0 {
		t.Fatalf("under target, evicted %d", ev.EvictedCount)
	}
	// A previous note is evicted with the first message; evicting the note
	// alone is never enough to count as a roll.
	msgs = conv(100, "s", "u", "a", "u", "a")
	ev := Evict(EvictInput{Messages: msgs, ContextWindow: 500, TargetUtilization: 0.7, MinKeepMessages: 2})
	if ev.FirstKept != 2 || ev.Replaced == nil || ev.EvictedCount != 1 || ev.EvictedTokens != 100 || ev.ReplacedTokens != 100 || ev.KeptTokens != 300 {
		t.Fatalf("got cut %d replaced %v evicted %d/%d kept %d", ev.FirstKept, ev.Replaced != nil, ev.EvictedCount, ev.EvictedTokens, ev.KeptTokens)
	}
	ev = Evict(EvictInput{Messages: msgs, ContextWindow: 500, TargetUtilization: 0.7, MinKeepMessages: 4})
	if ev.EvictedCount != 0 {
		t.Fatalf("only the note could go, but evicted %d", ev.EvictedCount)
	}
}
