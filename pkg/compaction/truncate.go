package compaction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// commitRewrite is step 4 with --truncate: rewrite the file as header +
// the compaction (a root) + the kept tail of the active branch, keeping the
// original as <file>.bak.<stamp>, holding the session lock only for the
// rewrite. Kept lines are copied byte for byte except for the parentId of
// an entry whose parent was dropped. A session written to within o.Idle is
// refused (an agent is active). pi does not take the lock: what it appended
// since s was loaded — while ctxtool summarised, or even during the rename
// — is carried over by sessionwrite.Rewrite after the new content, in order.
func commitRewrite(ctx context.Context, s *transcript.Session, pl *planned, o Options, res *Result) error {
	if s.File == "-" {
		return fmt.Errorf("-: cannot rewrite standard input; give a session file path")
	}
	real, err := transcript.WritablePath(s.File)
	if err != nil {
		return err
	}
	if err := sessionwrite.CheckIdle(real, o.Idle); err != nil {
		return err
	}
	if err := s.Rewritable(); err != nil {
		return err
	}
	content, err := truncatedFile(s, pl)
	if err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	lock, err := filelock.Acquire(ctx, s.File, o.Wait)
	if err != nil {
		return err
	}
	defer lock.Release()
	rr, err := sessionwrite.Rewrite(s, content, sessionwrite.RewriteOptions{Idle: o.Idle, Settle: o.settle})
	if errors.Is(err, sessionwrite.ErrFileChanged) {
		return fmt.Errorf("%s: %w; nothing written — run compact again", s.File, ErrPlanMoved)
	}
	if err != nil {
		return err
	}
	res.Backup = rr.Backup
	res.CarriedLines = rr.CarriedLines
	// The next request is what `ctxtool estimate` says of the file as it
	// is now: the kept tail's usage records measured the context the
	// compaction replaced (stale), and the calibration the rewritten file
	// allows is its own, not the full session's.
	if after, err := transcript.Load(s.File); err == nil {
		m, _ := measureFor(after, after.Context(), o.size())
		res.NextRequestTokens = m.Tokens
		after.Close()
	}
	if len(rr.HeldBy) > 0 {
		pids := make([]string, len(rr.HeldBy))
		for i, pid := range rr.HeldBy {
			pids[i] = strconv.Itoa(pid)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("process(es) %s still had the old file open for writing when the rewrite stopped waiting: whatever they write to it now is only in %s", strings.Join(pids, ", "), rr.Backup))
	}
	return nil
}

// DefaultIdle is --idle: --truncate refuses a session written to less than
// this long ago.
const DefaultIdle = 5 * time.Second

// truncatedFile builds the rewritten session.
func truncatedFile(s *transcript.Session, pl *planned) ([]byte, error) {
	p := pl.prep
	var buf bytes.Buffer
	buf.Write(s.Header.Raw)
	buf.WriteByte('\n')

	// Kept tail: the active branch from the cut, without older compactions
	// (after the new root compaction they would take over again) and
	// without labels that point at dropped entries.
	keptIDs := map[string]bool{}
	var tail []*transcript.Entry
	leaf := s.Leaf()
	for _, e := range p.Path[p.Cut:] {
		if e.Type() == "compaction" && e != leaf {
			continue
		}
		tail = append(tail, e)
		keptIDs[e.ID()] = true
	}
	filtered := tail[:0]
	for _, e := range tail {
		// The leaf always stays: a writer that ignores the lock (pi) hangs
		// its next entry off it.
		if e.Type() == "label" && e.TargetID() != "" && !keptIDs[e.TargetID()] && e != leaf {
			continue
		}
		filtered = append(filtered, e)
	}
	tail = filtered

	first := p.FirstKept
	if s.Version < 2 {
		// v1 points by array index: header 0, compaction 1, first kept 2.
		kept := *p.FirstKept
		kept.Index = 2
		first = &kept
	}
	details := pl.details
	if details != nil && p.measured != nil && p.measured.Overhead > 0 {
		d := *details
		d.ContextOverheadTokens = p.measured.Overhead
		details = &d
	}
	a, err := sessionwrite.NewWriter(s).Compaction(sessionwrite.CompactionSpec{Summary: pl.out.Summary, FirstKept: first,
		TokensBefore: p.UsageBefore, Details: details})
	if err != nil {
		return nil, err
	}
	line := a.Line
	if s.Version >= 2 {
		if line, err = setTopLevel(line, "parentId", []byte("null")); err != nil {
			return nil, err
		}
	}
	buf.Write(line)
	buf.WriteByte('\n')

	parent := a.ID
	for _, e := range tail {
		raw, err := s.Raw(e)
		if err != nil {
			return nil, err
		}
		if s.Version >= 2 && e.ParentID() != parent {
			pj, _ := json.Marshal(parent)
			if raw, err = setTopLevel(raw, "parentId", pj); err != nil {
				return nil, fmt.Errorf("line %d: %w", e.Line, err)
			}
		}
		buf.Write(raw)
		buf.WriteByte('\n')
		if s.Version >= 2 {
			parent = e.ID()
		}
	}
	return buf.Bytes(), nil
}

// setTopLevel replaces the value of a top-level key in a JSON object line,
// leaving every other byte as it was.
func setTopLevel(line []byte, key string, value []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		start := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		end := dec.InputOffset()
		if k != key {
			continue
		}
		// start is just after the key's closing quote; skip ':' and spaces
		i := int(start)
		for i < int(end) && (line[i] == ':' || line[i] == ' ' || line[i] == '\t') {
			i++
		}
		out := append([]byte{}, line[:i]...)
		out = append(out, value...)
		return append(out, line[end:]...), nil
	}
	return nil, fmt.Errorf("no top-level %q field", key)
}
