package formats

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ctxtool/ctxtool/pkg/internal/jsout"
)

// ExportResult describes one export.
type ExportResult struct {
	File   string `json:"file"`
	Format Format `json:"format"`
	Output string `json:"output"`
	Lines  int    `json:"lines"`
	Bytes  int64  `json:"bytes"`
}

// Export writes the transcript at src as a pi v3 session to w: the
// translated view for the formats ctxtool only reads, the file unchanged
// for pi JSONL (already a pi session; pi migrates v1/v2 itself on open).
func Export(src string, w io.Writer) (ExportResult, error) {
	res := ExportResult{File: src}
	var v *View
	var err error
	if src == "-" {
		v, err = OpenReader("-", os.Stdin, nil)
		if err == nil && v == nil {
			return res, fmt.Errorf("-: standard input is pi JSONL already; nothing to export")
		}
	} else {
		v, err = Open(src, nil)
	}
	if err != nil {
		return res, err
	}
	if v == nil {
		f, err := os.Open(src)
		if err != nil {
			return res, err
		}
		defer f.Close()
		res.Format = Pi
		cw := &countWriter{w: w}
		if _, err := io.Copy(cw, f); err != nil {
			return res, err
		}
		res.Bytes, res.Lines = cw.n, cw.lines
		return res, nil
	}
	defer v.Close()
	res.Format = v.Format
	cw := &countWriter{w: w}
	if _, err := exportTo(v, cw); err != nil {
		return res, err
	}
	res.Bytes, res.Lines = cw.n, cw.lines
	return res, nil
}

// exportTo writes the view, its header carrying the window the source
// stated (contextWindow, contextWindowSource: pi ignores keys it does not
// know, ctxtool reads them back), so the copy is measured against the
// window the agent ran with, not the model table's.
func exportTo(v *View, w io.Writer) (int64, error) {
	if v.ContextWindow <= 0 {
		return v.WriteTo(w)
	}
	r := io.NewSectionReader(v.ReaderAt(), 0, v.Size())
	br := bufio.NewReader(r)
	head, err := br.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return 0, err
	}
	line := bytes.TrimRight(head, "\n")
	if bytes.HasSuffix(line, []byte("}")) {
		src := jsout.AppendString(nil, v.WindowSource)
		line = fmt.Appendf(line[:len(line)-1:len(line)-1], `,"contextWindow":%d,"contextWindowSource":%s}`, v.ContextWindow, src)
	}
	n, err := w.Write(append(line, '\n'))
	if err != nil {
		return int64(n), err
	}
	m, err := io.Copy(w, br)
	return int64(n) + m, err
}

// ExportFile exports src to the file dst, created through a temporary file
// and a rename so that a failure leaves nothing half-written. An existing
// dst is refused unless force is set; dst may never be src.
func ExportFile(src, dst string, force bool) (ExportResult, error) {
	if a, b := absOrSelf(src), absOrSelf(dst); a == b {
		return ExportResult{File: src}, fmt.Errorf("%s: the output is the input; give another -o path", dst)
	}
	if _, err := os.Lstat(dst); err == nil && !force {
		return ExportResult{File: src}, fmt.Errorf("%s exists; give another -o path or --force to replace it", dst)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".ctxtool-tmp-*")
	if err != nil {
		return ExportResult{File: src}, fmt.Errorf("%s: %w", dst, err)
	}
	defer os.Remove(tmp.Name())
	res, err := Export(src, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return res, fmt.Errorf("%s: %w", dst, err)
	}
	res.Output = dst
	return res, nil
}

func absOrSelf(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r
		}
		return a
	}
	return p
}

type countWriter struct {
	w     io.Writer
	n     int64
	lines int
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	for _, b := range p[:n] {
		if b == '\n' {
			c.lines++
		}
	}
	return n, err
}
