package formats_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// Open (a path) and OpenReader (a stream) answer alike for the formats
// they give no view of: pi JSONL is (nil, nil), left to pkg/transcript, and
// a file of no known format is an *UnknownFormatError naming the line.
func TestOpenAndOpenReaderLeavePiAndRefuseUnknown(t *testing.T) {
	pi := `{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/"}` + "\n"
	unknown := "[1,2,3]\n"
	dir := t.TempDir()
	for _, tc := range []struct {
		name, data string
		unknown    bool
	}{{"pi", pi, false}, {"unknown", unknown, true}} {
		path := filepath.Join(dir, tc.name+".jsonl")
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		v1, err1 := formats.Open(path, nil)
		v2, err2 := formats.OpenReader(path, bytes.NewReader([]byte(tc.data)), nil)
		for i, got := range []struct {
			v   *formats.View
			err error
		}{{v1, err1}, {v2, err2}} {
			var ue *formats.UnknownFormatError
			if got.v != nil || errors.As(got.err, &ue) != tc.unknown || (!tc.unknown && got.err != nil) {
				t.Errorf("%s, reader %d: view %v, error %v", tc.name, i, got.v, got.err)
			}
			if tc.unknown && (ue == nil || ue.Line != 1 || ue.File != path) {
				t.Errorf("%s, reader %d: %+v", tc.name, i, ue)
			}
		}
	}
}
