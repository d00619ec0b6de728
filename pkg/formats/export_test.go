package formats

import (
	"bytes"
	"io"
)

// SetConvChunk sets the batch size of convertLines until restore is called.
func SetConvChunk(n int) (restore func()) {
	old := convChunk
	convChunk = n
	return func() { convChunk = old }
}

// ConvertLineByLine translates src (a Claude Code or Codex transcript)
// feeding the converter one line at a time, without convertLines' batches:
// the reference the batched path must equal.
func ConvertLineByLine(f Format, src []byte) ([]byte, error) {
	v := &view{out: &spool{}}
	c := newConv(f, v)
	for i, line := range bytes.Split(bytes.TrimSuffix(src, []byte{'\n'}), []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := c.line(i+1, line); err != nil {
			return nil, err
		}
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	view, err := v.finish(f, "src", "line")
	if err != nil {
		return nil, err
	}
	defer view.Close()
	var out bytes.Buffer
	_, err = io.Copy(&out, io.NewSectionReader(view.ReaderAt(), 0, view.Size()))
	return out.Bytes(), err
}

// Written reports whether v's bytes are written (a lazy view's are not,
// until read).
func (v *View) Written() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.data.discard
}
