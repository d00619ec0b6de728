package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// table prints aligned columns for humans: numeric columns right-aligned,
// and, given a width (fit), the widest text columns shortened with "…" so a
// row never wraps (the FILE column keeps its tail: the file name).
type table struct {
	out   io.Writer
	width int
	rows  [][]string
	// style colors cells for a terminal (nil: plain text).
	style *lipgloss.Renderer
}

func newTable(out io.Writer) *table { return &table{out: out} }

// fit limits rows to width columns (0: no limit, e.g. not a terminal).
func (t *table) fit(width int) *table {
	t.width = width
	return t
}

// term fits the table to the terminal of s and colors it when s says a
// person is reading (iostreams.ColorEnabled).
func (t *table) term(s *IOStreams) *table {
	t.fit(s.Width())
	if s.ColorEnabled() {
		// The profile is set, not detected: the decision is s's (a test
		// forces a terminal; lipgloss would look at the writer again).
		t.style = lipgloss.NewRenderer(t.out)
		t.style.SetColorProfile(termenv.ANSI)
	}
	return t
}

func (t *table) row(cols ...string) { t.rows = append(t.rows, cols) }

// numericCell matches counts, sizes, shares and the "-" of a missing value.
var numericCell = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(-|[~≈<>]?-?[0-9][0-9,.]*(%|[kKMG]?B|[kKMG]| ?MB| ?s)?)$`)
})

func (t *table) flush() {
	if len(t.rows) == 0 {
		return
	}
	ncol := 0
	for _, r := range t.rows {
		ncol = max(ncol, len(r))
	}
	widths := make([]int, ncol)
	numeric := make([]bool, ncol)
	for c := range numeric {
		numeric[c] = len(t.rows) > 1
	}
	for i, r := range t.rows {
		for c, cell := range r {
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
			if i > 0 && cell != "" && !numericCell().MatchString(cell) {
				numeric[c] = false
			}
		}
	}
	t.shrink(widths, numeric)
	var b strings.Builder
	for i, r := range t.rows {
		b.Reset()
		for c := 0; c < ncol; c++ {
			cell := ""
			if c < len(r) {
				cell = r[c]
			}
			cell = clip(cell, widths[c], c == 0)
			pad := strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell))
			cell = t.paint(cell, i == 0)
			switch {
			case numeric[c]:
				b.WriteString(pad + cell)
			case c == ncol-1:
				b.WriteString(cell)
			default:
				b.WriteString(cell + pad)
			}
			if c < ncol-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(t.out, strings.TrimRightFunc(b.String(), unicode.IsSpace))
	}
	t.rows = nil
}

// paint colors a cell for a terminal: the header bold, a share of the
// window by how full it is (green, yellow from 50%, red from 80%), an
// error red. Widths are measured before, on the plain text.
func (t *table) paint(cell string, header bool) string {
	if t.style == nil || cell == "" {
		return cell
	}
	st := t.style.NewStyle()
	switch {
	case header:
		return st.Bold(true).Render(cell)
	case cell == "error":
		return st.Foreground(lipgloss.Color("1")).Render(cell)
	case strings.HasSuffix(cell, "%"):
		v, err := strconv.ParseFloat(strings.TrimSuffix(cell, "%"), 64)
		if err != nil {
			return cell
		}
		color := "2"
		switch {
		case v >= 80:
			color = "1"
		case v >= 50:
			color = "3"
		}
		return st.Foreground(lipgloss.Color(color)).Render(cell)
	}
	return cell
}

// shrink narrows the widest text columns one character at a time until a
// row fits t.width, so the long ones (a path, a model name) end up equally
// wide; a column keeps at least minColumn characters.
func (t *table) shrink(widths []int, numeric []bool) {
	const minColumn = 8
	if t.width <= 0 {
		return
	}
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for ; total > t.width; total-- {
		widest := -1
		for c, w := range widths {
			if !numeric[c] && w > minColumn && (widest < 0 || w > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			return // nothing left to narrow: let the terminal wrap
		}
		widths[widest]--
	}
}

// clip shortens s to n characters with "…": a path from the middle
// (keeping where it starts and its file name), else keeping the tail
// (keepTail) or the head.
func clip(s string, n int, keepTail bool) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if strings.ContainsRune(s, '/') && n >= 8 {
		head := (n - 1) / 3
		return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
	}
	if keepTail {
		return "…" + string(r[len(r)-(n-1):])
	}
	return string(r[:n-1]) + "…"
}

// displayPath shows a path the short way for humans: relative to the
// working directory when it is under it, else ~/… under the home
// directory, else as given. JSON output keeps paths as given.
func displayPath(p string) string {
	if p == "" || p == "-" || !filepath.IsAbs(p) {
		return p
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		if rel, err := filepath.Rel(home, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.Join("~", rel)
		}
	}
	return p
}

// humanInt writes 123456 as 123,456.
func humanInt(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
