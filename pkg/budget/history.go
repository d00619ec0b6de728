package budget

// Msg is what the history steps need of one context message.
type Msg struct {
	Role   string
	Tokens int
}

// Limit is the outcome of LimitHistory: the kept messages are always a
// suffix, msgs[Start:].
type Limit struct {
	Start int `json:"-"`
	// RecentStart is where the preserved recent user turns begin.
	RecentStart  int `json:"-"`
	RecentTokens int `json:"recentTokens"`
	Tokens       int `json:"tokens"`
	// RecentCut: the preserved turns alone exceeded the budget and were cut
	// as well.
	RecentCut bool `json:"recentCut,omitempty"`
}

// LimitHistory is VS7's limitHistoryByTokens: keep everything when it fits;
// otherwise always keep the last preserveTurns user turns (the messages
// from the preserveTurns-th last user message on) and, from the older
// messages, as many of the most recent as fit in what the budget leaves.
// A kept part never starts inside a turn: it starts at a user message, or
// — when there is none to start at — after any tool results whose call was
// dropped, so no tool call is separated from its result.
func LimitHistory(msgs []Msg, budget, preserveTurns int) Limit {
	if len(msgs) == 0 || budget <= 0 {
		return Limit{Start: len(msgs), RecentStart: len(msgs)}
	}
	rs := recentTurnsStart(msgs, preserveTurns)
	recent := sumTokens(msgs[rs:])
	l := Limit{RecentStart: rs, RecentTokens: recent}
	if total := sumTokens(msgs); total <= budget {
		l.Tokens = total
		return l
	}
	if recent > budget {
		l.Start = rs + fitSuffix(msgs[rs:], budget)
		l.RecentCut = true
	} else {
		l.Start = fitSuffix(msgs[:rs], budget-recent)
	}
	l.Tokens = sumTokens(msgs[l.Start:])
	return l
}

// recentTurnsStart is the index of the preserveTurns-th user message from
// the end (0 when there are fewer; len(msgs) when preserveTurns ≤ 0).
func recentTurnsStart(msgs []Msg, preserveTurns int) int {
	if preserveTurns <= 0 {
		return len(msgs)
	}
	users := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			users++
			if users == preserveTurns {
				return i
			}
		}
	}
	return 0
}

// fitSuffix is VS7's truncateMessagesToFit on msgs: it returns how many
// leading messages to drop so the rest fits in budget — drop the oldest
// until the excess is gone, then move forward to the next user message.
// Where no user message follows, tool results at the start are dropped too
// (VS7 would keep them without their call).
func fitSuffix(msgs []Msg, budget int) int {
	if len(msgs) == 0 {
		return 0
	}
	if budget <= 0 {
		return len(msgs)
	}
	excess := sumTokens(msgs) - budget
	if excess <= 0 {
		return 0
	}
	drop := 0
	for drop < len(msgs) && excess > 0 {
		excess -= msgs[drop].Tokens
		drop++
	}
	for i := drop; i < len(msgs); i++ {
		if msgs[i].Role == "user" {
			return i
		}
	}
	for drop < len(msgs) && msgs[drop].Role == "toolResult" {
		drop++
	}
	return drop
}

// SplitTurns splits history for the rolling summary: the last windowSize
// user turns (from the windowSize-th last user message on) stay verbatim;
// everything before is what a summary would replace. With windowSize or
// fewer user turns nothing is older. (VS7's splitByTurns puts the split one
// message after the (windowSize+1)-th last user message, so its "recent"
// part starts with that turn's reply; here the recent part starts at a
// user message.)
func SplitTurns(msgs []Msg, windowSize int) (recentStart int) {
	if windowSize <= 0 {
		return len(msgs)
	}
	i := recentTurnsStart(msgs, windowSize) // 0 with fewer user turns
	// Older messages exist only if a user turn precedes.
	for j := i - 1; j >= 0; j-- {
		if msgs[j].Role == "user" {
			return i
		}
	}
	return 0
}

// SummaryTrigger is the history size above which the rolling summary runs:
// triggerThreshold, or 80% of the history budget when that is lower
// (VS7 shouldSummarize).
func SummaryTrigger(triggerThreshold, historyBudget int) int {
	if historyBudget > 0 {
		return min(triggerThreshold, historyBudget*8/10)
	}
	return triggerThreshold
}

func sumTokens(msgs []Msg) int {
	n := 0
	for _, m := range msgs {
		n += m.Tokens
	}
	return n
}
