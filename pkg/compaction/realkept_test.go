package compaction

import (
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// RealKeptTokens measures what the kept tail of a plan really costs the
// provider, from the session's usage records: the growth of the reported
// context size from the last reply before the cut to the last reply, minus
// the (estimated) messages between that reply and the cut, plus the
// (estimated) messages after the last reply. ok is false when there is no
// usage record before the cut in the same compaction epoch (a usage record
// from before a compaction measures a different context).
func RealKeptTokens(p *Preparation, count Counter) (real int, ok bool) {
	if p == nil || p.Cut < 0 {
		return 0, false
	}
	if count == nil {
		count = heuristic
	}
	path := p.Path
	epoch := 0
	for i, e := range path {
		if e.Type() == "compaction" {
			epoch = i + 1
		}
	}
	anchor := func(e *transcript.Entry) bool {
		return e.Type() == "message" && e.UsageTrusted() && e.Usage.ContextTokens() > 0
	}
	a, l := -1, -1
	for i := epoch; i < len(path); i++ {
		if !anchor(path[i]) {
			continue
		}
		if i < p.Cut {
			a = i
		}
		l = i
	}
	if a < 0 || l < p.Cut {
		return 0, false
	}
	real = path[l].Usage.ContextTokens() - path[a].Usage.ContextTokens()
	for i := a + 1; i < p.Cut; i++ {
		if path[i].ProducesMessage() {
			real -= count(path[i])
		}
	}
	for i := l + 1; i < len(path); i++ {
		if path[i].ProducesMessage() {
			real += count(path[i])
		}
	}
	return real, true
}
