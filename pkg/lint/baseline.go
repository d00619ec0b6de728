package lint

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ctxtool/ctxtool/pkg/internal/baseline"
)

// Baseline is the set of findings a previous run reported, by fingerprint
// (rule + file + key): `lint --baseline old.json` fails only on findings
// that are not in it. It reads what lint writes: JSON lines (--json) or a
// SARIF log (--format sarif).
type Baseline struct {
	File  string
	known map[string]bool
}

// LoadBaseline reads a baseline file.
func LoadBaseline(path string) (*Baseline, error) {
	b := &Baseline{File: path, known: map[string]bool{}}
	err := baseline.Load(path, "lint", 64<<20, b.sarif, func(n int, f *Finding, err error) error {
		if err != nil {
			return fmt.Errorf("--baseline %s:%d: not a lint finding (%w); give the output of `ctxtool lint --json` or `--format sarif`", path, n, err)
		}
		if f.Rule != "" { // not a file-level error line ({"file":…,"error":…})
			b.known[fingerprint(*f)] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// sarif takes the fingerprints of a SARIF log (--format sarif); it
// reports false, leaving the file to be read as JSON lines, when data is
// not one.
func (b *Baseline) sarif(data []byte) bool {
	if data[0] != '{' || !bytes.Contains(data[:min(len(data), 4096)], []byte(`"runs"`)) {
		return false
	}
	var log SARIFLog
	if err := json.Unmarshal(data, &log); err != nil || log.Version == "" {
		return false
	}
	for _, run := range log.Runs {
		for _, r := range run.Results {
			if fp := r.PartialFingerprints[FingerprintName]; fp != "" {
				b.known[fp] = true
			}
		}
	}
	return true
}

// Mark sets BaselineState on every finding: "unchanged" when the baseline
// has it, else "new".
func (b *Baseline) Mark(reports []*Report) {
	for _, r := range reports {
		for i := range r.Findings {
			if b.known[fingerprint(r.Findings[i])] {
				r.Findings[i].BaselineState = "unchanged"
			} else {
				r.Findings[i].BaselineState = "new"
			}
		}
	}
}
