package codex

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ctxtool/ctxtool/pkg/formats/internal/conv"
	"github.com/klauspost/compress/zstd"
)

// Codex forks (0.17x, history_mode "paginated"): a fork's rollout holds
// only its own turns. Its session_meta names the history it continues:
//
//	"history_base": {"thread_id": <parent rollout id>,
//	                 "end_ordinal_exclusive": N, "end_byte_offset": B}
//
// Codex sends the parent rollout's items before ordinal N — its first B
// bytes — then the fork's own. The parent is found as Codex finds it: by
// the rollout id at the end of its file name ("rollout-<time>-<id>.jsonl",
// or .jsonl.zst once Codex compressed it), in the sessions and
// archived_sessions trees of the same Codex home. A parent that is itself a
// fork brings its own parent first.
//
// The parent's entries keep the parent's line numbers (SourceRow) under
// ids of their own; a note says which file those lines are in. Without the
// parent, a note names the parent id and where it was looked for, and the
// fork's own turns are read.

// cxBase is a session_meta's history_base.
type cxBase struct {
	thread string
	end    int64 // end_byte_offset
}

// maxForkDepth bounds a chain of forks (and a loop of bad pointers).
const maxForkDepth = 16

func (d *cxDec) cxBase() cxBase {
	var b cxBase
	for k, ok := d.Key(); ok; k, ok = d.Key() {
		switch string(k) {
		case "thread_id":
			b.thread = d.String("thread_id")
		case "end_byte_offset":
			b.end = d.Int("end_byte_offset")
		default:
			d.Skip()
		}
	}
	return b
}

// joinParent reads the history a fork's session_meta names, before the
// fork's own turns.
func (c *cxConv) joinParent(b cxBase) error {
	if b.thread == "" || b.end <= 0 {
		return nil
	}
	if c.file == "" || c.file == "-" {
		// Standard input, or recall's line-by-line reading (each file
		// indexes its own lines; the view's notes are not read there).
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("Codex fork of %s: read without a file beside it, the parent's history is not joined; only the fork's own turns are read", b.thread))
		return nil
	}
	if c.depth >= maxForkDepth {
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("Codex fork history deeper than %d forks: history before %s not read", maxForkDepth, b.thread))
		return nil
	}
	parent, looked := findRollout(c.file, b.thread)
	if parent == "" {
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("Codex fork of %s: its parent rollout (rollout-*-%s.jsonl[.zst]) is not in %s; only the fork's own turns are read (Codex sent the parent's history before them)",
			b.thread, b.thread, strings.Join(looked, " or ")))
		return nil
	}
	r, closer, err := openRollout(parent)
	if err != nil {
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("Codex fork of %s: %v; only the fork's own turns are read", b.thread, err))
		return nil
	}
	defer closer()
	saved, savedPrefix, savedFile := len(c.v.Malformed), c.prefix, c.file
	c.depth++
	c.prefix, c.file, c.based = fmt.Sprintf("F%d.", c.depth), parent, false
	lr := conv.NewLineReader(io.LimitReader(r, b.end))
	var read int64
	var lines int
	for {
		l, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s (the parent of this fork): read: %w", parent, err)
		}
		read += int64(len(l)) + 1
		lines++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := c.Line(lines, append([]byte(nil), l...)); err != nil {
			return fmt.Errorf("%s (the parent of this fork): %w", parent, err)
		}
	}
	if err := c.Flush(); err != nil {
		return err
	}
	c.depth--
	c.prefix, c.file, c.based = savedPrefix, savedFile, true
	c.lastRow = 0 // the fork's line numbers start again
	// The parent's bad lines are the parent's: a note, not this file's.
	for _, m := range c.v.Malformed[saved:] {
		c.v.Notes = append(c.v.Notes, fmt.Sprintf("%s line %d (fork history): %s", parent, m.Line, m.Err))
	}
	c.v.Malformed = c.v.Malformed[:saved]
	note := fmt.Sprintf("Codex fork of %s: the history before this file's turns is lines 1–%d of %s (entries from it cite that file's lines)", b.thread, lines, parent)
	if read < b.end {
		note = fmt.Sprintf("Codex fork of %s: %s holds %d bytes, the fork's history %d: the parent changed or is cut short; read lines 1–%d", b.thread, parent, read, b.end, lines)
	}
	c.v.Notes = append(c.v.Notes, note)
	return nil
}

// findRollout finds the rollout of thread id under the Codex home of file
// (the directory above its "sessions" or "archived_sessions" tree; file's
// own directory when it is in neither), returning the trees it looked in.
func findRollout(file, id string) (string, []string) {
	dir, _ := filepath.Abs(filepath.Dir(file))
	roots := []string{dir}
	for d := dir; ; {
		base, parent := filepath.Base(d), filepath.Dir(d)
		if base == "sessions" || base == "archived_sessions" {
			roots = []string{filepath.Join(parent, "sessions"), filepath.Join(parent, "archived_sessions")}
			break
		}
		if parent == d {
			break
		}
		d = parent
	}
	zst := ""
	for _, root := range roots {
		switch p := rollouts.find(root, id); {
		case strings.HasSuffix(p, ".jsonl"):
			return p, roots
		case p != "" && zst == "":
			zst = p
		}
	}
	return zst, roots
}

// rollouts are the rollout files of each Codex tree a fork's parent was
// looked for in, by thread id, kept for the process: indexing a sessions
// tree walked the whole tree once per fork file in it. A thread the map
// does not know walks its tree again (a long-lived process, the MCP server,
// sees new rollouts appear), so nothing is missed; one that the map names
// but that has since gone is found again by that walk too.
var rollouts = rolloutCache{trees: map[string]map[string]string{}}

// rolloutWalks counts the trees walked, for the tests.
var rolloutWalks atomic.Int64

type rolloutCache struct {
	sync.Mutex
	trees map[string]map[string]string // tree root → thread id → file
}

// find is the rollout of thread id under root: the plain .jsonl when
// both it and a .zst exist (Codex compresses in place), "" when none.
func (c *rolloutCache) find(root, id string) string {
	c.Lock()
	defer c.Unlock()
	if p, ok := c.trees[root][id]; ok {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	c.trees[root] = walkRollouts(root)
	return c.trees[root][id]
}

// walkRollouts maps every rollout under root by its thread id, the id
// at the end of its name ("rollout-<time>-<id>.jsonl"; a plain file is
// preferred to its .zst).
func walkRollouts(root string) map[string]string {
	rolloutWalks.Add(1)
	found := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		n := e.Name()
		stem, zst := strings.CutSuffix(n, ".jsonl.zst")
		if !zst {
			var ok bool
			if stem, ok = strings.CutSuffix(n, ".jsonl"); !ok {
				return nil
			}
		}
		rest, ok := strings.CutPrefix(stem, "rollout-")
		if !ok {
			return nil
		}
		// Every suffix after a dash may be the id ("rollout-" ends in
		// one): the time holds dashes too, and ids (UUIDs) hold four. Each
		// candidate is mapped; a lookup asks for a whole id only.
		for i := -1; i < len(rest); i++ {
			if i >= 0 && rest[i] != '-' {
				continue
			}
			id := rest[i+1:]
			if old, dup := found[id]; dup && !(strings.HasSuffix(old, ".zst") && !zst) {
				continue
			}
			found[id] = p
		}
		return nil
	})
	return found
}

// openRollout opens a rollout, decompressing a .zst one.
func openRollout(p string) (io.Reader, func(), error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	if !bytes.HasPrefix(head[:n], conv.ZstdMagic) {
		return f, func() { f.Close() }, nil
	}
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: zstd: %w", p, err)
	}
	return dec, func() { dec.Close(); f.Close() }, nil
}
