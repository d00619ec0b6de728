package lint

import (
	"bytes"
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/estimate"
)

// sizes reports oversized lines and large inline images.
func (c *checker) sizes() {
	if max := c.opts.MaxLineBytes; max > 0 && c.enabled(RuleOversizedLine) {
		for _, e := range c.s.Entries {
			if e.Length > max {
				f := c.report(RuleOversizedLine, e.Line, lineKey(e.Line), "the line is %s (limit %s): a %s", sizeStr(e.Length), sizeStr(max), entryKind(e))
				setEntry(f, e)
			}
		}
		for _, m := range c.s.Malformed {
			if m.Bytes > max {
				c.report(RuleOversizedLine, m.Line, lineKey(m.Line), "the line is %s (limit %s), and malformed", sizeStr(m.Bytes), sizeStr(max))
			}
		}
	}
	if max := c.opts.MaxImageBytes; max > 0 && c.enabled(RuleLargeImage) {
		for _, e := range c.s.Entries {
			// Every image counts toward Images, and an image's base64 is at
			// least 4/3 of its size: smaller lines cannot hold a large one.
			if e.Images == 0 || e.Length < max*4/3 {
				continue
			}
			raw, err := c.s.Raw(e)
			if err != nil {
				continue
			}
			for n, img := range imageBlocks(raw) {
				if img.decoded() <= max {
					continue
				}
				f := c.report(RuleLargeImage, e.Line, fmt.Sprintf("image:%s#%d", e.ID(), n),
					"an inline %s image of %s (limit %s) in a %s", img.mime, sizeStr(img.decoded()), sizeStr(max), entryKind(e))
				if f != nil {
					f.Column = utf16Col(raw, img.offset)
					setEntry(f, e)
				}
			}
		}
	}
}

// imageRef is one image block's base64 data inside a line.
type imageRef struct {
	offset int // byte offset of the data string's first character
	length int // base64 characters
	mime   string
}

func (r imageRef) decoded() int { return r.length / 4 * 3 }

// imageBlocks finds the image blocks of a line and the length of their
// base64 data without decoding the line (an image line can be hundreds of
// MB). An image block is a flat object of string fields ({"type":"image",
// "data":"…","mimeType":"…"} in any key order), and base64 holds no quote,
// backslash or brace, so the object's bounds and its data string are found
// by byte search.
func imageBlocks(line []byte) []imageRef {
	var out []imageRef
	marker := []byte(`"type":"image"`)
	for from := 0; ; {
		i := bytes.Index(line[from:], marker)
		if i < 0 {
			return out
		}
		at := from + i
		from = at + len(marker)
		open := bytes.LastIndexByte(line[:at], '{')
		end := bytes.IndexByte(line[at:], '}')
		if open < 0 || end < 0 {
			continue
		}
		obj := line[open : at+end]
		if bytes.ContainsAny(obj[1:], "{[") {
			continue // not a flat block: the marker sits inside something else
		}
		ref := imageRef{mime: "image"}
		if d := bytes.Index(obj, []byte(`"data":"`)); d >= 0 {
			start := d + len(`"data":"`)
			if q := bytes.IndexByte(obj[start:], '"'); q >= 0 {
				ref.offset, ref.length = open+start, q
			}
		}
		if m := bytes.Index(obj, []byte(`"mimeType":"`)); m >= 0 {
			start := m + len(`"mimeType":"`)
			if q := bytes.IndexByte(obj[start:], '"'); q >= 0 && q < 100 {
				ref.mime = string(obj[start : start+q])
			}
		}
		if ref.length > 0 {
			out = append(out, ref)
		}
	}
}

// budget compares the context estimate with --max-tokens/--max-utilization.
func (c *checker) budget() {
	o := c.opts
	if (o.MaxTokens <= 0 && o.MaxUtilization <= 0) || !c.enabled(RuleContextOverBudget) {
		return
	}
	size := o.Size
	if size.Method == "" {
		size.Method = estimate.Auto
	}
	res, err := estimate.Measure(c.s, c.ctx, size)
	if err != nil {
		c.report(RuleContextOverBudget, c.leafLine(), "budget", "could not estimate the context: %v", err)
		return
	}
	w := c.window()
	window := w.Tokens
	util := float64(res.Tokens) / float64(window)
	var over []string
	if o.MaxTokens > 0 && res.Tokens > o.MaxTokens {
		over = append(over, fmt.Sprintf("--max-tokens %d", o.MaxTokens))
	}
	if o.MaxUtilization > 0 && util > o.MaxUtilization {
		over = append(over, fmt.Sprintf("--max-utilization %.0f%%", o.MaxUtilization*100))
	}
	if len(over) == 0 {
		return
	}
	leaf := c.s.Leaf()
	f := c.report(RuleContextOverBudget, c.leafLine(), "budget",
		"the active context is %d tokens (%s), %.1f%% of the window of %s: over %s", res.Tokens, res.Method, util*100, w.Describe(), joinAnd(over))
	setEntry(f, leaf)
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return s[0] + " and " + s[1]
}

// utf16Col converts a byte offset in a line to a 1-based UTF-16 column.
func utf16Col(line []byte, off int) int {
	col := 1
	for _, r := range string(line[:off]) {
		if r >= 0x10000 {
			col += 2
		} else {
			col++
		}
	}
	return col
}
