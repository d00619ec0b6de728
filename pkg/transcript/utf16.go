package transcript

import "unicode/utf16"

// UTF16Len is JavaScript's String length: UTF-16 code units, what pi and
// OpenClaw count as characters. Invalid bytes read as U+FFFD (one unit), as
// TextDecoder does.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// TextTokens is pi's chars/4 rule for one text: ceil(UTF-16 units / 4).
func TextTokens(s string) int { return (UTF16Len(s) + 3) / 4 }

// PrefixUTF16 returns the longest prefix of s with at most n UTF-16 units,
// never splitting a rune (JavaScript's s.slice(0, n) minus a torn surrogate).
func PrefixUTF16(s string, n int) string {
	u := 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if u+w > n {
			return s[:i]
		}
		u += w
	}
	return s
}

// SuffixUTF16 returns the longest suffix of s with at most n UTF-16 units,
// never splitting a rune (JavaScript's s.slice(-n) minus a torn surrogate).
func SuffixUTF16(s string, n int) string {
	rs := []rune(s)
	u := 0
	i := len(rs)
	for i > 0 {
		w := utf16.RuneLen(rs[i-1])
		if u+w > n {
			break
		}
		u += w
		i--
	}
	return string(rs[i:])
}
