package cmd

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// table prints aligned columns for humans.
type table struct{ w *tabwriter.Writer }

func newTable(out io.Writer) *table {
	return &table{w: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cols ...string) { fmt.Fprintln(t.w, strings.Join(cols, "\t")) }

func (t *table) flush() { t.w.Flush() }

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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
