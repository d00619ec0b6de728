package estimate

import (
	"runtime"
	"testing"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Calibrating keeps little per sound usage record: the weights come from
// span sums and the overhead from a second walk (or, beside the audit,
// from each record's 20-byte segment), so what is kept per record is its
// overhead (8 bytes) and a bool per path entry or its segment. An anchor of
// usage and context features kept per record until the fit was 64 bytes
// per record here (16 MB at 1 GB, 7% of estimate's peak).
func TestCalibrateAllocatesLittlePerRecord(t *testing.T) {
	path, c := calibratedPath(t, sessiongen.Options{Seed: 4, Turns: 3000, Compactions: 60, ToolResultBytes: 300, NoLineIndex: true})
	audit := auditUsage(path, 0)
	records := 0
	for _, ok := range audit.soundAt(path) {
		if ok {
			records++
		}
	}
	kept := transcript.KeptStarts(path)
	for name, fit := range map[string]func() *Calibration{
		"two walks": func() *Calibration { return calibrate(path, c.features, audit) },
		"segments":  func() *Calibration { return walkRecordSegs(path, kept, c.features).calibrate(audit) },
	} {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		calib := fit()
		runtime.ReadMemStats(&ms)
		per := float64(ms.TotalAlloc-before) / float64(records)
		t.Logf("%s: %d path entries, %d sound records: %.1f bytes per record (overhead %d)", name, len(path), records, per, calib.Overhead)
		if records < 1000 || per > 32 {
			t.Errorf("%s: %.1f bytes per sound record over %d records (bound 32)", name, per, records)
		}
	}
}
