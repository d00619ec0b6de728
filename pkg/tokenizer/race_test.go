//go:build race

package tokenizer

// raceEnabled: the race detector slows the merge loops about tenfold, so
// wall-clock bounds do not apply (the counts are still checked).
const raceEnabled = true
