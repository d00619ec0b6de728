package filelock

import (
	"os"
	"testing"
)

// BenchmarkOtherHolders is the cost of one /proc scan, paid once per
// rewrite and then at most every scanGap-maxScanGap while another process
// holds the replaced session file.
func BenchmarkOtherHolders(b *testing.B) {
	fi, err := os.Stat(os.Args[0])
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, ok := otherHolders(fi); !ok {
			b.Skip("no /proc here")
		}
	}
}
