package formats

import (
	"bytes"
	"io"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
)

// SetConvChunk sets the batch size of ConvertLines until restore is called.
func SetConvChunk(n int) (restore func()) {
	old := conv.ConvChunk
	conv.ConvChunk = n
	return func() { conv.ConvChunk = old }
}

// ConvertLineByLine translates src (a Claude Code or Codex transcript)
// feeding the converter one line at a time, without ConvertLines' batches:
// the reference the batched path must equal.
func ConvertLineByLine(f Format, src []byte) ([]byte, error) {
	v := &conv.Emitter{Out: &conv.Spool{}}
	cv, _ := conv.Lookup(f)
	c := cv.New(v)
	for i, line := range bytes.Split(bytes.TrimSuffix(src, []byte{'\n'}), []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := c.Line(i+1, line); err != nil {
			return nil, err
		}
	}
	if err := c.Finish(); err != nil {
		return nil, err
	}
	view, err := v.Finish(f, "src", "line")
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
func Written(v *View) bool { return conv.ViewWritten(v) }
