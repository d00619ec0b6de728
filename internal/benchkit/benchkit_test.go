package benchkit

import (
	"testing"
	"time"
)

// Summarize takes the median of wall and of CPU each on its own (the
// runs' order does not matter, and the median-wall run need not be the
// median-CPU one) and the worst peak RSS.
func TestSummarizeMediansAndWorstRSS(t *testing.T) {
	ms := time.Millisecond
	got := Summarize([]Sample{
		{Wall: 50 * ms, CPU: 10 * ms, RSSKB: 300},
		{Wall: 10 * ms, CPU: 40 * ms, RSSKB: 900},
		{Wall: 30 * ms, CPU: 20 * ms, RSSKB: 100},
	})
	if want := (Sample{Wall: 30 * ms, CPU: 20 * ms, RSSKB: 900}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
