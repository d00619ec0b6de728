// Package estimate measures how many tokens the active context of a session
// costs: pi's chars/4 heuristic exactly, exact tiktoken counts, pi's
// usage-anchored estimate, and a calibrated estimate learnt from the
// session's own usage records.
//
// It owns the context size every command reports and the usage audit. It
// must not write anything and must not decide what to do with a size:
// triggers, targets and gates belong to the callers; the window comes from
// pkg/models.
package estimate

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Methods accepted by --tokenizer.
const (
	Auto       = "auto"
	Heuristic  = "heuristic"
	Usage      = "usage"
	Calibrated = "calibrated"
	O200k      = "o200k"
	Cl100k     = "cl100k"
)

// methods lists every method, for flag help and validation.
var methods = []string{Auto, Heuristic, Usage, Calibrated, O200k, Cl100k}

// Methods returns a copy of the accepted --tokenizer values, in order.
func Methods() []string { return slices.Clone(methods) }

// TextCounter counts the tokens of a text exactly (a BPE tokenizer).
type TextCounter interface {
	Count(text string) int
}

// ValidMethod reports whether m is a known method.
func ValidMethod(m string) bool {
	for _, x := range methods {
		if x == m {
			return true
		}
	}
	return false
}

// Counter estimates the provider tokens of single context messages with one
// method. It is what compaction and rolling use to size a kept tail.
type Counter struct {
	s      *transcript.Session
	method string
	calib  *Calibration
	text   TextCounter
	// Note explains a fallback (e.g. too few usage records to calibrate).
	Note string

	mu     sync.Mutex
	images map[*transcript.Entry]int
	exact  map[*transcript.Entry]int
}

// NewCounter prepares a per-message counter. "auto" is calibrated when the
// session has enough sound usage records and o200k otherwise (calibrated
// with prior weights when no exact tokenizer is built in); "usage" counts
// single messages like "calibrated" (a usage record sizes a whole context,
// not a message).
func NewCounter(s *transcript.Session, method string) (*Counter, error) {
	return newCounter(s, nil, method, nil, nil)
}

// newCounter is NewCounter calibrated on the session's branch when it is
// already walked (nil: walk it here) and on an audit of it already made
// (nil: audit it here), or with calib, a calibration known to hold for the
// branch (nil: fit it here).
func newCounter(s *transcript.Session, branch []*transcript.Entry, method string, audit *UsageAudit, calib *Calibration) (*Counter, error) {
	if !ValidMethod(method) {
		return nil, fmt.Errorf("unknown tokenizer %q (use one of %v)", method, methods)
	}
	c := &Counter{s: s, method: method, images: map[*transcript.Entry]int{}, exact: map[*transcript.Entry]int{}}
	switch method {
	case Auto, Calibrated, Usage:
		c.calib = calib
		if c.calib == nil {
			c.calib = c.fit(branch, audit)
		}
		if c.calib.Usable {
			c.method = Calibrated
			break
		}
		if method == Auto {
			// Expected for short sessions: auto simply counts exactly.
			c.method = O200k
		} else {
			c.Note = fmt.Sprintf("too few usage records to calibrate (%d spans, %d tokens): using prior weights", c.calib.Points, c.calib.TokensCovered)
			c.method = Calibrated
		}
	}
	if c.method == O200k || c.method == Cl100k {
		t, err := tokenizers(c.method)
		if err != nil && method == Auto {
			c.method = Calibrated // no exact tokenizer in this build: prior weights
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		c.text = t
	}
	return c, nil
}

// fit calibrates the counter on the session's branch (nil: walked here)
// and its audit (nil: made here).
func (c *Counter) fit(branch []*transcript.Entry, audit *UsageAudit) *Calibration {
	if branch == nil {
		branch = c.s.Branch()
	}
	if audit == nil {
		audit = auditUsage(branch, 0)
	}
	return calibrate(branch, c.features, audit)
}

// Method is the method actually used (auto resolved).
func (c *Counter) Method() string { return c.method }

// Calibration is the fitted model (nil for heuristic and exact methods).
func (c *Counter) Calibration() *Calibration { return c.calib }

func (c *Counter) features(e *transcript.Entry) features {
	return messageFeatures(e, c.imageTokens(e))
}

// imageTokens sums the pixel-based token estimate of an entry's images.
func (c *Counter) imageTokens(e *transcript.Entry) int {
	if e.Images == 0 {
		return 0
	}
	c.mu.Lock()
	if n, ok := c.images[e]; ok {
		c.mu.Unlock()
		return n
	}
	c.mu.Unlock()
	n := 0
	if m, err := c.s.Message(e); err == nil && m != nil {
		for _, b := range m.Content {
			if b.Type == "image" {
				n += imageTokens(b.Data)
			}
		}
	} else {
		n = int(e.Images) * PiImageTokens
	}
	c.mu.Lock()
	c.images[e] = n
	c.mu.Unlock()
	return n
}

// Tokens estimates one context message.
func (c *Counter) Tokens(e *transcript.Entry) int {
	switch c.method {
	case Heuristic:
		return e.Tokens()
	case Calibrated:
		return int(math.Round(c.calib.apply(c.features(e))))
	default:
		c.mu.Lock()
		n, ok := c.exact[e]
		c.mu.Unlock()
		if ok {
			return n
		}
		n = c.exactTokens(e)
		c.mu.Lock()
		c.exact[e] = n
		c.mu.Unlock()
		return n
	}
}

// exactTokens tokenizes the same parts of a message that pi's heuristic
// measures, plus pixel-based image tokens.
func (c *Counter) exactTokens(e *transcript.Entry) int {
	if e.Role() == "system" {
		// pi 1.6.0's system prompt is in the message's sections (and a
		// compaction replays it): pi's chars/4 measure of them.
		return e.Tokens()
	}
	m, err := c.s.Message(e)
	if err != nil || m == nil {
		return e.Tokens()
	}
	n := 0
	switch m.Role {
	case "compactionSummary", "branchSummary":
		return c.text.Count(m.Summary)
	case "bashExecution":
		return c.text.Count(m.Command) + c.text.Count(m.Output)
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			n += c.text.Count(b.Text)
		case "thinking":
			if m.Role == "assistant" {
				n += c.text.Count(b.Thinking)
			}
		case "toolCall":
			if m.Role == "assistant" {
				n += c.text.Count(b.Name) + c.text.Count(string(b.Arguments))
			}
		case "image":
			n += imageTokens(b.Data)
		}
	}
	return n
}

// Prefetch counts many entries in parallel (exact methods read and tokenize
// content, which is worth spreading over the cores).
func (c *Counter) Prefetch(entries []*transcript.Entry) {
	if c.method != O200k && c.method != Cl100k {
		return
	}
	work := make(chan *transcript.Entry, 64)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				c.Tokens(e)
			}
		}()
	}
	for _, e := range entries {
		work <- e
	}
	close(work)
	wg.Wait()
}

// HeapLimit is the soft memory limit (runtime/debug.SetMemoryLimit) for
// reading a session file of size bytes. Reading keeps per-entry metadata:
// a live heap of 12-16% of the file at 1 GB (pi, Claude Code, Codex) but
// 21-26% on generated 8-64 MB files, so a limit much under the file size
// could sit below the live heap of some session. There a fixed 80 MiB limit
// made the collector run back to back (42-50% of CPU, estimate 2.1x slower
// at 1 GB for 25% less RSS). The limit grows with the file so that it only
// trims the garbage of small sessions and never sits below the live heap;
// a limit of 230 MiB at 1 GB cut peaks by 22-113 MiB for 1-7% more CPU, but
// needs the live heap measured while loading, not guessed from the size.
func HeapLimit(size int64) int64 {
	const floor = 80 << 20
	return max(floor, size)
}

// GCPercent is the collector's GOGC for reading a session file of size
// bytes under HeapLimit. A small file's live heap (its entries and the
// tokenizer's tables: 12-17 MiB reading 3 MB Claude Code files) is far
// below HeapLimit's 80 MiB floor, so the collector is switched off (-1)
// and the limit alone starts it: one cycle per ~60 MiB allocated instead
// of one per live heap's worth. Reading 1 GB of such files (1,326 files,
// bench/ccusage.sh), GC was a third of estimate's CPU at GOGC 100. A
// larger file keeps GOGC 100: its limit is its size, which the heap should
// not be let grow to.
func GCPercent(size int64) int {
	if size <= smallFile {
		return -1
	}
	return 100
}

// smallFile is the largest file GCPercent turns the collector off for:
// at 26% of the file live at most (generated 8-64 MB sessions), plus the
// tokenizer's tables, its heap stays well under the 80 MiB floor.
const smallFile = 16 << 20
