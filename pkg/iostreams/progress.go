package iostreams

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Progress is a one-line progress bar on stderr for batch work. It shows only
// when stderr is a terminal and only once the work has taken more than a
// second (the contract: no noise for quick runs or in pipes and logs).
type Progress struct {
	io    *IOStreams
	label string // e.g. "rolling"
	unit  string // e.g. "sessions"
	total int

	mu       sync.Mutex
	start    time.Time
	last     time.Time
	shown    bool
	disabled bool
}

// NewProgress starts a progress bar for total items.
func (s *IOStreams) NewProgress(label, unit string, total int) *Progress {
	return &Progress{io: s, label: label, unit: unit, total: total, start: time.Now(),
		disabled: !s.IsStderrTTY() || total == 0}
}

// Update redraws the bar at done items; detail is appended (e.g. "12.3/40.0 MB").
func (p *Progress) Update(done int, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.disabled || time.Since(p.start) < time.Second || (done < p.total && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	p.shown = true
	const width = 30
	fill := done * width / p.total
	if fill > width {
		fill = width
	}
	rate := float64(done) / time.Since(p.start).Seconds()
	line := fmt.Sprintf("\r%s [%s%s] %d/%d %s, %.1f/s", p.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, p.total, p.unit, rate)
	if detail != "" {
		line += ", " + detail
	}
	fmt.Fprint(p.io.ErrOut, line+"\033[K")
}

// Clear erases the bar if it was drawn, so the final output starts clean.
func (p *Progress) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.io.ErrOut, "\r\033[K")
		p.shown = false
	}
}
