package sessiongen

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a size such as "100MB" or "1GB" (binary units: 1 GB =
// 2^30 bytes), for the generators' and benchmarks' -size flags.
func ParseSize(s string) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(u, suf.s) {
			u, mult = strings.TrimSuffix(u, suf.s), suf.m
			break
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("bad -size %q (e.g. 100MB, 1GB)", s)
	}
	return int64(f * float64(mult)), nil
}
