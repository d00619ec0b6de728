package sessiongen

import (
	"math"
	"unicode/utf8"
)

// Kind says how the ground-truth tokenizer counts a piece of text.
type Kind uint8

const (
	// KindDefault lets the builder pick by position: Prose for user, custom,
	// assistant text/thinking and summaries; Code for tool-call arguments,
	// tool results and bash commands/output.
	KindDefault Kind = iota
	// KindProse is English-like text: ProseCharsPerToken chars per token.
	KindProse
	// KindCode is source code, JSON, logs: CodeCharsPerToken chars per token.
	KindCode
)

// Ground-truth tokenizer constants (see the package documentation for the
// formula). They were chosen to match what the reference measurements in
// docs/design/pi-baseline.md cites for real providers.
const (
	ProseCharsPerToken = 4.2
	CodeCharsPerToken  = 3.3
	// MessageOverheadTokens is added once per message sent to the provider
	// (role and turn framing).
	MessageOverheadTokens = 4
	// ToolCallOverheadTokens is added once per toolCall block (id, framing).
	ToolCallOverheadTokens = 8
	// BashFramingTokens covers "Ran `…`" and the ``` fence pi wraps around
	// a bashExecution when sending it.
	BashFramingTokens = 6
	// CompactionWrapperTokens / BranchWrapperTokens: the fixed preamble and
	// <summary> tags pi sends around a compaction (107 chars) or branch
	// (99 chars) summary, counted as prose.
	CompactionWrapperTokens = 26 // ceil(107 / 4.2)
	BranchWrapperTokens     = 24 // ceil(99 / 4.2)
	// DefaultSystemTokens is the default fixed system prompt + tool
	// definitions overhead included in every request's input.
	DefaultSystemTokens = 4200
	// HeuristicImageChars is what pi's estimateTokens adds per image in a
	// toolResult or custom message (user-message images count 0).
	HeuristicImageChars = 4800
)

// measure returns the JavaScript length (UTF-16 code units) of s and how many
// of its characters are CJK (each counted as one ground-truth token).
// Invalid UTF-8 bytes count as one unit each (they become U+FFFD).
func measure(s string) (units, cjk, cjkU int) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			// ASCII fast path: count a run at once.
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf {
				j++
			}
			units += j - i
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		if IsCJK(r) {
			cjk++
			cjkU += utf16Len(r)
		}
	}
	return units, cjk, cjkU
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// IsCJK reports whether r is counted as one ground-truth token on its own:
// CJK ideographs (incl. extension A and compatibility), kana, Hangul,
// bopomofo, CJK symbols/punctuation and fullwidth forms.
func IsCJK(r rune) bool {
	switch {
	case r >= 0x3000 && r <= 0x303F, // CJK symbols and punctuation
		r >= 0x3040 && r <= 0x30FF,   // hiragana, katakana
		r >= 0x3100 && r <= 0x312F,   // bopomofo
		r >= 0x3130 && r <= 0x318F,   // hangul compatibility jamo
		r >= 0x3400 && r <= 0x4DBF,   // ext A
		r >= 0x4E00 && r <= 0x9FFF,   // unified ideographs
		r >= 0xAC00 && r <= 0xD7AF,   // hangul syllables
		r >= 0xF900 && r <= 0xFAFF,   // compatibility ideographs
		r >= 0xFF00 && r <= 0xFFEF,   // half/fullwidth forms
		r >= 0x20000 && r <= 0x2FA1F: // ext B+
		return true
	}
	return false
}

// TrueTokens is the ground-truth token count of one text piece:
// cjk + ceil(otherUnits / charsPerToken(kind)), where cjk is the number of
// CJK characters and otherUnits the UTF-16 length of everything else.
// KindDefault counts as prose.
func TrueTokens(s string, kind Kind) int {
	u, c, cu := measure(s)
	return trueFrom(u, c, cu, kind)
}

// trueFrom applies the ground-truth rule to measured counts; cjkU is the
// UTF-16 length of the CJK characters (astral ones take 2 units).
func trueFrom(units, cjk, cjkU int, kind Kind) int {
	other := units - cjkU
	ratio := ProseCharsPerToken
	if kind == KindCode {
		ratio = CodeCharsPerToken
	}
	return cjk + int(math.Ceil(float64(other)/ratio))
}

// ImageTokens is the ground-truth cost of one image: Anthropic's rule —
// scale down (keeping the aspect ratio) until the long edge is <= 1568 px and
// the area is <= 1,150,000 px, then ceil(width*height/750).
func ImageTokens(width, height int) int {
	if width <= 0 || height <= 0 {
		return 0
	}
	w, h := float64(width), float64(height)
	if long := math.Max(w, h); long > 1568 {
		s := 1568 / long
		w, h = w*s, h*s
	}
	if a := w * h; a > 1150000 {
		s := math.Sqrt(1150000 / a)
		w, h = w*s, h*s
	}
	return int(math.Ceil(math.Floor(w) * math.Floor(h) / 750))
}

// HeuristicTokens is pi's estimateTokens rule for a character count:
// ceil(chars / 4).
func HeuristicTokens(chars int) int {
	return (chars + 3) / 4
}
