package lint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ctxtool/ctxtool/pkg/safefile"
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %v (write one with `ctxtool lint --json FILES > %s`)", path, safefile.PathCause(err), path)
	}
	b := &Baseline{File: path, known: map[string]bool{}}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return b, nil // a clean run writes nothing
	}
	if trimmed[0] == '{' && bytes.Contains(trimmed[:min(len(trimmed), 4096)], []byte(`"runs"`)) {
		var log SARIFLog
		if err := json.Unmarshal(trimmed, &log); err == nil && log.Version != "" {
			for _, run := range log.Runs {
				for _, r := range run.Results {
					if fp := r.PartialFingerprints[FingerprintName]; fp != "" {
						b.known[fp] = true
					}
				}
			}
			return b, nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var f Finding
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("--baseline %s:%d: not a lint finding (%v); give the output of `ctxtool lint --json` or `--format sarif`", path, n, err)
		}
		if f.Rule == "" {
			continue // a file-level error line ({"file":…,"error":…})
		}
		b.known[fingerprint(f)] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--baseline %s: %v", path, err)
	}
	return b, nil
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
