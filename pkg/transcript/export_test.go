package transcript

import (
	"bytes"

	"github.com/ctxtool/ctxtool/pkg/formats"
)

// SetMaxLineBytes lowers the line cap for a test and returns a restore.
func SetMaxLineBytes(n int64) func() {
	old := maxLineBytes
	maxLineBytes = n
	return func() { maxLineBytes = old }
}

// LoadBytes indexes a session held in memory.
func LoadBytes(name string, data []byte) (*Session, error) {
	s, err := load(name, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	s.src = bytes.NewReader(data)
	return s, nil
}

// LoadTranslated loads a transcript in another format the way every one
// was read before the converters handed over their values: translated to
// pi lines, then those lines parsed. Nil for pi files.
func LoadTranslated(path string) (*Session, error) {
	v, err := formats.Open(path, nil)
	if err != nil || v == nil {
		return nil, err
	}
	return loadView(path, v)
}
