// Package human holds the few rules for writing numbers a person reads,
// shared by the tables, the notes and the gauge so that they never
// disagree: a session at 79.66% of its window is "79.7%" everywhere, not
// 79.7% in a table and 79% in the note below it.
package human

import "strconv"

// Percent writes a share (0.797) as a percentage with one decimal,
// rounded to nearest: "79.7%". Every percentage shown to a person goes
// through it.
func Percent(share float64) string {
	return strconv.FormatFloat(share*100, 'f', 1, 64) + "%"
}
