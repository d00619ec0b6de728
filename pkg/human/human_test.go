package human

import "testing"

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		share float64
		want  string
	}{
		{0.797, "79.7%"}, {0.79666, "79.7%"}, {1.3296, "133.0%"}, {0.81216, "81.2%"}, {0, "0.0%"}, {0.70, "70.0%"},
	} {
		if got := Percent(c.share); got != c.want {
			t.Errorf("Percent(%v) = %s, want %s", c.share, got, c.want)
		}
	}
}
