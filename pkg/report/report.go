// Package report draws a picture of one session as a single HTML file: what
// fills the context now (system prompt and tools, user, assistant, tool
// output by tool, images, summary), how the context grew request by
// request with the compactions marked, and the biggest messages with their
// lines. The file is self-contained (inline CSS and SVG, no script or font
// from the network) so it can be mailed, attached to an issue or opened
// offline.
//
// Every number comes from estimate's measure of the session (MeasureFile
// with per-message tokens), so the page and `estimate --per-message --json`
// never disagree.
package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// imageTokens is what pi's heuristic counts for one image (4800 chars).
const imageTokens = 1200

// Part is one slice of the context now.
type Part struct {
	Name   string
	Tokens int
}

// Point is one provider request: the context it carried, by its usage.
type Point struct {
	Line   int
	Tokens int
}

// Report is what the page shows.
type Report struct {
	File          string
	Model         string
	Method        string
	Tokens        int
	ContextWindow int
	Utilization   float64
	// Parts add up to Tokens when the tokenizer counts per message
	// (system and tools is the rest).
	Parts []Part
	// Requests are the usage records of the whole file, in order;
	// Compactions the lines of its compaction entries.
	Requests    []Point
	Compactions []int
	// Biggest are the largest context messages, largest first.
	Biggest []estimate.MessageTokens
}

// Build measures file with opts and gathers what the page shows; top is
// how many of the biggest messages to list.
func Build(file string, opts estimate.Options, top int) (*Report, error) {
	fr, err := estimate.MeasureFile(file, opts, true)
	if err != nil {
		return nil, err
	}
	s, err := transcript.LoadLazy(file)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	r := &Report{File: file, Model: fr.Model, Method: fr.Method, Tokens: fr.Tokens, ContextWindow: fr.ContextWindow, Utilization: fr.Utilization}
	byLine := map[int]*transcript.Entry{}
	for _, e := range s.Entries {
		byLine[e.Line] = e
		switch {
		case e.Type() == "compaction":
			r.Compactions = append(r.Compactions, e.Line)
		case e.UsageTrusted():
			r.Requests = append(r.Requests, Point{Line: e.Line, Tokens: e.Usage.ContextTokens()})
		}
	}
	parts := map[string]int{}
	var order []string
	add := func(name string, n int) {
		if n <= 0 {
			return
		}
		if _, ok := parts[name]; !ok {
			order = append(order, name)
		}
		parts[name] += n
	}
	sum := 0
	for _, m := range fr.Messages {
		sum += m.Tokens
		name := m.Role
		e := byLine[m.Line]
		switch m.Role {
		case "toolResult":
			name = "tool output"
			if e != nil && e.ToolName() != "" {
				name = "tool output: " + e.ToolName()
			}
		case "compactionSummary", "branchSummary":
			name = "summary"
		}
		n := m.Tokens
		if e != nil && e.Images > 0 && m.Role != "compactionSummary" {
			img := min(n, int(e.Images)*imageTokens)
			add("images", img)
			n -= img
		}
		add(name, n)
	}
	if rest := fr.Tokens - sum; rest > 0 {
		r.Parts = append(r.Parts, Part{"system and tools", rest})
	}
	for _, name := range order {
		r.Parts = append(r.Parts, Part{name, parts[name]})
	}
	big := slices.Clone(fr.Messages)
	slices.SortStableFunc(big, func(a, b estimate.MessageTokens) int { return cmp.Compare(b.Tokens, a.Tokens) })
	r.Biggest = big[:min(top, len(big))]
	return r, nil
}

// Title is the page's title: the session file's name.
func (r *Report) Title() string { return fmt.Sprintf("ctxtool report: %s", filepath.Base(r.File)) }
