package lint

import (
	"bytes"
	"fmt"
	"testing"
)

// TestHeaderVersions: the OpenClaw 2026.9 Gateway writes "version":4 in
// the header of every session it creates (its store, cmd's matrix checks
// one it wrote), with v3's entries; lint warned "unknown session version
// 4" on every one. 1–4 are known; a higher number still warns.
func TestHeaderVersions(t *testing.T) {
	for _, tc := range []struct {
		version int
		warns   bool
	}{{2, false}, {3, false}, {4, false}, {5, true}, {99, true}} {
		t.Run(fmt.Sprint(tc.version), func(t *testing.T) {
			p := session(t, clean, func(data []byte) []byte {
				out := bytes.Replace(data, []byte(`"version":3`), []byte(fmt.Sprintf(`"version":%d`, tc.version)), 1)
				if bytes.Equal(out, data) && tc.version != 3 {
					t.Fatal("no version in the header")
				}
				return out
			})
			var got []Finding
			for _, f := range findingsOf(lintFile(t, p, nil), RuleInvalidHeader) {
				if f.Key == "header-version" {
					got = append(got, f)
				}
			}
			if tc.warns && (len(got) != 1 || got[0].Severity != Warning) {
				t.Errorf("version %d: want one warning, got %+v", tc.version, got)
			}
			if !tc.warns && len(got) > 0 {
				t.Errorf("version %d is a known writer's: %+v", tc.version, got)
			}
		})
	}
}
